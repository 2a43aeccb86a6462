export { authenticate } from './authenticate';
export { errorMapper } from './error-mapper';
export { ipAllowlist } from './ip-allowlist';
export { rateLimit } from './rate-limit';
export { recordUsage } from './record-usage';
export { requestContext } from './request-context';
export { requireScope } from './require-scope';
export { responseHeaders } from './response-headers';
export type { ApiContext, ApiMiddleware, ApiRequest, AuthenticatedContext } from './types';
