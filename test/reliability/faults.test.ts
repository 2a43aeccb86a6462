/**
 * DynamoDB faults against a real endpoint: the fault proxy (test/support/fault-proxy.ts) sits in
 * front of dynalite and throttles, fails, stalls or drops chosen operations, or the whole
 * database goes away and comes back; a closed port stands for a database that was never there.
 * Nothing is stubbed in the client: the real handlers and SDK speak HTTP to the proxy.
 *
 * For every request: 503 service_unavailable with Retry-After (or the normal answer when only the
 * usage write failed), never a stack trace, inside the 10 s function timeout; bounded by counts, not
 * a stopwatch: a stall never answers, so an answer at all means the client's own timeouts ended it,
 * and the proxy counts no more attempts per operation than configured. The same container answers
 * normally once the database is back; every usage record is either in the table or logged whole at
 * error level (0 lost). On listMembers the three calls are distinct operations: GetItem = key
 * lookup, Query = data read, PutItem = usage write.
 */
import { startFaultProxy, type Fault, type FaultProxy } from '../support/fault-proxy';
import {
  FAST_FAILURE_ENV,
  closedPortEndpoint,
  createKey,
  createTables,
  fixtureClient,
  invoke,
  loadService,
  seedBranches,
  tableNames,
  type Service,
} from '../support/harness';
import { reliabilityBranch } from '../../bench/reliability/branches';
import { loggedUsageRecords, scanAll, unattributedRequests, UsageLedger } from '../../bench/reliability/ledger';
import { SecretTracker } from '../../bench/reliability/secrets';
import {
  auditProblems,
  auditUsage,
  captureAllLogs,
  expectDocumented,
  fromInvoke,
  report,
  secretHygiene,
  type AnyResponse,
} from './support/suite';

/** The function timeout of the deployed functions. */
const FUNCTION_TIMEOUT_MS = 10_000;
/** Attempts per DynamoDB call, in both settings below (the default's, shared/config/env.ts). */
const MAX_ATTEMPTS = Number(FAST_FAILURE_ENV.DYNAMODB_MAX_ATTEMPTS);
const DEFAULT_ENV = {
  DYNAMODB_CONNECT_TIMEOUT_MS: undefined,
  DYNAMODB_REQUEST_TIMEOUT_MS: undefined,
  DYNAMODB_MAX_ATTEMPTS: undefined,
  DYNAMODB_DEADLINE_MS: undefined,
};
const USAGE_FIELDS = [
  'branch_id',
  'key_id',
  'method',
  'path',
  'request_id',
  'response_time_ms',
  'route',
  'source_ip',
  'status',
  'timestamp',
];

const branch = reliabilityBranch(1);
const secrets = new SecretTracker();
const ledger = new UsageLedger();
/** Where each request's record must be: the table, the error log, or nowhere (no key was ever read). */
const placeOf = new Map<string, 'table' | 'logged' | 'unattributed'>();
const timings: { settings: string; fault: string; ms: number; status: number }[] = [];

let key: string;
let keyId: string;
let proxy: FaultProxy;
let fast: Service;
let defaults: Service;
let logs: ReturnType<typeof captureAllLogs>;

beforeAll(async () => {
  await createTables();
  await seedBranches([branch]);
  const created = await createKey({ branchId: branch.id });
  key = secrets.key(created.key);
  keyId = created.record.key_id;
  secrets.authorization(`Bearer ${key}`);
  proxy = await startFaultProxy(process.env.DYNAMODB_ENDPOINT!);
  fast = await loadService({ ...FAST_FAILURE_ENV, DYNAMODB_ENDPOINT: proxy.endpoint });
  defaults = await loadService({ ...DEFAULT_ENV, DYNAMODB_ENDPOINT: proxy.endpoint });
  logs = captureAllLogs([fast.logger, defaults.logger]);
});

afterAll(async () => {
  logs?.restore();
  await proxy?.close();
});

interface Call {
  res: AnyResponse;
  startedAt: number;
  ms: number;
}

const call = async (service: Service): Promise<Call> => {
  const startedAt = performance.now();
  const res = fromInvoke(await invoke(service.listMembers, { path: '/v1/members', key }));
  return { res, startedAt, ms: performance.now() - startedAt };
};

type Place = 'table' | 'logged' | 'unattributed';
const account = (res: AnyResponse, place: Place) => {
  ledger.expect(res.requestId, { keyId, status: res.status, mayBeUnattributed: place === 'unattributed' });
  placeOf.set(res.requestId, place);
};

/**
 * The faulted attempts the proxy saw per operation since its log was reset: each operation given up
 * after at most MAX_ATTEMPTS, so the answer's time is bounded by the settings, not by the fault.
 */
const expectBoundedAttempts = (operations: readonly string[]) => {
  const attempts = new Map<string, number>();
  for (const { operation, outcome } of proxy.requests) {
    if (outcome !== 'forwarded') attempts.set(operation, (attempts.get(operation) ?? 0) + 1);
  }
  expect(attempts.size).toBeGreaterThan(0);
  expect(
    [...attempts.keys()].filter((operation) => !operations.includes('*') && !operations.includes(operation)),
  ).toEqual([]);
  expect([...attempts].filter(([, count]) => count > MAX_ATTEMPTS)).toEqual([]);
};

/** The same container answers normally (and records the call) once the fault is gone. */
const expectRecovered = async (service: Service) => {
  const { res } = await call(service);
  expectDocumented(res, 200);
  expect(res.json.data.length).toBeGreaterThan(0);
  account(res, 'table');
};

const FAULTS: Fault[] = [{ kind: 'throttle' }, { kind: 'error' }, { kind: 'stall' }, { kind: 'reset' }];
/** [what fails, the operations that fail, the status the caller gets, where the record goes] */
const TARGETS: [string, string[], 200 | 503, Place][] = [
  ['key lookup', ['GetItem'], 503, 'unattributed'],
  ['data read', ['Query'], 503, 'table'],
  ['usage write', ['PutItem'], 200, 'logged'],
  ['data read and usage write', ['Query', 'PutItem'], 503, 'logged'],
];
const MATRIX = FAULTS.flatMap((fault) =>
  TARGETS.map(([target, ...rest]) => [fault.kind, target, fault, ...rest] as const),
);

describe('with fast-failure settings', () => {
  it.each(MATRIX)('%s on the %s: the documented answer after bounded attempts, then recovery', async (...args) => {
    const [, target, fault, operations, status, place] = args;
    proxy.clear();
    proxy.resetLog();
    operations.forEach((operation) => proxy.inject(operation, fault));
    const { res, ms } = await call(fast);
    proxy.clear();
    timings.push({ settings: 'fast', fault: `${fault.kind} on ${target}`, ms, status: res.status });
    expectDocumented(res, status, status === 503 ? 'service_unavailable' : undefined);
    expectBoundedAttempts(operations);
    expect(ms).toBeLessThan(FUNCTION_TIMEOUT_MS);
    account(res, place);
    await expectRecovered(fast);
  });

  it('answers 503 when nothing listens on the database port, with no record possible', async () => {
    const refused = await loadService({ ...FAST_FAILURE_ENV, DYNAMODB_ENDPOINT: await closedPortEndpoint() });
    logs.add(refused.logger);
    const { res, ms } = await call(refused);
    timings.push({ settings: 'fast', fault: 'closed port', ms, status: res.status });
    expectDocumented(res, 503, 'service_unavailable');
    expect(ms).toBeLessThan(FUNCTION_TIMEOUT_MS);
    account(res, 'unattributed');
  });
});

describe('with roomy timeouts', () => {
  // Down, the database refuses connections, and in-flight calls are cut: nothing here waits for
  // a timeout, so healthy calls get the room a busy machine needs.
  it('keeps answering while the database stops mid-run, and resumes with no restart', async () => {
    // Phases advance by answers counted, not by a clock: so many calls before the stop, while
    // down and after the restart, however slow the machine.
    const WORKERS = 6;
    const PER_PHASE = 12;
    const MAX_REQUESTS = 3_000;
    type Phase = 'before' | 'stopping' | 'down' | 'starting' | 'back' | 'done';
    const roomy = await loadService({ DYNAMODB_ENDPOINT: proxy.endpoint });
    logs.add(roomy.logger);
    const calls: (Call & { from: Phase; to: Phase })[] = [];
    let phase: Phase = 'before';
    let answered = () => {};
    const nextAnswer = () => new Promise<void>((resolve) => (answered = resolve));
    /** Calls that started and ended in `p`. */
    const within = (p: Phase) => calls.filter((c) => c.from === p && c.to === p);
    const worker = async () => {
      while (phase !== 'done' && calls.length < MAX_REQUESTS) {
        const from = phase;
        const c = await call(roomy);
        calls.push({ ...c, from, to: phase });
        answered();
      }
    };
    const schedule = async () => {
      const steps: [Phase, Phase, Phase, () => Promise<void>][] = [
        ['before', 'stopping', 'down', () => proxy.stop()],
        ['down', 'starting', 'back', () => proxy.start()],
        ['back', 'done', 'done', async () => undefined],
      ];
      for (const [current, changing, next, change] of steps) {
        while (within(current).length < PER_PHASE && calls.length < MAX_REQUESTS) await nextAnswer();
        phase = changing;
        await change();
        phase = next;
      }
    };
    await Promise.all([schedule(), ...Array.from({ length: WORKERS }, worker)]);

    const statuses = calls.reduce<Record<number, number>>(
      (acc, c) => ({ ...acc, [c.res.status]: (acc[c.res.status] ?? 0) + 1 }),
      {},
    );
    report(
      `database stopped mid-run: ${calls.length} requests ${JSON.stringify(statuses)}, ` +
        `${within('down').length} while down, ${within('back').length} after restart, slowest ${Math.round(Math.max(...calls.map((c) => c.ms)))} ms`,
    );
    for (const c of calls) {
      if (c.res.status === 200) expectDocumented(c.res, 200);
      else expectDocumented(c.res, 503, 'service_unavailable');
      expect(c.ms).toBeLessThan(FUNCTION_TIMEOUT_MS);
      // A 503 may come from the key lookup (no key known: no record) or later (record stored or logged).
      ledger.expect(c.res.requestId, { keyId, status: c.res.status, mayBeUnattributed: c.res.status === 503 });
    }
    expect(within('before').map((c) => c.res.status)).toEqual(within('before').map(() => 200));
    expect(within('down').length).toBeGreaterThanOrEqual(PER_PHASE);
    expect(within('down').map((c) => c.res.status)).toEqual(within('down').map(() => 503));
    expect(within('back').length).toBeGreaterThanOrEqual(PER_PHASE);
    expect(within('back').map((c) => c.res.status)).toEqual(within('back').map(() => 200));
  });
});

describe('with the default settings (2 s bound, 2 attempts, 500 ms request timeout)', () => {
  it.each([
    ['stall on the data read and the usage write (the worst case)', ['Query', 'PutItem'], { kind: 'stall' }, 'logged'],
    ['stall on the key lookup', ['GetItem'], { kind: 'stall' }, 'unattributed'],
    ['throttling on every call', ['*'], { kind: 'throttle' }, 'unattributed'],
    ['500s on every call', ['*'], { kind: 'error' }, 'unattributed'],
  ] as const)(
    '%s: 503 after bounded attempts, inside the function timeout',
    async (label, operations, fault, place) => {
      proxy.clear();
      proxy.resetLog();
      operations.forEach((operation) => proxy.inject(operation, fault));
      const { res, ms } = await call(defaults);
      proxy.clear();
      timings.push({ settings: 'default', fault: label, ms, status: res.status });
      expectDocumented(res, 503, 'service_unavailable');
      expectBoundedAttempts(operations);
      expect(ms).toBeLessThan(FUNCTION_TIMEOUT_MS);
      account(res, place);
      await expectRecovered(defaults);
    },
  );

  it('absorbs one throttle per call with the SDK retry (throttling backoff up to 1 s): 200, record stored', async () => {
    proxy.clear();
    proxy.inject('GetItem', { kind: 'throttle' }, 1);
    proxy.inject('Query', { kind: 'throttle' }, 1);
    proxy.inject('PutItem', { kind: 'throttle' }, 1);
    const { res } = await call(defaults);
    proxy.clear();
    expectDocumented(res, 200);
    account(res, 'table');
  });

  it('database stopped: 503 inside the function timeout, then resumes', async () => {
    await proxy.stop();
    const { res, ms } = await call(defaults);
    await proxy.start();
    timings.push({ settings: 'default', fault: 'database stopped', ms, status: res.status });
    expectDocumented(res, 503, 'service_unavailable');
    expect(ms).toBeLessThan(FUNCTION_TIMEOUT_MS);
    account(res, 'unattributed');
    await expectRecovered(defaults);
  });

  it('closed port: 503 inside the function timeout', async () => {
    const refused = await loadService({ ...DEFAULT_ENV, DYNAMODB_ENDPOINT: await closedPortEndpoint() });
    logs.add(refused.logger);
    const { res, ms } = await call(refused);
    timings.push({ settings: 'default', fault: 'closed port', ms, status: res.status });
    expectDocumented(res, 503, 'service_unavailable');
    expect(ms).toBeLessThan(FUNCTION_TIMEOUT_MS);
    account(res, 'unattributed');
  });
});

describe('accounting', () => {
  it('lost no usage record: each is in the table or logged whole at error level', async () => {
    const entries = logs.capture.entries;
    const audit = await auditUsage(ledger, entries);
    report(
      `faults usage: ${audit.requests} requests, ${audit.expected} with a key, ${audit.inTable} in the table, ` +
        `${audit.logged} logged at error level, ${audit.unattributed} failed before the key was known, ` +
        `${audit.lost.length} lost, ${audit.storedAndLogged.length} stored and also logged`,
    );
    report(
      `fault timings (ms):\n${timings.map((t) => `  ${t.settings.padEnd(7)} ${t.fault.padEnd(48)} ${t.status} ${Math.round(t.ms)}`).join('\n')}`,
    );
    expect(auditProblems(audit)).toEqual({ lost: 0, unexpected: 0, duplicates: 0, mismatched: 0 });
    expect(audit.logged).toBeGreaterThan(0);
    expect(audit.unattributed).toBeGreaterThan(0);

    // Each single-request case left its record exactly where the fault sends it.
    const logged = new Set(loggedUsageRecords(entries).map((record) => record.request_id));
    const unattributed = unattributedRequests(entries);
    const stored = new Set((await scanAll(fixtureClient, tableNames.usage)).map((record) => record.request_id));
    const actual = [...placeOf.keys()].map((id) => [
      id,
      stored.has(id) ? 'table' : logged.has(id) ? 'logged' : unattributed.has(id) ? 'unattributed' : 'nowhere',
    ]);
    expect(actual).toEqual([...placeOf.entries()]);

    // "Logged whole": every field of the record, so it can be replayed.
    for (const record of loggedUsageRecords(entries)) expect(Object.keys(record).sort()).toEqual(USAGE_FIELDS);
    // 503s are warnings, not stack traces in the response; the logs name the cause.
    expect(entries.filter((entry) => entry.message === 'Request failed').length).toBeGreaterThan(0);
  });

  it('stored and logged no plaintext key and no Authorization value', async () => {
    const hygiene = await secretHygiene(secrets, logs.capture.text);
    expect(hygiene.findings).toEqual([]);
    expect(hygiene.bytesSearched).toBeGreaterThan(10_000);
  });
});
