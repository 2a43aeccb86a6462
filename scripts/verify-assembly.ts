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
import { escapeForTerminal } from '../lib/operator/terminal';
import { verifyAssembly } from '../lib/verify/verify-assembly';

const args = process.argv.slice(2);
const json = args.includes('--json');
const stackAt = args.indexOf('--stack');
const stack = stackAt === -1 ? undefined : args[stackAt + 1];
const positional = args.filter((arg, i) => !arg.startsWith('--') && args[i - 1] !== '--stack');
let dir = positional[0];
let synthesized: string | undefined;

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
    process.stderr.write('error: cdk synth failed\n');
    process.exit(1);
  }
}

// The operator proof runs the built CLI (bin/branch-api.js → dist/): built from this checkout.
if (
  spawnSync(process.execPath, [join(import.meta.dirname, 'build.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] })
    .status !== 0
) {
  process.stderr.write('error: the CLI build failed\n');
  process.exit(1);
}

const report = await verifyAssembly(dir, stack).finally(() => {
  if (synthesized) rmSync(synthesized, { recursive: true, force: true });
});
if (json) {
  const { observed: _observed, ...shown } = report;
  process.stdout.write(`${JSON.stringify(shown, null, 2)}\n`);
} else {
  for (const defect of report.defects)
    process.stdout.write(
      `DEFECT ${defect.check ? `[${escapeForTerminal(defect.check)}] ` : ''}${escapeForTerminal(defect.resource)}: ${escapeForTerminal(defect.reason)}\n`,
    );
  const lines = [
    '',
    `${report.stack}: ${report.checks} offline checks, ${report.functions} functions, ${report.invocations} invocations, ${report.alarms} alarms checked, ` +
      `${(report.elapsedMs / 1000).toFixed(1)} s`,
    'DynamoDB operations observed per function:',
    ...Object.entries(report.operations).map(
      ([fn, ops]) =>
        `  ${fn}: ${
          Object.entries(ops)
            .map(([op, n]) => `${op} ×${n}`)
            .join(', ') || 'none'
        }`,
    ),
    report.operatorProof
      ? `Operator proof: ${report.operatorProof.commands} CLI commands and ${report.operatorProof.pages} console pages on the stack outputs alone, ` +
        `${report.operatorProof.requests} requests checked against the operator policy`
      : 'Operator proof: not run',
    report.defects.length === 0 ? 'No defects.' : `${report.defects.length} defect(s).`,
  ];
  process.stdout.write(`${lines.map(escapeForTerminal).join('\n')}\n`);
}
process.exitCode = report.defects.length === 0 ? 0 : 1;
