/**
 * "Key Expiring" events (docs/decisions.md "Key events"): the daily scheduled function on the
 * embedded DynamoDB sends one per key that expires within 7 days, once per key and expiry; locally
 * `keys audit` sends them for the branch it audits.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'aws-lambda';
import { buildContext } from '../lib/local/events';
import { createKey, fixtureKeys, setUpBranches } from './support/harness';
import { readEventsFile } from './support/secret-scanning';
import { otherBranch } from './support/fixtures';
import { createOperatorContext } from '../lib/operator/context';
import { auditKeys, updateKey } from '../lib/operator/keys';

const DAY = 24 * 60 * 60 * 1000;
const eventsFile = join(mkdtempSync(join(tmpdir(), 'key-events-')), 'events.jsonl');

const loadFunction = async () => {
  process.env.KEY_EVENTS_FILE = eventsFile;
  try {
    let handler: ((event: unknown, context: Context) => Promise<{ sent: number }>) | undefined;
    await jest.isolateModulesAsync(async () => {
      handler = (await import('../functions/key-expiry-events')).handler;
    });
    return handler!;
  } finally {
    delete process.env.KEY_EVENTS_FILE;
  }
};

beforeAll(async () => {
  await setUpBranches();
});

it('sends Key Expiring once for each live key expiring within 7 days, and never again for that expiry', async () => {
  const inDays = (days: number) => new Date(Date.now() + days * DAY);
  const soon = await createKey({ name: 'Soon', expiresAt: inDays(3) });
  const edge = await createKey({ name: 'Edge', expiresAt: inDays(6.9) });
  await createKey({ name: 'Later', expiresAt: inDays(10) });
  await createKey({ name: 'Lapsed', expiresAt: inDays(-1) });
  await createKey({ name: 'Forever' });
  const revoked = await createKey({ name: 'Revoked', expiresAt: inDays(2) });
  await fixtureKeys.revoke(revoked.record.key_id);

  const handler = await loadFunction();
  expect(await handler({}, buildContext())).toEqual({ sent: 2 });
  const events = readEventsFile(eventsFile);
  expect(events.map((event) => [event['detail-type'], event.detail.name, event.detail.expires_at]).sort()).toEqual([
    ['Key Expiring', 'Edge', edge.record.expires_at],
    ['Key Expiring', 'Soon', soon.record.expires_at],
  ]);
  expect(events.every((event) => event.detail.actor === 'branch-api')).toBe(true);

  // The next day's run, or a second container's, sends nothing more.
  expect(await handler({}, buildContext())).toEqual({ sent: 0 });
  expect(await (await loadFunction())({}, buildContext())).toEqual({ sent: 0 });
  expect(readEventsFile(eventsFile)).toHaveLength(2);
});

it('keys audit sends them locally, once per key and expiry; a new expiry gets its own', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'key-events-')), 'events.jsonl');
  const ctx = createOperatorContext({ ...process.env, KEY_EVENTS_FILE: file });
  try {
    const { record } = await createKey({
      branchId: otherBranch.id,
      name: 'Audited',
      expiresAt: new Date(Date.now() + 2 * DAY),
    });
    const expiring = () => readEventsFile(file).filter((event) => event['detail-type'] === 'Key Expiring');
    await auditKeys(ctx, { branchId: otherBranch.id });
    await auditKeys(ctx, { branchId: otherBranch.id });
    expect(expiring().map((event) => event.detail.key_id)).toEqual([record.key_id]);

    const later = new Date(Date.now() + 5 * DAY).toISOString();
    await updateKey(ctx, { branchId: otherBranch.id, keyId: record.key_id, expiresAt: new Date(later) });
    await auditKeys(ctx, { branchId: otherBranch.id });
    expect(expiring().map((event) => event.detail.expires_at)).toEqual([record.expires_at, later]);
  } finally {
    ctx.close();
  }
});
