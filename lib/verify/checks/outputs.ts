/**
 * The stack outputs the operator tooling reads (lib/operator/target.ts `OPERATOR_OUTPUTS`): each
 * one present, and each table output naming the table of its definition. A missing one is what
 * made `keys disable` fail on a deployed stack while `keys create` worked.
 */
import { tableDefinitions } from '../../../shared/data/tables';
import { OPERATOR_OUTPUTS } from '../../operator/target';
import { defect, resourcesOf, targetOf, type TemplateCheck } from './table';

const operatorOutputs: TemplateCheck = {
  name: 'operator-outputs',
  description:
    'every output the operator tooling reads (each table it names and the key events bus) is a stack output, each table output naming its table',
  run: ({ assembly }) =>
    OPERATOR_OUTPUTS.flatMap(({ output, envVar }) => {
      const found = assembly.outputs[output];
      if (!found) {
        return [
          defect(
            assembly.stack,
            `no stack output ${output}: the operator tooling (--stack) finds no value for ${envVar}`,
          ),
        ];
      }
      const definition = tableDefinitions.find((candidate) => candidate.envVar === envVar);
      if (!definition) return [];
      const target = targetOf(found.Value);
      const tables = resourcesOf(assembly, 'AWS::DynamoDB::Table').map(([id]) => id);
      return target && tables.includes(target) && new RegExp(`^Tables${definition.id}[0-9A-F]{8}$`).test(target)
        ? []
        : [
            defect(
              assembly.stack,
              `stack output ${output} does not name the ${definition.name} table (${String(target)})`,
            ),
          ];
    }),
};

export const outputChecks: readonly TemplateCheck[] = [operatorOutputs];
