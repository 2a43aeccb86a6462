/**
 * What the console refuses, as a 4xx page a person reads, never a 500: Hono's HTTPException
 * with the page's title, and the checks of ids and query values (docs/console.md "Security").
 */
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

/** A request the console refuses, with the page a person reads. */
export class Refusal extends HTTPException {
  constructor(
    status: ContentfulStatusCode,
    readonly title: string,
    message: string,
  ) {
    super(status, { message });
  }
}

export const notFound = (message = 'No such page.'): Refusal => new Refusal(404, 'Not found', message);

/**
 * Longest id (branch, key) or query value the console reads: real ids are far shorter, and a
 * longer one would reach DynamoDB's key size limit as a server error instead of a 4xx.
 */
export const MAX_ID_LENGTH = 200;
export const MAX_QUERY_VALUE_LENGTH = 2048;

// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f]/;

/** An id checked: not empty, not too long, no control characters. */
export const checkId = (value: string, what: string): string => {
  if (value.length === 0 || value.length > MAX_ID_LENGTH || CONTROLS.test(value)) {
    throw new Refusal(400, 'Bad request', `That ${what} is not valid (ids are at most ${MAX_ID_LENGTH} characters).`);
  }
  return value;
};

/**
 * Every segment of the request's path, decoded as the router decodes its parameters, checked
 * as an id: Hono hands a malformed escape (`%E0%A4%A`) to the route undecoded, so it is a 400 here.
 */
export const checkPath = (url: string): void => {
  for (const segment of new URL(url).pathname.split('/').filter(Boolean)) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw new Refusal(400, 'Bad request', 'The address is not valid.');
    }
    checkId(decoded, 'id');
  }
};

/** A query parameter: empty is absent; too long is a 400. */
export const queryValue = (c: Context, name: string): string | undefined => {
  const trimmed = c.req.query(name)?.trim();
  if (!trimmed) return undefined;
  if (trimmed.length > MAX_QUERY_VALUE_LENGTH) throw new Refusal(400, 'Bad request', `The ${name} filter is too long.`);
  return trimmed;
};

/** A query parameter that must be one the page offers (one of `offered`, or one it accepts): otherwise a 400. */
export const queryChoice = <T extends string>(
  c: Context,
  name: string,
  offered: readonly T[] | ((value: string) => boolean),
  refusal = (value: string) => `No ${name} "${value}".`,
): T | undefined => {
  const value = queryValue(c, name);
  const accepted = typeof offered === 'function' ? offered : (v: string) => (offered as readonly string[]).includes(v);
  if (value !== undefined && !accepted(value)) throw new Refusal(400, 'Bad request', refusal(value));
  return value as T | undefined;
};
