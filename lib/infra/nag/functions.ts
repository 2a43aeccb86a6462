/**
 * Each function as Lambda will run it: runtime, architecture, memory, the reserved concurrency the
 * deployer asked for within the quota they stated, its own role and log group (with retention),
 * and no configuration the code ignores.
 */
import { CfnRole } from 'aws-cdk-lib/aws-iam';
import { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { CfnLogGroup } from 'aws-cdk-lib/aws-logs';
import { CfnRoute } from 'aws-cdk-lib/aws-apigatewayv2';
import { ENDPOINT_MEMORY_MB, FALLBACK_MEMORY_MB, FUNCTION_ARCHITECTURE, FUNCTION_RUNTIME } from '../api-function';
import { DEFAULT_CONCURRENCY_QUOTA, QUOTA_OPTION, requestOf, UNRESERVED_CONCURRENCY } from '../concurrency';
import { integrationOf } from './api';
import { asList, idOf, intentOf, read, resourceOf, resourcesOf, rule, targetOf } from './rule';

/** Variables no code reads: Powertools takes the namespace from `new Metrics`, not from this one. */
const IGNORED_VARIABLES: Record<string, string> = {
  POWERTOOLS_METRICS_NAMESPACE:
    'the code ignores it: shared/lambda/observability.ts passes METRICS_NAMESPACE (shared/domain/telemetry.ts) to Metrics',
};

const reservedOf = (fn: CfnFunction): number | undefined => read(fn, fn.reservedConcurrentExecutions);

/**
 * Reservations against what the deployer asked (each function's metadata, lib/infra/concurrency.ts)
 * and the quota they stated: the total is reported on the function that takes it past the quota.
 */
const concurrencyProblems = (fn: CfnFunction): string[] => {
  const reserved = reservedOf(fn);
  const request = requestOf(fn);
  const problems =
    reserved === request?.asked
      ? []
      : request
        ? [`reserves ${reserved ?? 'none'}, but -c ${request.option} asked ${request.asked ?? 'none'}`]
        : [`reserves ${reserved}, which no -c option asked for`];
  const quota = Number(intentOf(fn)[QUOTA_OPTION] ?? DEFAULT_CONCURRENCY_QUOTA);
  const limit = quota - UNRESERVED_CONCURRENCY;
  const ordered = resourcesOf(fn, CfnFunction).sort((a, b) => idOf(a).localeCompare(idOf(b)));
  const before = ordered.slice(0, ordered.indexOf(fn)).reduce((sum, other) => sum + (reservedOf(other) ?? 0), 0);
  const total = before + (reserved ?? 0);
  if (before <= limit && total > limit) {
    problems.push(
      `with it the functions reserve ${ordered.reduce((sum, other) => sum + (reservedOf(other) ?? 0), 0)}, more than the ${limit} ` +
        `a quota of ${quota} leaves (AWS keeps ${UNRESERVED_CONCURRENCY} unreserved; -c ${QUOTA_OPTION} states the quota)`,
    );
  }
  return problems;
};

export const functionRules = [
  rule(
    CfnFunction,
    'function-runtime',
    `runtime ${FUNCTION_RUNTIME.name} (the Node major the project runs and tests on)`,
    (fn) =>
      fn.runtime === FUNCTION_RUNTIME.name ? undefined : `runtime ${fn.runtime}, expected ${FUNCTION_RUNTIME.name}`,
  ),
  rule(
    CfnFunction,
    'function-architecture',
    `architecture ${FUNCTION_ARCHITECTURE.name} (what the bundles and the bench were measured on)`,
    (fn) => {
      const found = asList<string>(read(fn, fn.architectures));
      return found.join() === FUNCTION_ARCHITECTURE.name
        ? undefined
        : `architecture ${found.join(', ') || 'x86_64 (the default)'}, expected ${FUNCTION_ARCHITECTURE.name}`;
    },
  ),
  rule(
    CfnFunction,
    'function-memory',
    `memory at least ${ENDPOINT_MEMORY_MB} MB (${FALLBACK_MEMORY_MB} MB for the catch-all): a cold start is CPU-bound`,
    (fn) => {
      const fallback = resourcesOf(fn, CfnRoute).some(
        (route) => route.routeKey === '$default' && integrationOf(route).fn === fn,
      );
      const floor = fallback ? FALLBACK_MEMORY_MB : ENDPOINT_MEMORY_MB;
      const size = read(fn, fn.memorySize) ?? 128;
      return size >= floor ? undefined : `memory ${size} MB, below the ${floor} MB its cold start needs`;
    },
  ),
  rule(
    CfnFunction,
    'function-reserved-concurrency',
    'reserved concurrency as the deployer asked (`-c reservedConcurrency<Kind>`, none by default), all of it within the ' +
      `quota they stated (\`-c ${QUOTA_OPTION}\`, default ${DEFAULT_CONCURRENCY_QUOTA}) less the ${UNRESERVED_CONCURRENCY} AWS keeps unreserved`,
    concurrencyProblems,
  ),
  rule(CfnFunction, 'function-ignored-configuration', 'no environment variable the code ignores', (fn) =>
    Object.keys(read(fn, fn.environment)?.variables ?? {})
      .filter((name) => IGNORED_VARIABLES[name])
      .map((name) => `sets ${name}, but ${IGNORED_VARIABLES[name]}`),
  ),
  rule(CfnFunction, 'function-role', 'each function runs with a role of the stack', (fn) =>
    resourceOf(fn, targetOf(fn, fn.role), CfnRole) ? undefined : 'its role is not a role of the stack',
  ),
  rule(
    CfnFunction,
    'function-log-group',
    'each function logs to a log group of the stack (else Lambda creates one kept forever)',
    (fn) =>
      resourceOf(fn, targetOf(fn, read(fn, fn.loggingConfig)?.logGroup), CfnLogGroup)
        ? undefined
        : 'it logs to no log group of the stack: Lambda would create one that keeps its logs forever',
  ),
  rule(CfnLogGroup, 'log-retention', 'every log group expires its logs (RetentionInDays)', (group) =>
    read(group, group.retentionInDays) > 0 ? undefined : 'no retention: its logs would be kept (and billed) forever',
  ),
];
