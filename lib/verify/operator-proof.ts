/**
 * The offline proof of the operator tooling (docs/deploy.md "Operator permissions"): every operator
 * command of the built CLI and the console's key and usage pages, given only what a deployed stack
 * gives an operator. The outputs, as DescribeStacks answers them, go in a `--outputs` file, with no
 * table or bus variable in the environment; the operator policy (lib/operator/grants.ts) is enforced
 * in front of the embedded DynamoDB and the event bus stand-in, which refuse what it does not allow
 * as AWS does, and so is each command's own list of grants. Whatever a command was refused, or
 * failed with, is a `DEFECT [operator-proof]` line.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pLimit from 'p-limit';
import { TABLE_ENV } from '../../shared/data/tables';
import { OPERATOR_OUTPUTS } from '../operator/target';
import {
  OPERATOR_GRANTS,
  operatorPolicy,
  policyFor,
  type OperatorCommand,
  type PolicyDocument,
} from '../operator/grants';
import { CLI_FILE, PROJECT_ROOT } from '../project-paths';
import { LOCAL_ACCOUNT, LOCAL_REGION, type Assembly } from './assembly';
import { evaluate, NOT_ALLOWED, type Statement } from '../infra/nag/iam';
import type { Defect } from './observed';
import { startCallerIdentityStandIn, startEventBusStandIn } from './event-bus';
import { startRecordingProxy } from './recording-proxy';
import { EMBEDDED_DYNAMODB_DEADLINE_MS } from './function-host';

export interface OperatorProofInput {
  assembly: Assembly;
  /** The embedded DynamoDB holding the stack's tables. */
  dynamoEndpoint: string;
  /** A branch of the tables' data. */
  branchId: string;
  /** What the operator is handed: by default every output of the stack. */
  outputs?: Record<string, string>;
  /** The operator's policy: by default the one lib/operator/grants.ts generates. */
  policy?: PolicyDocument;
}

export interface OperatorProofReport {
  defects: Defect[];
  /** CLI commands run and console pages fetched. */
  commands: number;
  pages: number;
  /** DynamoDB and EventBridge requests checked against the policy. */
  requests: number;
  /** What each command asked (`dynamodb:Query on KeysTableName index by-branch`, `events:PutEvents on …`). */
  operations: Partial<Record<OperatorCommand, string[]>>;
}

/** Commands run at once: the machine's cores are the verifier's too. */
const CONCURRENCY = 2;
/** A command still running after two minutes is killed (and fails the proof). */
const CLI_OPTIONS = { cwd: PROJECT_ROOT, timeout: 120_000, killSignal: 'SIGKILL' } as const;

/** The variables a deployed operator does not have: every output's, every table's, the local target's, AWS's own. */
const isTargetVariable = (name: string) =>
  name.startsWith('AWS_') ||
  ['DYNAMODB_ENDPOINT', 'KEY_EVENTS_FILE', ...Object.values(TABLE_ENV)].includes(name) ||
  OPERATOR_OUTPUTS.some(({ envVar }) => envVar === name);

/**
 * Why a command failed, as it said it: its error (a line, or JSON with --json), an error-level log
 * line, or a warning (a key action whose activity entry stays pending lacks a grant too).
 */
const failureOf = (code: number | null, stderr: string, stdout = ''): string | undefined => {
  const said = stderr.split('\n').flatMap((line): { error?: string; logged?: string }[] => {
    if (line.startsWith('error: ')) return [{ error: line.slice('error: '.length) }];
    if (line.startsWith('warning: ')) return [{ logged: line.slice('warning: '.length) }];
    try {
      const entry = JSON.parse(line) as { level?: string; message?: string; error?: { message?: string } | string };
      if (typeof entry.error === 'object') return [{ error: String(entry.error.message) }];
      return entry.level === 'ERROR' ? [{ logged: `${entry.message}${entry.error ? ` (${entry.error})` : ''}` }] : [];
    } catch {
      return [];
    }
  });
  const logged = said.find((line) => line.logged)?.logged;
  if (code === 0) return logged;
  const last = (text: string) => text.trim().split('\n').at(-1);
  return (
    said.find((line) => line.error)?.error ??
    logged ??
    `exited ${code ?? 'on a signal'}: ${last(stderr) || last(stdout)}`
  );
};

/** A log line of a call whose usage record was not stored, as the functions log it. */
const replayLine = (keyId: string, branchId: string, at: Date) => ({
  level: 'ERROR',
  message: 'Usage record not stored',
  usage_record: {
    key_id: keyId,
    branch_id: branchId,
    method: 'GET',
    path: '/v1/branch',
    route: 'GET /v1/branch',
    status: 200,
    response_time_ms: 12,
    timestamp: at.toISOString(),
    request_id: `operator-proof-${at.getTime()}`,
  },
});

type Work = (env: NodeJS.ProcessEnv, use: (label: OperatorCommand) => void) => Promise<string | undefined>;

/** The console pages the proof opens, each under the branch's path. */
const CONSOLE_PAGES = { 'console keys page': 'keys', 'console usage page': 'usage' } as const;

/** One proof: the policy and grants it enforces, the commands it ran, what each was refused. */
class OperatorProof {
  private readonly values: Record<string, string>;
  private readonly policy: Statement[];
  private readonly grants: Partial<Record<OperatorCommand, Statement[]>> = {};
  private readonly refusals = new Map<string, Set<OperatorCommand>>();
  private readonly limit = pLimit(CONCURRENCY);
  readonly operations: OperatorProofReport['operations'] = {};
  requests = 0;
  commands = 0;

  constructor(
    private readonly input: OperatorProofInput,
    private readonly target: readonly string[],
    private readonly baseEnv: NodeJS.ProcessEnv,
  ) {
    this.values = { Region: LOCAL_REGION, Account: LOCAL_ACCOUNT, ...input.assembly.outputs };
    this.policy = policyFor(input.policy ?? operatorPolicy(), this.values);
  }

  private grantsOf(label: OperatorCommand): Statement[] {
    return (this.grants[label] ??= policyFor(operatorPolicy({ [label]: OPERATOR_GRANTS[label] }), this.values));
  }

  /** A resource's ARN, told by the output that names it: `KeysTableName index by-branch`. */
  private named(arn: string): string {
    const [, name = arn, index] = /[:/](?:table|event-bus)\/([^/]+)(?:\/index\/(.+))?$/.exec(arn) ?? [];
    const output = OPERATOR_OUTPUTS.find(({ output }) => this.input.assembly.outputs[output] === name)?.output ?? name;
    return `${output}${index ? ` index ${index}` : ''}`;
  }

  private refuse(label: OperatorCommand, reason: string): void {
    this.refusals.set(reason, (this.refusals.get(reason) ?? new Set()).add(label));
  }

  /** Whether `label` may ask `action` on `arn`: the policy allows it, and the command's own grants list it. */
  private allows(label: OperatorCommand, action: string, arn: string): boolean {
    this.requests += 1;
    const asked = `${action} on ${this.named(arn)}`;
    const seen = (this.operations[label] ??= []);
    if (!seen.includes(asked)) seen.push(asked);
    const { allowed, reason } = evaluate(this.policy, action, arn);
    const refusal = !allowed
      ? `denied ${asked} (${arn}): the operator policy does not allow it${reason === NOT_ALLOWED ? '' : ` (${reason})`}`
      : !evaluate(this.grantsOf(label), action, arn).allowed
        ? `asked ${asked}, which its grants in lib/operator/grants.ts do not list`
        : undefined;
    if (refusal) this.refuse(label, refusal);
    return !refusal;
  }

  /**
   * Runs `work` with DynamoDB and the bus behind the policy and the grants of the command it names
   * (`use` switches, for the console's pages); a request either refuses is AccessDeniedException.
   * What it failed with is a refusal of every command it ran as.
   */
  private async guarded(first: OperatorCommand, work: Work): Promise<void> {
    let current = first;
    const labels = new Set([first]);
    const allows = (action: string, arn: string) => this.allows(current, action, arn);
    const dynamo = await startRecordingProxy(this.input.dynamoEndpoint, new Map(), allows);
    const bus = await startEventBusStandIn(allows);
    try {
      const env = {
        ...this.baseEnv,
        AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
        AWS_ENDPOINT_URL_EVENTBRIDGE: bus.endpoint,
      };
      const failure = await work(env, (label) => labels.add((current = label)));
      if (failure) for (const label of labels) this.refuse(label, `failed: ${failure}`);
    } finally {
      await Promise.all([dynamo.close(), bus.close()]);
    }
  }

  /** The CLI as the operator runs it: its output as it comes, and its exit. */
  private spawnCli(args: readonly string[], env: NodeJS.ProcessEnv) {
    const child = spawn(process.execPath, [CLI_FILE, ...this.target, ...args], { ...CLI_OPTIONS, env });
    const output = { stdout: '', stderr: '' };
    child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString('utf8')));
    return { child, output, exited: once(child, 'close').then(([code]) => code as number | null) };
  }

  /** Runs one command; its `--json` answer, parsed, when it worked. */
  command(label: OperatorCommand, args: string[]): Promise<Record<string, unknown> | undefined> {
    return this.limit(async () => {
      let answer: Record<string, unknown> | undefined;
      await this.guarded(label, async (env) => {
        const { output, exited } = this.spawnCli(args, env);
        const code = await exited;
        if (code === 0 && args.includes('--json')) answer = JSON.parse(output.stdout) as Record<string, unknown>;
        return failureOf(code, output.stderr, output.stdout);
      });
      this.commands += 1;
      return answer;
    });
  }

  /** `branch-api console` started as an operator starts it; its launch link opened, then each page. */
  consolePages(): Promise<void> {
    const labels = Object.keys(CONSOLE_PAGES) as (keyof typeof CONSOLE_PAGES)[];
    return this.limit(() =>
      this.guarded(labels[0]!, async (env, use) => {
        const { child, output, exited } = this.spawnCli(
          ['console', '--port', '0', '--branch', this.input.branchId],
          env,
        );
        const link = await Promise.race([
          exited.then(() => undefined),
          new Promise<string>((resolve) =>
            child.stdout.on('data', () => {
              const found = /Settings console: (\S+)/.exec(output.stdout);
              if (found) resolve(found[1]!);
            }),
          ),
        ]);
        if (!link) {
          labels.forEach(use); // A console that did not start failed every page.
          return failureOf(await exited, output.stderr);
        }
        try {
          const cookie = (await fetch(link, { redirect: 'manual' })).headers.get('set-cookie')?.split(';')[0] ?? '';
          for (const label of labels) {
            use(label);
            const path = `/branches/${encodeURIComponent(this.input.branchId)}/${CONSOLE_PAGES[label]}`;
            const answer = await fetch(new URL(path, link), { headers: { cookie } });
            await answer.text();
            const logged = output.stderr.trim().split('\n').at(-1) ?? '';
            if (answer.status !== 200) this.refuse(label, `failed: GET ${path} answered ${answer.status}: ${logged}`);
          }
          return undefined;
        } finally {
          child.kill('SIGTERM');
          await exited;
        }
      }),
    );
  }

  /** One line per distinct reason, naming every command that met it (a missing output fails them all alike). */
  defects(): Defect[] {
    const check = 'operator-proof';
    return [...this.refusals].map(([reason, labels]) => ({ check, resource: [...labels].join(', '), reason }));
  }
}

const HOUR_MS = 3600_000;

/**
 * Every command, a key's lifecycle in order (on the key `keys create` makes, a placeholder when it
 * could not; expiring within days so that `keys audit` sends its Key Expiring event), the rest
 * beside it.
 */
const playCommands = async (proof: OperatorProof, branchId: string, dir: string): Promise<void> => {
  const branch = ['--branch', branchId];
  const now = Date.now();
  const since = new Date(Math.floor(now / HOUR_MS) * HOUR_MS - 3 * HOUR_MS).toISOString();
  const keyChain = async () => {
    const expires = new Date(now + 72 * HOUR_MS).toISOString();
    const create = ['keys', 'create', ...branch, '--scopes', 'read', '--expires', expires, '--json'];
    const keyId = String((await proof.command('keys create', create))?.key_id ?? 'key_0000000000000000');
    const usageChain = async () => {
      const log = join(dir, 'usage.log');
      writeFileSync(log, `${JSON.stringify(replayLine(keyId, branchId, new Date(now - 1.5 * HOUR_MS)))}\n`);
      await proof.command('usage replay', ['usage', 'replay', log]);
      await proof.command('usage rebuild', ['usage', 'rebuild', ...branch, '--since', since]);
      await proof.command('usage', ['usage', ...branch, '--key', keyId]);
    };
    const keyActions = async () => {
      await proof.command('keys update', ['keys', 'update', keyId, ...branch, '--name', 'operator proof']);
      await proof.command('keys disable', ['keys', 'disable', keyId, ...branch]);
      await proof.command('keys enable', ['keys', 'enable', keyId, ...branch]);
      await proof.command('keys audit', ['keys', 'audit', ...branch]);
      const rolled = await proof.command('keys roll', ['keys', 'roll', keyId, ...branch, '--grace', '0', '--json']);
      await proof.command('keys revoke', ['keys', 'revoke', String(rolled?.key_id ?? keyId), ...branch]);
      await proof.command('keys activity', ['keys', 'activity', ...branch]);
    };
    await Promise.all([usageChain(), keyActions()]);
  };
  await Promise.all([
    keyChain(),
    proof.command('keys list', ['keys', 'list', ...branch]),
    proof.command('usage summary', ['usage', 'summary', ...branch, '--since', since]),
    proof.consolePages(),
  ]);
};

export const runOperatorProof = async (input: OperatorProofInput): Promise<OperatorProofReport> => {
  const dir = mkdtempSync(join(tmpdir(), 'operator-proof-'));
  const outputsFile = join(dir, 'outputs.json');
  writeFileSync(outputsFile, JSON.stringify({ [input.assembly.stack]: input.outputs ?? input.assembly.outputs }));
  const identity = await startCallerIdentityStandIn();
  const proof = new OperatorProof(input, ['--outputs', outputsFile, '--region', LOCAL_REGION], {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !isTargetVariable(name))),
    AWS_ACCESS_KEY_ID: 'verify',
    AWS_SECRET_ACCESS_KEY: 'verify',
    AWS_ENDPOINT_URL_STS: identity.endpoint,
    AWS_EC2_METADATA_DISABLED: 'true',
    // Settings, not outputs: the embedded DynamoDB's bound on a busy machine (as the functions'),
    // and how long rebuild waits for stream records still on their way (the embedded run has none).
    DYNAMODB_DEADLINE_MS: String(EMBEDDED_DYNAMODB_DEADLINE_MS),
    ROLLUP_MAX_LAG_SECONDS: '1',
  });
  try {
    await playCommands(proof, input.branchId, dir);
  } finally {
    await identity.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    defects: proof.defects(),
    commands: proof.commands,
    pages: Object.keys(CONSOLE_PAGES).length,
    requests: proof.requests,
    operations: proof.operations,
  };
};
