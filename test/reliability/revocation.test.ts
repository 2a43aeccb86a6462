/**
 * Revocation and expiry under load, through the in-process local gateway over real HTTP: while
 * 16 concurrent clients keep calling, a key is revoked with the operator's revokeKey (what the
 * settings page calls), or reaches its expiry time. Every request that STARTS after the revoke
 * returned (or after the expiry instant) is 401 revoked_api_key (expired_api_key); requests that
 * ended before are 200; only requests in flight across the change may be either. A control key
 * used by half the clients stays 200 throughout. Every call is recorded against its key.
 */
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { revokeKey } from '../../lib/operator/operations';
import { startGateway, type Gateway } from '../../lib/local/gateway';
import { logger } from '../../shared/lambda/observability';
import { createKey, createTables, seedBranches } from '../support/harness';
import { reliabilityBranch } from './support/fixtures';
import { rawRequest, stagePath, type RawResponse } from './support/http';
import { UsageLedger } from './support/ledger';
import { SecretTracker } from './support/secrets';
import { auditProblems, auditUsage, captureAllLogs, expectDocumented, report, secretHygiene } from './support/suite';

const WORKERS = 16;
const MAX_REQUESTS = 4_000;
const branch = reliabilityBranch(1);
const secrets = new SecretTracker();
const ledger = new UsageLedger();
let gateway: Gateway;
let operator: OperatorContext;
let logs: ReturnType<typeof captureAllLogs>;

beforeAll(async () => {
  logs = captureAllLogs([logger]);
  await createTables();
  await seedBranches([branch]);
  gateway = await startGateway({ port: 0 });
  operator = createOperatorContext(process.env);
});

afterAll(async () => {
  logs?.restore();
  operator?.close();
  await gateway?.close();
});

interface Sample {
  res: RawResponse;
  /** Wall clock (epoch ms) when the request was sent and when its answer was read. */
  startedAt: number;
  endedAt: number;
  control: boolean;
}

const newKey = async (input: Parameters<typeof createKey>[0] = {}) => {
  const { key, record } = await createKey({ branchId: branch.id, ...input });
  secrets.key(key);
  secrets.authorization(`Bearer ${key}`);
  return { key, keyId: record.key_id };
};

/**
 * Runs WORKERS clients until `stop()` says so (bounded by MAX_REQUESTS): even-numbered clients
 * use `key`, odd-numbered ones the control key. Each answer is registered with the ledger.
 */
const hammer = async (
  key: { key: string; keyId: string },
  control: { key: string; keyId: string },
  stop: () => boolean,
) => {
  const samples: Sample[] = [];
  const worker = async (index: number) => {
    const used = index % 2 === 0 ? key : control;
    while (!stop() && samples.length < MAX_REQUESTS) {
      const startedAt = Date.now();
      const res = await rawRequest(gateway.baseUrl, {
        path: stagePath(gateway.baseUrl, '/v1/members?limit=5'),
        headers: { authorization: `Bearer ${used.key}` },
      });
      samples.push({ res, startedAt, endedAt: Date.now(), control: used === control });
      ledger.expect(res.requestId, { keyId: used.keyId, status: res.status });
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, (_, i) => worker(i)));
  return samples;
};

const statusesOf = (samples: Sample[]) =>
  samples.reduce<Record<string, number>>((acc, s) => {
    const label = `${s.res.status}${s.res.json?.error ? ` ${s.res.json.error.code}` : ''}`;
    return { ...acc, [label]: (acc[label] ?? 0) + 1 };
  }, {});

it('refuses a key revoked mid-load from the very next request on', async () => {
  const key = await newKey();
  const control = await newKey();
  let revokeCalledAt = Infinity;
  let revokedAt = Infinity;
  let stopAt = Infinity;
  const revoker = (async () => {
    await new Promise((resolve) => setTimeout(resolve, 700));
    revokeCalledAt = Date.now();
    await revokeKey(operator, { branchId: branch.id, keyId: key.keyId });
    revokedAt = Date.now();
    stopAt = revokedAt + 1_200;
  })();
  const [samples] = await Promise.all([hammer(key, control, () => Date.now() >= stopAt), revoker]);

  const subject = samples.filter((s) => !s.control);
  const before = subject.filter((s) => s.endedAt < revokeCalledAt);
  const after = subject.filter((s) => s.startedAt >= revokedAt);
  const across = subject.filter((s) => !before.includes(s) && !after.includes(s));
  report(
    `revocation under load: ${samples.length} requests; revoked key: ${before.length} before ${JSON.stringify(statusesOf(before))}, ` +
      `${across.length} in flight ${JSON.stringify(statusesOf(across))}, ${after.length} after ${JSON.stringify(statusesOf(after))}; ` +
      `control key ${JSON.stringify(statusesOf(samples.filter((s) => s.control)))}`,
  );
  expect(before.length).toBeGreaterThanOrEqual(3);
  expect(after.length).toBeGreaterThanOrEqual(10);
  for (const s of before) expectDocumented(s.res, 200);
  for (const s of after) expectDocumented(s.res, 401, 'revoked_api_key');
  for (const s of across) expect([200, 401]).toContain(s.res.status);
  for (const s of across.filter((one) => one.res.status === 401)) expectDocumented(s.res, 401, 'revoked_api_key');
  for (const s of samples.filter((one) => one.control)) expectDocumented(s.res, 200);
});

it('refuses a key that expires mid-load from its expiry instant on', async () => {
  const expiresAt = Date.now() + 900;
  const key = await newKey({ expiresAt: new Date(expiresAt) });
  const control = await newKey({ expiresAt: new Date(Date.now() + 3_600_000) });
  const stopAt = expiresAt + 1_200;
  const samples = await hammer(key, control, () => Date.now() >= stopAt);

  const subject = samples.filter((s) => !s.control);
  const before = subject.filter((s) => s.endedAt < expiresAt);
  const after = subject.filter((s) => s.startedAt >= expiresAt);
  const across = subject.filter((s) => !before.includes(s) && !after.includes(s));
  report(
    `expiry under load: ${samples.length} requests; expiring key: ${before.length} before ${JSON.stringify(statusesOf(before))}, ` +
      `${across.length} in flight ${JSON.stringify(statusesOf(across))}, ${after.length} after ${JSON.stringify(statusesOf(after))}`,
  );
  expect(before.length).toBeGreaterThanOrEqual(3);
  expect(after.length).toBeGreaterThanOrEqual(10);
  for (const s of before) expectDocumented(s.res, 200);
  for (const s of after) expectDocumented(s.res, 401, 'expired_api_key');
  for (const s of across) expect([200, 401]).toContain(s.res.status);
  for (const s of across.filter((one) => one.res.status === 401)) expectDocumented(s.res, 401, 'expired_api_key');
  for (const s of samples.filter((one) => one.control)) expectDocumented(s.res, 200);
});

it('recorded every call, refused or not, against its key', async () => {
  const audit = await auditUsage(ledger, logs.capture.entries);
  expect(auditProblems(audit)).toEqual({ lost: 0, unexpected: 0, duplicates: 0, mismatched: 0 });
  expect(audit.inTable).toBe(audit.requests);
});

it('stored and logged no plaintext key and no Authorization value', async () => {
  const hygiene = await secretHygiene(secrets, logs.capture.text);
  expect(hygiene.findings).toEqual([]);
  expect(hygiene.keys).toBe(4);
});
