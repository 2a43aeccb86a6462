/**
 * `npm run verify:assembly [-- <cdk.out dir>] [--stack <name>] [--json]`: runs the synthesized
 * assembly as deployed and checks its wiring (lib/verify/verify-assembly.ts), then the operator
 * tooling on its outputs alone (the CLI built first, as the operator runs it). Without a directory
 * it synthesizes first. One line per defect, then a summary; exit 1 on any defect.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { escapeForTerminal } from '../lib/operator/terminal';
import { verifyAssembly } from '../lib/verify/verify-assembly';

const { values, positionals } = parseArgs({
  options: { json: { type: 'boolean' }, stack: { type: 'string' } },
  allowPositionals: true,
});
let dir = positionals[0];
let synthesized: string | undefined;
const fail = (message: string) => {
  process.stderr.write(`error: ${message}\n`);
  process.exit(1);
};

if (!dir) {
  dir = synthesized = mkdtempSync(join(tmpdir(), 'verify-assembly-'));
  process.stderr.write(`Synthesizing into ${dir}…\n`);
  // `npm run synth` names the stage every synth needs (docs/deploy.md "Deploy").
  const synth = spawnSync('npm', ['run', '--silent', 'synth', '--', '--output', dir], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true' },
  });
  if (synth.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    fail('cdk synth failed');
  }
}

// The operator proof runs the built CLI (bin/branch-api.js → dist/): built from this checkout.
const build = spawnSync(process.execPath, [join(import.meta.dirname, 'build.mjs')], {
  stdio: ['ignore', 'ignore', 'inherit'],
});
if (build.status !== 0) fail('the CLI build failed');

const report = await verifyAssembly(dir, values.stack).finally(() => {
  if (synthesized) rmSync(synthesized, { recursive: true, force: true });
});
if (values.json) {
  const { observed: _observed, ...shown } = report;
  process.stdout.write(`${JSON.stringify(shown, null, 2)}\n`);
} else {
  const { operatorProof: proof } = report;
  const counted = (ops: Record<string, number>) => Object.entries(ops).map(([op, n]) => `${op} ×${n}`);
  const lines = [
    ...report.defects.map(
      ({ check, resource, reason }) => `DEFECT ${check ? `[${check}] ` : ''}${resource}: ${reason}`,
    ),
    '',
    `${report.stack}: ${report.checks} offline checks, ${report.functions} functions, ${report.invocations} invocations, ${report.alarms} alarms checked, ` +
      `${(report.elapsedMs / 1000).toFixed(1)} s`,
    'DynamoDB operations observed per function:',
    ...Object.entries(report.operations).map(([fn, ops]) => `  ${fn}: ${counted(ops).join(', ') || 'none'}`),
    proof
      ? `Operator proof: ${proof.commands} CLI commands and ${proof.pages} console pages on the stack outputs alone, ` +
        `${proof.requests} requests checked against the operator policy`
      : 'Operator proof: not run',
    report.defects.length === 0 ? 'No defects.' : `${report.defects.length} defect(s).`,
  ];
  process.stdout.write(`${lines.map(escapeForTerminal).join('\n')}\n`);
}
process.exitCode = report.defects.length === 0 ? 0 : 1;
