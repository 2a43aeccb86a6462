/**
 * Raw HTTP against the local gateway with node:http: any method, any (already encoded) path,
 * any header value Node will put on the wire. fetch() would normalise `..` and reject methods.
 */
import { Agent, request } from 'node:http';
import { expectToMatchContract } from '../../support/contract';

export interface RawResponse {
  status: number;
  /** Lower-cased names, as Node gives them. */
  headers: Record<string, string>;
  body: string;
  json: any;
  /** X-Request-Id of the response. */
  requestId: string;
  startedAt: number;
  durationMs: number;
}

export interface RawRequest {
  method?: string;
  /** Path and query after the base URL's origin, sent as is, e.g. `/api/v1/members?limit=2`. */
  path: string;
  headers?: Record<string, string | string[]>;
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

export const rawRequest = (baseUrl: string, { method = 'GET', path, headers = {} }: RawRequest) =>
  new Promise<RawResponse>((resolve, reject) => {
    const url = new URL(baseUrl);
    const startedAt = performance.now();
    const req = request(
      { host: url.hostname, port: url.port, method, path, headers, agent, timeout: 15_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = body ? JSON.parse(body) : undefined;
          } catch {
            json = undefined;
          }
          const flat = Object.fromEntries(
            Object.entries(res.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : value]),
          ) as Record<string, string>;
          // Every response under the stage must match the OpenAPI document (HEAD has no body to check).
          const stagePrefix = '/api/';
          if (method !== 'HEAD' && path.startsWith(stagePrefix)) {
            try {
              expectToMatchContract({
                method,
                path: path.slice(stagePrefix.length - 1),
                statusCode: res.statusCode ?? 0,
                headers: flat,
                body,
              });
            } catch (error) {
              reject(error as Error);
              return;
            }
          }
          resolve({
            status: res.statusCode ?? 0,
            headers: flat,
            body,
            json,
            requestId: flat['x-request-id'] ?? '',
            startedAt,
            durationMs: performance.now() - startedAt,
          });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });

/** The path of a route under the gateway's base URL (stage prefix included). */
export const stagePath = (baseUrl: string, path: string): string => `${new URL(baseUrl).pathname}${path}`;
