/**
 * Reserved concurrency, the deployer's choice (docs/deploy.md "Concurrency"): none by default, so
 * the stack fits any account; per function kind with `-c reservedConcurrency<Kind>=N`, within the
 * quota the deployer states (`-c lambdaConcurrencyQuota`, AWS's default 1,000) less the 100 AWS
 * keeps unreserved. Each function records what was asked in its template metadata, which the
 * stack's nag rule `function-reserved-concurrency` holds the template to.
 */
import type { CfnResource } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { markdownTable } from '../markdown';
import type { Json } from './nag/rule';

/** The function kinds a reservation is asked for, and what each is. */
export const CONCURRENCY_KINDS = {
  endpoint: 'each endpoint function (one per route)',
  fallback: 'the `$default` catch-all',
  aggregator: 'the rollups aggregator (one batch per usage stream shard at a time)',
  secretScanning: 'the secret scanning report',
  keyExpiry: 'the daily key expiry run',
  keyActions: 'the key actions finisher (one batch per keys stream shard at a time)',
} as const;
export type ConcurrencyKind = keyof typeof CONCURRENCY_KINDS;
export type ReservedConcurrency = Partial<Record<ConcurrencyKind, number>>;

/** AWS's default "Concurrent executions" quota of a region, and what it keeps unreserved whatever the quota. */
export const DEFAULT_CONCURRENCY_QUOTA = 1000;
export const UNRESERVED_CONCURRENCY = 100;
export const QUOTA_OPTION = 'lambdaConcurrencyQuota';

/** The `-c` option of a kind: `reservedConcurrencyKeyActions`. */
export const concurrencyOption = (kind: ConcurrencyKind): string =>
  `reservedConcurrency${kind[0]!.toUpperCase()}${kind.slice(1)}`;

/** What a function's template metadata (`BranchApi.reservedConcurrency`) says was asked for it. */
export interface ConcurrencyRequest {
  readonly option: string;
  /** Absent: none asked. */
  readonly asked?: number;
}

export const requestOf = (node: CfnResource): ConcurrencyRequest | undefined =>
  (node.getMetadata('BranchApi') as { reservedConcurrency?: ConcurrencyRequest } | undefined)?.reservedConcurrency;

/** Records on each function's resource what its kind asked. */
export const recordRequests = (
  functions: Readonly<Record<ConcurrencyKind, readonly IConstruct[]>>,
  reserved: ReservedConcurrency,
): void => {
  for (const [kind, list] of Object.entries(functions) as [ConcurrencyKind, IConstruct[]][]) {
    const asked = reserved[kind];
    const request: ConcurrencyRequest = { option: concurrencyOption(kind), ...(asked ? { asked } : {}) };
    for (const fn of list)
      (fn.node.defaultChild as CfnResource).addMetadata('BranchApi', { reservedConcurrency: request });
  }
};

/** Why the asked reservations can't be deployed (each a positive integer, all within the quota less 100), or []. */
export const concurrencyProblems = (
  reserved: ReservedConcurrency,
  quota: number,
  functionsOf: (kind: ConcurrencyKind) => number,
): string[] => {
  if (!Number.isInteger(quota) || quota < UNRESERVED_CONCURRENCY) {
    return [
      `lambdaConcurrencyQuota must be an integer of at least ${UNRESERVED_CONCURRENCY}, got ${JSON.stringify(quota)}`,
    ];
  }
  const problems = Object.entries(reserved)
    .filter(([, value]) => value !== undefined && !(Number.isInteger(value) && value > 0))
    .map(([kind, value]) => `reservedConcurrency.${kind} must be a positive integer, got ${JSON.stringify(value)}`);
  const total = Object.entries(reserved).reduce(
    (sum, [kind, value]) => sum + (Number(value) || 0) * functionsOf(kind as ConcurrencyKind),
    0,
  );
  if (problems.length === 0 && total > quota - UNRESERVED_CONCURRENCY) {
    problems.push(
      `reservedConcurrency adds up to ${total}, more than the ${quota - UNRESERVED_CONCURRENCY} a quota of ${quota} ` +
        `leaves (AWS keeps ${UNRESERVED_CONCURRENCY} unreserved); lower them or state the account's quota with -c ${QUOTA_OPTION}`,
    );
  }
  return problems;
};

/** The reservations of a synthesized template per kind, for docs/deploy.md "Concurrency" (`npm run docs:counts`). */
export const renderConcurrency = (template: Json, start: string, end: string): string => {
  const functions = Object.values<Json>(template.Resources ?? {}).filter(
    (resource) => resource.Type === 'AWS::Lambda::Function',
  );
  const reservedOf = (fn: Json) => Number(fn.Properties?.ReservedConcurrentExecutions ?? 0);
  const optionOf = (fn: Json): string | undefined => fn.Metadata?.BranchApi?.reservedConcurrency?.option;
  const rows = (Object.entries(CONCURRENCY_KINDS) as [ConcurrencyKind, string][]).map(([kind, what]) => {
    const ofKind = functions.filter((fn) => optionOf(fn) === concurrencyOption(kind));
    const reserved = ofKind.reduce((sum, fn) => sum + reservedOf(fn), 0);
    return [`\`${concurrencyOption(kind)}\``, what, String(ofKind.length), reserved ? String(reserved) : 'none'];
  });
  const total = functions.reduce((sum, fn) => sum + reservedOf(fn), 0);
  const figure = (n: number) => n.toLocaleString('en-US');
  return [
    start,
    '',
    ...markdownTable([['Option', 'Reserves for', 'Functions', 'Reserved by default'], ...rows]),
    '',
    `By default the stack reserves **${figure(total)}** concurrent executions in all, so it deploys into any account. ` +
      `AWS keeps ${figure(UNRESERVED_CONCURRENCY)} of a region's quota unreserved: with the default quota of ` +
      `${figure(DEFAULT_CONCURRENCY_QUOTA)}, at most **${figure(DEFAULT_CONCURRENCY_QUOTA - UNRESERVED_CONCURRENCY)}** can be reserved in all.`,
    '',
    end,
  ].join('\n');
};
