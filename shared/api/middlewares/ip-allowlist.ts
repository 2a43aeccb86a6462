import { isAllowedIp } from '../../domain/cidr';
import { ipNotAllowed } from '../errors';
import type { ApiMiddleware, ApiRequest } from './types';

/**
 * 403 `ip_not_allowed` when the authenticated key has an IP allowlist and the caller's address is
 * not on it. Runs after authenticate (so revoked and expired come first) and before the scope
 * check (docs/decisions.md "Key lifecycle"). The list is on the key record: no database call.
 */
export const ipAllowlist = (): ApiMiddleware => {
  const ipAllowlistBefore = ({ event, context }: ApiRequest): void => {
    const allowlist = context.apiKey?.allowed_ips;
    if (!allowlist || allowlist.length === 0) return;
    // API Gateway's own view of the caller, never a header the caller writes (X-Forwarded-For).
    const address = event.requestContext?.http?.sourceIp;
    if (address === undefined || !isAllowedIp(address, allowlist)) throw ipNotAllowed();
  };

  return { before: ipAllowlistBefore, name: 'ipAllowlist' };
};
