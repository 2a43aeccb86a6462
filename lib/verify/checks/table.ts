/**
 * The verifier's offline checks, held as a table of small named checks (as Middy's http-router
 * holds routes): each reads the template and compares one property with what the code and the
 * contract expect. A check that throws on a malformed or surprising template becomes a defect
 * naming the check, never a crash (docs/deploy.md "Verify the assembly").
 */
import { readFileSync } from 'node:fs';
import { OPENAPI_FILE } from '../../project-paths';
import type { Assembly, Json, Resolver } from '../assembly';
import type { Defect } from '../checks';

export interface CheckContext {
  readonly assembly: Assembly;
  readonly resolver: Resolver;
  /** The contract: docs/openapi.json. */
  readonly openapi: Json;
  /** The cloud assembly directory (where function code assets are staged). */
  readonly dir: string;
}

export interface TemplateCheck {
  /** Short kebab-case name printed with each of its defects. */
  readonly name: string;
  /** What it checks, for the docs (docs/deploy.md lists every check). */
  readonly description: string;
  run(context: CheckContext): Defect[];
}

export const readOpenApi = (file = OPENAPI_FILE): Json => JSON.parse(readFileSync(file, 'utf8')) as Json;

/** Runs every check; one that throws is reported as a defect of its own, naming it. */
export const runTemplateChecks = (checks: readonly TemplateCheck[], context: CheckContext): Defect[] =>
  checks.flatMap((check) => {
    try {
      return check.run(context).map((defect) => ({ ...defect, check: check.name }));
    } catch (error) {
      return [
        {
          resource: context.assembly.stack,
          check: check.name,
          reason: `the check could not read this template: ${error instanceof Error ? error.message : String(error)}`,
        },
      ];
    }
  });

export const asList = <T>(value: T | T[] | undefined | null): T[] =>
  value === undefined || value === null ? [] : Array.isArray(value) ? value : [value];

/** The logical id a `Ref` or `Fn::GetAtt` points at. */
export const targetOf = (value: unknown): string | undefined => {
  const node = value as Json | undefined;
  if (!node || typeof node !== 'object') return undefined;
  if (typeof node.Ref === 'string') return node.Ref;
  const getAtt = asList<string>(node['Fn::GetAtt']);
  return typeof getAtt[0] === 'string' ? getAtt[0] : undefined;
};

/** Resources of one type: [logical id, properties]. */
export const resourcesOf = (assembly: Assembly, type: string): [string, Json][] =>
  Object.entries(assembly.resources)
    .filter(([, resource]) => resource?.Type === type)
    .map(([id, resource]) => [id, (resource.Properties ?? {}) as Json]);

/** One defect on `resource`, for checks that find at most one thing wrong per resource. */
export const defect = (resource: string, reason: string): Defect => ({ resource, reason });
