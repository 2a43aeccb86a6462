/**
 * Each function as Lambda will run it: its code asset and handler, runtime, architecture, memory
 * and reserved concurrency, and no configuration the code ignores.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  ENDPOINT_MEMORY_MB,
  FALLBACK_MEMORY_MB,
  FUNCTION_ARCHITECTURE,
  FUNCTION_RUNTIME,
} from '../../infra/api-function';
import { RESERVABLE_CONCURRENCY } from '../../infra/branch-api-stack';
import type { Json } from '../assembly';
import { asList, defect, resourcesOf, targetOf, type CheckContext, type TemplateCheck } from './table';

/** Variables no code reads: Powertools takes the namespace from `new Metrics`, not from this one. */
const IGNORED_VARIABLES: Record<string, string> = {
  POWERTOOLS_METRICS_NAMESPACE:
    'the code ignores it: shared/lambda/observability.ts passes METRICS_NAMESPACE (shared/domain/telemetry.ts) to Metrics',
};

const functionsOf = (context: CheckContext) => resourcesOf(context.assembly, 'AWS::Lambda::Function');

/** Functions behind the `$default` route: they only match a path, and get the smaller memory. */
const fallbackIds = ({ assembly }: CheckContext): Set<string> =>
  new Set(assembly.routes.filter((route) => route.routeKey === '$default').map((route) => route.functionLogicalId));

const codeAsset: TemplateCheck = {
  name: 'function-code',
  description: 'each function\u2019s code is an asset of the assembly holding the module its handler names',
  run: (context) =>
    functionsOf(context).flatMap(([id, props]) => {
      const fn = context.assembly.functions.find((candidate) => candidate.logicalId === id);
      const handler = String(props.Handler ?? '');
      const dot = handler.lastIndexOf('.');
      if (dot <= 0 || dot === handler.length - 1)
        return [defect(id, `handler ${JSON.stringify(props.Handler)} is not <module>.<export>`)];
      if (!fn?.codeDir || !existsSync(fn.codeDir)) return [defect(id, 'its code asset is not in the assembly')];
      const module = handler.slice(0, dot);
      const found = ['.mjs', '.js', '.cjs'].some((ext) => existsSync(join(fn.codeDir, module + ext)));
      return found ? [] : [defect(id, `handler ${handler}: no module ${module}.mjs/.js/.cjs in its code asset`)];
    }),
};

const runtime: TemplateCheck = {
  name: 'function-runtime',
  description: `runtime ${FUNCTION_RUNTIME.name} (the Node major the project runs and tests on)`,
  run: (context) =>
    functionsOf(context)
      .filter(([, props]) => props.Runtime !== FUNCTION_RUNTIME.name)
      .map(([id, props]) => defect(id, `runtime ${props.Runtime}, expected ${FUNCTION_RUNTIME.name}`)),
};

const architecture: TemplateCheck = {
  name: 'function-architecture',
  description: `architecture ${FUNCTION_ARCHITECTURE.name} (what the bundles and the bench were measured on)`,
  run: (context) =>
    functionsOf(context)
      .filter(
        ([, props]) =>
          JSON.stringify(asList(props.Architectures ?? 'x86_64')) !== JSON.stringify([FUNCTION_ARCHITECTURE.name]),
      )
      .map(([id, props]) =>
        defect(
          id,
          `architecture ${asList(props.Architectures ?? 'x86_64 (the default)').join(', ')}, expected ${FUNCTION_ARCHITECTURE.name}`,
        ),
      ),
};

const memory: TemplateCheck = {
  name: 'function-memory',
  description: `memory at least ${ENDPOINT_MEMORY_MB} MB (${FALLBACK_MEMORY_MB} MB for the catch-all): a cold start is CPU-bound`,
  run: (context) => {
    const fallbacks = fallbackIds(context);
    return functionsOf(context).flatMap(([id, props]) => {
      const floor = fallbacks.has(id) ? FALLBACK_MEMORY_MB : ENDPOINT_MEMORY_MB;
      const size = Number(props.MemorySize ?? 128);
      return size >= floor ? [] : [defect(id, `memory ${size} MB, below the ${floor} MB its cold start needs`)];
    });
  },
};

const reservedConcurrency: TemplateCheck = {
  name: 'function-reserved-concurrency',
  description: `every function has reserved concurrency (so none can starve another), ${RESERVABLE_CONCURRENCY} at most in all`,
  run: (context) => {
    const functions = functionsOf(context);
    const found = functions
      .filter(
        ([, props]) =>
          !(Number.isInteger(props.ReservedConcurrentExecutions) && props.ReservedConcurrentExecutions > 0),
      )
      .map(([id, props]) =>
        defect(
          id,
          `reserved concurrency ${JSON.stringify(props.ReservedConcurrentExecutions ?? 'none')}: it shares the account's pool with everything else`,
        ),
      );
    const total = functions.reduce((sum, [, props]) => sum + (Number(props.ReservedConcurrentExecutions) || 0), 0);
    if (total > RESERVABLE_CONCURRENCY) {
      found.push(
        defect(
          context.assembly.stack,
          `functions reserve ${total} concurrent executions, more than the ${RESERVABLE_CONCURRENCY} a default account can reserve`,
        ),
      );
    }
    return found;
  },
};

const ignoredConfiguration: TemplateCheck = {
  name: 'function-ignored-configuration',
  description: 'no environment variable the code ignores',
  run: (context) =>
    functionsOf(context).flatMap(([id, props]) =>
      Object.keys((props.Environment?.Variables ?? {}) as Json)
        .filter((name) => IGNORED_VARIABLES[name])
        .map((name) => defect(id, `sets ${name}, but ${IGNORED_VARIABLES[name]}`)),
    ),
};

const executionRole: TemplateCheck = {
  name: 'function-role',
  description: 'each function runs with a role of the stack',
  run: (context) =>
    functionsOf(context)
      .filter(([, props]) => context.assembly.resources[targetOf(props.Role) ?? '']?.Type !== 'AWS::IAM::Role')
      .map(([id]) => defect(id, 'its role is not a role of the stack')),
};

export const functionChecks: readonly TemplateCheck[] = [
  codeAsset,
  runtime,
  architecture,
  memory,
  reservedConcurrency,
  ignoredConfiguration,
  executionRole,
];
