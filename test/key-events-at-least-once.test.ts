/**
 * Key events at least once, in order (docs/decisions.md "Key events"): an action's entry waits in
 * its key item's outbox until it is copied to the activity table and its event sent, so a process
 * killed between the two leaves it for the next CLI run or stack start to send. Real processes: a child's activity
 * put is held by the fault proxy in front of the embedded DynamoDB, then the child is SIGKILLed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ActivityRepository, KeysRepository } from '../shared/data/repositories';
import { fileKeyEvents } from '../shared/data/key-events';
import { PROJECT_ROOT, runCli } from './support/cli';
import { startFaultProxy, type FaultProxy, type SeenRequest } from './support/fault-proxy';
import { mainBranch } from './support/fixtures';
import { createKey, fixtureClient, scanRaw, setUpBranches, tableNames } from './support/harness';
import { readEventsFile } from './support/secret-scanning';

const branchId = mainBranch.id;
const tempDir = () => mkdtempSync(join(tmpdir(), 'key-events-'));
const eventsIn = (file: string) => (existsSync(file) ? readEventsFile(file) : []);
/** How many of these keys have entries waiting in their outbox. */
const pendingOn = async (keyIds: readonly string[]) =>
  (await scanRaw(tableNames.keys)).filter((item) => keyIds.includes(item.key_id!.S!) && item.outbox?.L?.length).length;
const loggedActions = async (keyIds: readonly string[]) =>
  (await scanRaw(tableNames.activity))
    .filter((item) => keyIds.includes(item.key_id!.S!))
    .map((item) => `${item.key_id!.S}:${item.action!.S}`)
    .sort();

/** A keys repository with the activity table, sending its events to `file`. */
const keysSendingTo = (file: string) =>
  new KeysRepository(
    fixtureClient,
    tableNames.keys,
    new ActivityRepository(fixtureClient, tableNames.activity),
    fileKeyEvents(file, { error: () => undefined }),
  );

beforeAll(async () => {
  await setUpBranches();
});

describe('an event that could not be sent', () => {
  it('leaves its entry pending; the sweep sends it under the entry id, once', async () => {
    const file = join(tempDir(), 'events.jsonl');
    const { record } = await createKey({ name: 'unsent' });
    const unreachable = keysSendingTo(join(tempDir(), 'no-such-dir', 'events.jsonl'));
    const { changed } = await unreachable.disable({ branchId, keyId: record.key_id, actor: 'alice' });
    expect(changed).toBe(true);
    expect(await loggedActions([record.key_id])).toEqual([`${record.key_id}:created`, `${record.key_id}:disabled`]);
    expect(await pendingOn([record.key_id])).toBe(1);

    const sweep = await keysSendingTo(file).outbox.finishAll();
    expect(sweep).toEqual({ pending: expect.any(Number), unsent: 0, uncopied: 0 });
    expect(eventsIn(file).map((event) => [event['detail-type'], event.detail.event_id])).toEqual([
      ['Key Disabled', `${record.key_id}#2`],
    ]);
    expect(await pendingOn([record.key_id])).toBe(0);
    await keysSendingTo(file).outbox.finishAll();
    expect(eventsIn(file)).toHaveLength(1);
  });

  it("never holds up the key's next action: both wait, in order, and are sent in order once they can be", async () => {
    const file = join(tempDir(), 'events.jsonl');
    const { record } = await createKey({ name: 'next action' });
    const ref = { branchId, keyId: record.key_id, actor: 'alice' };
    const unreachable = keysSendingTo(join(tempDir(), 'no-such-dir', 'events.jsonl'));
    await unreachable.disable(ref);
    const enabled = await unreachable.enable(ref);
    expect(enabled.changed).toBe(true);
    expect((await unreachable.getById(record.key_id))!.disabled_at).toBeUndefined();
    // The disabled event was tried and not taken; the enabled one waits behind it, not tried.
    expect(enabled.pending.map(({ entry, sent, heldBack }) => [entry.action, sent, heldBack])).toEqual([
      ['disabled', false, false],
      ['enabled', false, true],
    ]);

    expect(await keysSendingTo(file).outbox.finishAll()).toEqual({ pending: 2, unsent: 0, uncopied: 0 });
    expect(eventsIn(file).map((event) => [event['detail-type'], event.detail.event_id])).toEqual([
      ['Key Disabled', `${record.key_id}#2`],
      ['Key Enabled', `${record.key_id}#3`],
    ]);
    expect(await loggedActions([record.key_id])).toEqual(
      ['created', 'disabled', 'enabled'].map((action) => `${record.key_id}:${action}`),
    );
    expect(await pendingOn([record.key_id])).toBe(0);
  });
});

describe('a process killed between the key write and the send', () => {
  const ACTIONS = 5;
  let proxy: FaultProxy;
  let child: ChildProcess | undefined;

  beforeEach(async () => {
    proxy = await startFaultProxy(process.env.DYNAMODB_ENDPOINT!);
  });
  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await proxy.close();
  });

  /** Disables `ACTIONS` new keys in a child whose activity puts are held, and kills it once all are. */
  const killMidAction = async (file: string): Promise<string[]> => {
    const keyIds: string[] = [];
    for (let i = 0; i < ACTIONS; i += 1) keyIds.push((await createKey({ name: `killed ${i}` })).record.key_id);
    proxy.inject('PutItem', { kind: 'stall' }); // the child's only PutItems are its activity copies
    child = spawn(process.execPath, ['--import', 'tsx', 'test/support/disable-keys-child.ts', branchId, ...keyIds], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, DYNAMODB_ENDPOINT: proxy.endpoint, KEY_EVENTS_FILE: file },
      stdio: 'ignore',
    });
    const held = (requests: readonly SeenRequest[]) =>
      requests.filter((r) => r.operation === 'PutItem' && r.outcome === 'stall').length;
    await Promise.race([proxy.until((requests) => held(requests) >= ACTIONS), once(child, 'exit')]);
    expect(held(proxy.requests)).toBe(ACTIONS);
    child.kill('SIGKILL');
    await once(child, 'exit');
    // Every key write landed; no copy and no event did.
    expect(
      (await scanRaw(tableNames.keys)).filter((item) => keyIds.includes(item.key_id!.S!) && item.disabled_at),
    ).toHaveLength(ACTIONS);
    expect(eventsIn(file)).toEqual([]);
    return keyIds;
  };

  const expectEachActionSent = async (file: string, keyIds: readonly string[]) => {
    const sent = eventsIn(file).filter((event) => keyIds.includes(event.detail.key_id));
    expect(sent.map((event) => event['detail-type'])).toEqual(Array(ACTIONS).fill('Key Disabled'));
    expect(sent.map((event) => event.detail.event_id).sort()).toEqual(keyIds.map((id) => `${id}#2`).sort());
    expect(sent.every((event) => event.detail.actor === 'killed-child')).toBe(true);
    expect(await pendingOn(keyIds)).toBe(0);
    expect(await loggedActions(keyIds)).toEqual(keyIds.flatMap((id) => [`${id}:created`, `${id}:disabled`]).sort());
  };

  it('the next CLI run against the local target sends their events, once', async () => {
    const file = join(tempDir(), 'events.jsonl');
    const keyIds = await killMidAction(file);
    const run = await runCli(['keys', 'list', '--branch', branchId, '--json'], { KEY_EVENTS_FILE: file });
    expect(run.code).toBe(0);
    await expectEachActionSent(file, keyIds);
    await runCli(['keys', 'list', '--branch', branchId, '--json'], { KEY_EVENTS_FILE: file });
    expect(eventsIn(file).filter((event) => keyIds.includes(event.detail.key_id))).toHaveLength(ACTIONS);
  });

  it('the next stack start sends their events', async () => {
    const file = join(tempDir(), 'events.jsonl');
    const keyIds = await killMidAction(file);
    const { startLocalEnvironment } = await import('../lib/local/environment');
    const saved = { ...process.env };
    process.env.KEY_EVENTS_FILE = file;
    const environment = await startLocalEnvironment({
      port: 0,
      dynamoPort: 0,
      dynamoEndpoint: process.env.DYNAMODB_ENDPOINT!,
    });
    try {
      await expectEachActionSent(file, keyIds);
    } finally {
      await environment.close();
      process.env = saved;
    }
  });
});
