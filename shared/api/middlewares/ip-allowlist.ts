import { isAllowedIp } from '../../domain/cidr';
import { ipNotAllowed } from '../errors';
import type { ApiMiddleware, ApiRequest } from './types';

export interface IpAllowlistOptions {
  /** The caller's address; API Gateway's own, never a header the caller writes (X-Forwarded-For). */
  sourceIp?: (request: ApiRequest) => string | undefined;
}

const defaults: Required<IpAllowlistOptions> = {
  sourceIp: ({ event }) => event.requestContext?.http?.sourceIp,
};

/**
 * 403 `ip_not_allowed` when the authenticated key has an IP allowlist and the caller's address is
 * not on it. Runs after authenticate (so revoked and expired come first) and before the scope
 * check (docs/decisions.md "Key lifecycle"). The list is on the key record: no database call.
 */
export const ipAllowlist = (opts: IpAllowlistOptions = {}): ApiMiddleware => {
  const { sourceIp } = { ...defaults, ...opts };

  const ipAllowlistBefore = (request: ApiRequest): void => {
    const allowlist = request.context.apiKey?.allowed_ips;
    if (!allowlist || allowlist.length === 0) return;
    const address = sourceIp(request);
    if (address === undefined || !isAllowedIp(address, allowlist)) throw ipNotAllowed();
  };

  return { before: ipAllowlistBefore, name: 'ipAllowlist' };
};
