/**
 * `npm run cost [-- <cdk.out dir> [--stack <name>]]`: the monthly cost at 1 M, 10 M and 100 M calls
 * (lib/infra/cost.ts), from a synthesized template, or from the stack synthesized in memory.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { synthesizedTemplate } from '../lib/infra/counts';
import { costInputs, renderCost } from '../lib/infra/cost';

const args = process.argv.slice(2);
const stackAt = args.indexOf('--stack');
const stack = stackAt === -1 ? undefined : args[stackAt + 1];
const dir = args.find((arg, i) => !arg.startsWith('--') && args[i - 1] !== '--stack');

const readTemplate = (assembly: string) => {
  const file =
    stack !== undefined
      ? `${stack}.template.json`
      : readdirSync(assembly).find((name) => name.endsWith('.template.json'));
  if (!file) throw new Error(`no template in ${assembly}`);
  return JSON.parse(readFileSync(join(assembly, file), 'utf8')) as Record<string, unknown>;
};

const template = dir ? readTemplate(dir) : synthesizedTemplate().toJSON();
process.stdout.write(`${renderCost(costInputs(template), '', '').trim()}\n`);
