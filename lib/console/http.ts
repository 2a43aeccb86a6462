/**
 * The console's HTTP plumbing: a page reply, the refusal every bad request becomes (a 4xx page,
 * never a 500), form bodies with a bound, and the route table's matching (docs/console.md
 * "Routes").
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SECURITY_HEADERS } from './security';

/** What a route answers: a page (or an empty redirect) with its status. */
export interface Reply {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

/** A request the console refuses, with the page a person reads. */
export class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

export const notFound = (message = 'No such page.'): Refusal => new Refusal(404, 'Not found', message);

export const send = (
  response: ServerResponse,
  status: number,
  body: string | Buffer,
  headers: Record<string, string> = {},
): void => {
  response.writeHead(status, {
    ...SECURITY_HEADERS,
    'Cache-Control': 'no-store',
    'Content-Type': 'text/html; charset=utf-8',
    ...headers,
  });
  response.end(body);
};

export const MAX_FORM_BYTES = 16 * 1024;

export const readForm = async (request: IncomingMessage): Promise<URLSearchParams> => {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new Refusal(415, 'Unsupported form', 'Forms are sent as application/x-www-form-urlencoded.');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) throw new Refusal(413, 'Form too large', 'The form is larger than the console accepts.');
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
};

/**
 * Longest id (branch, key) or query value the console reads: real ids are far shorter, and a
 * longer one would reach DynamoDB's key size limit as a server error instead of a 4xx.
 */
export const MAX_ID_LENGTH = 200;
export const MAX_QUERY_VALUE_LENGTH = 2048;

// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f]/;

/** A path parameter checked: not too long, no control characters. */
export const checkId = (value: string, what: string): string => {
  if (value.length === 0 || value.length > MAX_ID_LENGTH || CONTROLS.test(value)) {
    throw new Refusal(400, 'Bad request', `That ${what} is not valid (ids are at most ${MAX_ID_LENGTH} characters).`);
  }
  return value;
};

/** A query parameter: empty is absent; too long is a 400. */
export const queryValue = (query: URLSearchParams, name: string): string | undefined => {
  const value = query.get(name)?.trim();
  if (!value) return undefined;
  if (value.length > MAX_QUERY_VALUE_LENGTH) throw new Refusal(400, 'Bad request', `The ${name} filter is too long.`);
  return value;
};

export type Params = Record<string, string>;

/** `/branches/:branch/keys` against the request's decoded segments: the parameters, or undefined. */
export const matchPath = (pattern: string, segments: readonly string[]): Params | undefined => {
  const parts = pattern.split('/').filter(Boolean);
  if (parts.length !== segments.length) return undefined;
  const params: Params = {};
  for (const [i, part] of parts.entries()) {
    if (part.startsWith(':')) params[part.slice(1)] = segments[i]!;
    else if (part !== segments[i]) return undefined;
  }
  return params;
};

/** The path's segments, percent-decoded; a malformed escape is a 400. */
export const pathSegments = (pathname: string): string[] => {
  try {
    return pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    throw new Refusal(400, 'Bad request', 'The address is not valid.');
  }
};
