/**
 * Revocation and expiry under load, through the in-process local gateway over real HTTP: while
 * 16 concurrent clients keep calling, a key is revoked with the operator's revokeKey (what the
 * settings page calls), or its expiry is set to the present instant. Every request that STARTS
 * after the change was stored is 401 revoked_api_key (expired_api_key); requests that ended before
 * it began are 200; only requests in flight across the change may be either. A control key used
 * by half the clients stays 200 throughout. Every call is recorded against its key.
 *
 * Counted, not timed: the change comes after the key's CHANGE_AFTER-th success, and the load
 * stops once CHECKED_AFTER requests have started after it, however slow the machine is.
 */
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { revokeKey } from '../../lib/operator/keys';
import { startGateway, type Gateway } from '../../lib/local/gateway';
import { logger } from '../../shared/lambda/observability';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { hashApiKey } from '../../shared/domain/api-key';
import { createKey, createTables, fixtureClient, seedBranches, tableNames } from '../support/harness';
import { reliabilityBranch } from '../../bench/reliability/branches';
import { rawRequest, stagePath, type RawResponse } from './support/http';
import { UsageLedger } from '../../bench/reliability/ledger';
import { SecretTracker } from '../../bench/reliability/secrets';
import { auditProblems, auditUsage, captureAllLogs, expectDocumented, report, secretHygiene } from './support/suite';

const WORKERS = 16;
const MAX_REQUESTS = 4_000;
const CHANGE_AFTER = 20;
const CHECKED_AFTER = 20;
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
 * Runs WORKERS clients (even-numbered ones use `key`, odd-numbered ones the control key) and
 * starts `change` once CHANGE_AFTER calls of `key` have succeeded; stops once CHECKED_AFTER calls
 * of `key` started after the change completed (bounded by MAX_REQUESTS). Each answer is
 * registered with the ledger. Returns the samples and the instants the change began and ended.
 */
const hammer = async (
  key: { key: string; keyId: string },
  control: { key: string; keyId: string },
  change: () => Promise<unknown>,
) => {
  const samples: Sample[] = [];
  const changed = { begunAt: Infinity, endedAt: Infinity };
  let changing: Promise<unknown> | undefined;
  const subject = () => samples.filter((s) => !s.control);
  const stop = () => {
    if (!changing && subject().filter((s) => s.res.status === 200).length >= CHANGE_AFTER) {
      changed.begunAt = Date.now();
      changing = change().then(() => (changed.endedAt = Date.now()));
    }
    return subject().filter((s) => s.startedAt >= changed.endedAt).length >= CHECKED_AFTER;
  };
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
  await changing;
  return { samples, changed };
};

const statusesOf = (samples: Sample[]) =>
  samples.reduce<Record<string, number>>((acc, s) => {
    const label = `${s.res.status}${s.res.json?.error ? ` ${s.res.json.error.code}` : ''}`;
    return { ...acc, [label]: (acc[label] ?? 0) + 1 };
  }, {});

it('refuses a key revoked mid-load from the very next request on', async () => {
  const key = await newKey();
  const control = await newKey();
  const { samples, changed } = await hammer(key, control, () =>
    revokeKey(operator, { branchId: branch.id, keyId: key.keyId }),
  );

  const subject = samples.filter((s) => !s.control);
  const before = subject.filter((s) => s.endedAt <= changed.begunAt);
  const after = subject.filter((s) => s.startedAt >= changed.endedAt);
  const across = subject.filter((s) => !before.includes(s) && !after.includes(s));
  report(
    `revocation under load: ${samples.length} requests; revoked key: ${before.length} before ${JSON.stringify(statusesOf(before))}, ` +
      `${across.length} in flight ${JSON.stringify(statusesOf(across))}, ${after.length} after ${JSON.stringify(statusesOf(after))}; ` +
      `control key ${JSON.stringify(statusesOf(samples.filter((s) => s.control)))}`,
  );
  expect(before.length).toBeGreaterThanOrEqual(CHANGE_AFTER);
  expect(after.length).toBeGreaterThanOrEqual(CHECKED_AFTER);
  for (const s of before) expectDocumented(s.res, 200);
  for (const s of after) expectDocumented(s.res, 401, 'revoked_api_key');
  for (const s of across) expect([200, 401]).toContain(s.res.status);
  for (const s of across.filter((one) => one.res.status === 401)) expectDocumented(s.res, 401, 'revoked_api_key');
  for (const s of samples.filter((one) => one.control)) expectDocumented(s.res, 200);
});

it('refuses a key whose expiry passes mid-load from the next request on', async () => {
  const key = await newKey({ expiresAt: new Date(Date.now() + 3_600_000) });
  const control = await newKey({ expiresAt: new Date(Date.now() + 3_600_000) });
  // The expiry instant, brought to the present: the key's stored expires_at becomes "now".
  const { samples, changed } = await hammer(key, control, () =>
    fixtureClient.send(
      new UpdateCommand({
        TableName: tableNames.keys,
        Key: { key_hash: hashApiKey(key.key) },
        UpdateExpression: 'SET expires_at = :now',
        ExpressionAttributeValues: { ':now': new Date().toISOString() },
      }),
    ),
  );

  const subject = samples.filter((s) => !s.control);
  const before = subject.filter((s) => s.endedAt <= changed.begunAt);
  const after = subject.filter((s) => s.startedAt >= changed.endedAt);
  const across = subject.filter((s) => !before.includes(s) && !after.includes(s));
  report(
    `expiry under load: ${samples.length} requests; expiring key: ${before.length} before ${JSON.stringify(statusesOf(before))}, ` +
      `${across.length} in flight ${JSON.stringify(statusesOf(across))}, ${after.length} after ${JSON.stringify(statusesOf(after))}`,
  );
  expect(before.length).toBeGreaterThanOrEqual(CHANGE_AFTER);
  expect(after.length).toBeGreaterThanOrEqual(CHECKED_AFTER);
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
