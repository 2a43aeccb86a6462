/**
 * The chain's error path: the mapper turns whatever was thrown into a catalogue error and
 * `@middy/http-error-handler` writes it. Exposed 4xx from any other Middy middleware keep a
 * documented code; the package's own logger stays silent (a 401 prints nothing); 5xx are logged
 * through Powertools only.
 */
import { createError } from '@middy/util';
import { DataStoreError } from '../shared/data/data-store-errors';
import { invalidApiKey } from '../shared/api/errors';
import { createMiddlewareChain } from '../shared/api/middleware-chain';
import type { ApiMiddleware } from '../shared/api/middlewares';
import { logger, telemetry } from '../shared/lambda/observability';
import { captureLogs, expectError, invoke } from './support/harness';

/** A chain whose only guard throws `error`, as a third-party Middy middleware would. */
const throwing = (error: unknown) => {
  const middleware: ApiMiddleware = {
    before: () => {
      throw error;
    },
  };
  return createMiddlewareChain(async () => ({ statusCode: 200, headers: {}, body: '{}' }), {
    ...telemetry,
    guards: [middleware],
  });
};

describe('errors thrown by other Middy middlewares', () => {
  it.each([
    [415, 'Unsupported Media Type', 400, 'invalid_request'],
    [422, 'Unprocessable Entity', 400, 'invalid_request'],
    [413, 'Payload Too Large', 400, 'invalid_request'],
    [404, 'Not Found', 404, 'not_found'],
  ])('an exposed %s becomes %s %s, with its message', async (thrown, message, status, code) => {
    // A list path: the operations that document 400 (a 400 on /v1/branch would break the contract).
    const res = await invoke(throwing(createError(thrown, message)), {
      path: status === 400 ? '/v1/members' : '/v1/branch',
    });
    expectError(res, status, code);
    expect(res.json.error.message).toBe(message);
  });

  it('an HTTP error that is not exposed, and a plain Error, are a 500 internal_error with the generic message', async () => {
    for (const error of [createError(502, 'upstream said no', { expose: false }), new Error('SDK says table x')]) {
      const res = await invoke(throwing(error), { path: '/v1/branch' });
      expectError(res, 500, 'internal_error');
      expect(res.body).not.toMatch(/upstream|SDK|table x/);
    }
  });

  it('an exposed 5xx of another middleware is still the generic 500 (no message of theirs reaches the caller)', async () => {
    const res = await invoke(throwing(createError(500, 'secret detail', { expose: true })), { path: '/v1/branch' });
    expectError(res, 500, 'internal_error');
    expect(res.body).not.toContain('secret detail');
  });
});

describe('logging of errors', () => {
  it('a 401 writes nothing to stdout or stderr (the package logger is off)', async () => {
    const logs = captureLogs(logger, 'DEBUG');
    const res = await invoke(throwing(invalidApiKey()), { path: '/v1/branch' }).finally(logs.restore);
    expectError(res, 401, 'invalid_api_key');
    expect(logs.entries.filter((entry) => entry.level !== 'DEBUG')).toEqual([]);
    expect(logs.text).not.toMatch(/invalid_api_key|InvalidApiKey|ApiError/);
  });

  it('a 500 is logged once, through Powertools, with the request id and route appended by the chain', async () => {
    const logs = captureLogs(logger, 'INFO');
    const res = await invoke(throwing(new DataStoreError('DynamoDB GetItem failed: ValidationException')), {
      path: '/v1/branch',
      routeKey: 'GET /v1/branch',
    }).finally(logs.restore);
    expectError(res, 500, 'internal_error');
    expect(logs.entries).toEqual([
      expect.objectContaining({
        level: 'ERROR',
        message: 'Request failed',
        request_id: res.requestId,
        route: 'GET /v1/branch',
        error: expect.objectContaining({ name: 'DataStoreError' }),
      }),
    ]);
  });
});
