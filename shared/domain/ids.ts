/**
 * Ids of branches, members and providers: what may appear in a URL path segment. Kept apart from
 * schemas.ts so request-path code can check an id without bundling zod into every function.
 */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
