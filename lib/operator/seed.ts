/** `seed`: loads branches, members and payment providers from a JSON file (the data the API serves). */
import { readFile } from 'node:fs/promises';
import type { z } from 'zod';
import { SeedFileSchema, type SeedFile } from '../../shared/domain/schemas';
import type { OperatorContext } from './context';
import { OperatorError } from './errors';

const describeIssues = (issues: z.core.$ZodIssue[]): string =>
  issues.map((issue) => `${issue.path.length ? issue.path.join('.') : '(file)'}: ${issue.message}`).join('; ');

/** Reads and validates a whole seed file; nothing is written unless every entry is valid. */
export const readSeedFile = async (file: string): Promise<SeedFile> => {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new OperatorError(`Cannot read seed file ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new OperatorError(`Seed file ${file} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = SeedFileSchema.safeParse(json);
  if (!parsed.success) throw new OperatorError(`Seed file ${file} is invalid: ${describeIssues(parsed.error.issues)}`);
  const duplicates: string[] = [];
  const seen = new Set<string>();
  const once = (id: string) => (seen.has(id) ? duplicates.push(id) : seen.add(id));
  for (const branch of parsed.data.branches) {
    once(`branch ${branch.id}`);
    branch.members.forEach((m) => once(`member ${branch.id}/${m.id}`));
    branch.payment_providers.forEach((p) => once(`payment provider ${branch.id}/${p.id}`));
  }
  if (duplicates.length > 0) throw new OperatorError(`Seed file ${file} repeats ids: ${duplicates.join(', ')}`);
  return parsed.data;
};

/** Loads a seed file (idempotent: re-running the same file leaves the same data). */
export const seed = async (ctx: OperatorContext, file: string, onProgress?: (done: number, total: number) => void) => {
  const data = await readSeedFile(file);
  for (const [index, branch] of data.branches.entries()) {
    await ctx.branchData.putBranch(branch);
    onProgress?.(index + 1, data.branches.length);
  }
  return {
    branch_ids: data.branches.map((branch) => branch.id),
    branches: data.branches.length,
    members: data.branches.reduce((n, b) => n + b.members.length, 0),
    payment_providers: data.branches.reduce((n, b) => n + b.payment_providers.length, 0),
  };
};
