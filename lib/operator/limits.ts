/**
 * The operator actions' bounds and defaults, apart from the actions (./keys.ts, ./usage.ts) so that
 * the CLI can show them in its help without loading the data layer.
 */
export const DURATION_UNITS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** How long a rolled key keeps working unless the roll says otherwise. */
export const DEFAULT_GRACE_MS = 24 * DURATION_UNITS.h;
/** `keys roll` without `--grace`, as written: `24h`. */
export const DEFAULT_GRACE = `${DEFAULT_GRACE_MS / DURATION_UNITS.h}h`;
/** Longest grace period a roll accepts. */
export const MAX_GRACE_MS = 365 * DURATION_UNITS.d;
/** Longest key name accepted. */
export const MAX_NAME_LENGTH = 200;
/** Most entries one activity read returns. */
export const MAX_ACTIVITY_LIMIT = 1000;
/** Most usage records one read returns. */
export const MAX_USAGE_LIMIT = 10_000;
