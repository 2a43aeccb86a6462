/**
 * The template's checks, before anything runs: the stack's own nag pack (lib/infra/nag/pack.ts)
 * on the synthesized template loaded through CfnInclude, with the findings the stack acknowledged
 * (written into the template with their reasons), and what only the assembly can show: each
 * function's code asset, and the outputs the operator tooling reads. A template the pack can't
 * load is one defect line, never a crash (docs/deploy.md "Verify the assembly").
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, CfnResource, Stack, Validations, type Acknowledgment } from 'aws-cdk-lib';
import { CfnInclude } from 'aws-cdk-lib/cloudformation-include';
import { tableDefinitions } from '../../shared/data/tables';
import { BranchApiChecks, findingsOf, STACK_RULES } from '../infra/nag/pack';
import type { StackRule } from '../infra/nag/rule';
import { OPERATOR_OUTPUTS } from '../operator/target';
import type { Assembly } from './assembly';
import type { Defect } from './observed';

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The stack's nag pack on the template as synthesized, acknowledgments included. */
export const nagTemplate = (assembly: Assembly, rules: readonly StackRule[] = STACK_RULES): Defect[] => {
  const dir = mkdtempSync(join(tmpdir(), 'verify-template-'));
  try {
    const templateFile = join(dir, 'template.json');
    writeFileSync(templateFile, JSON.stringify(assembly.template));
    const stack = new Stack(new App(), assembly.stack);
    stack.templateOptions.metadata = assembly.template?.Metadata;
    const included = new CfnInclude(stack, 'Template', { templateFile });
    for (const resource of included.node.children.filter(CfnResource.isCfnResource)) {
      const acknowledged = resource.getMetadata('cdk_nag')?.rules_to_suppress as Acknowledgment[] | undefined;
      if (acknowledged?.length) Validations.of(resource).acknowledge(...acknowledged);
    }
    return findingsOf(new BranchApiChecks(undefined, undefined, rules).validateScope(stack)).flatMap(
      ({ rule, reason, paths }) => paths.map((path) => ({ check: rule, resource: path.split('/').at(-1)!, reason })),
    );
  } catch (error) {
    return [
      {
        check: 'template',
        resource: assembly.stack,
        reason: `the stack's nag pack could not load this template: ${message(error)}`,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

interface AssemblyCheck {
  readonly name: string;
  readonly explanation: string;
  run(assembly: Assembly): Defect[];
}

/** What the nag pack can't see from a template: the assembly's code assets, and the stack's outputs. */
const ASSEMBLY_CHECKS: readonly AssemblyCheck[] = [
  {
    name: 'function-code',
    explanation: 'each function\u2019s code is an asset of the assembly holding the module its handler names',
    run: ({ functions }) =>
      functions.flatMap(({ logicalId, handler, codeDir }) => {
        const module = handler.slice(0, handler.lastIndexOf('.'));
        const reason = !/^[^.].*\.[^.]+$/.test(handler)
          ? `handler ${JSON.stringify(handler)} is not <module>.<export>`
          : !codeDir || !existsSync(codeDir)
            ? 'its code asset is not in the assembly'
            : ['.mjs', '.js', '.cjs'].some((ext) => existsSync(join(codeDir, module + ext)))
              ? undefined
              : `handler ${handler}: no module ${module}.mjs/.js/.cjs in its code asset`;
        return reason ? [{ resource: logicalId, reason }] : [];
      }),
  },
  {
    name: 'operator-outputs',
    explanation:
      'every output the operator tooling reads (each table it names and the key events bus) is a stack output, each table output naming its table',
    run: ({ stack, outputs, tables }) =>
      OPERATOR_OUTPUTS.flatMap(({ output, envVar }) => {
        const value = outputs[output];
        const definition = tableDefinitions.find((candidate) => candidate.envVar === envVar);
        const table = tables.find((candidate) => candidate.name === value);
        const reason =
          value === undefined
            ? `no stack output ${output}: the operator tooling (--stack) finds no value for ${envVar}`
            : definition && !new RegExp(`^Tables${definition.id}[0-9A-F]{8}$`).test(table?.logicalId ?? '')
              ? `stack output ${output} does not name the ${definition.name} table (${value})`
              : undefined;
        return reason ? [{ resource: stack, reason }] : [];
      }),
  },
];

/** The template's checks alone, with no function run: what `verifyAssembly` reports first. */
export const checkTemplate = (assembly: Assembly): Defect[] => [
  ...nagTemplate(assembly),
  ...ASSEMBLY_CHECKS.flatMap((check) => {
    try {
      return check.run(assembly).map((defect) => ({ ...defect, check: check.name }));
    } catch (error) {
      return [
        {
          check: check.name,
          resource: assembly.stack,
          reason: `the check could not read this template: ${message(error)}`,
        },
      ];
    }
  }),
];

/** Every check as a Markdown list for docs/deploy.md (`npm run docs:counts` writes it). */
export const renderChecks = (start: string, end: string): string =>
  [
    start,
    '',
    ...[...STACK_RULES, ...ASSEMBLY_CHECKS].map((check) => `- \`${check.name}\`: ${check.explanation}.`),
    '',
    end,
  ].join('\n');

/** How many checks run before the functions do. */
export const TEMPLATE_CHECK_COUNT = STACK_RULES.length + ASSEMBLY_CHECKS.length;
