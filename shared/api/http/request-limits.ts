/**
 * API Gateway's bound on a request's request line and headers together (an HTTP API quota that
 * can't be raised): past it the gateway answers before any function runs. The local gateway keeps
 * the same bound and answers 431 `headers_too_large` (docs/decisions.md "Errors").
 */
export const MAX_REQUEST_HEADER_BYTES = 10_240;
