/**
 * Key actions never wait on events (docs/decisions.md "Key events"). Fault injection: a stand-in
 * EventBridge endpoint (test/support/event-bridge.ts) that the real SDK clients of the CLI, the
 * console and the secret scanning function reach, answering every PutEvents with a 500 while the
 * test says the bus is down. With the bus down, keys are created, updated, disabled, enabled and
 * revoked through the CLI, the console and a signed leak report: each action takes effect on the
 * API's next call. Once the bus is back, every event arrives once, in each key's action order.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { handler as getBranch } from '../functions/get-branch';
import { startConsole, type SettingsConsole } from '../lib/console/server';
import { createOperatorContext, type OperatorContext } from '../lib/operator/context';
import { disableKey, pendingNotice } from '../lib/operator/keys';
import { MAX_NAME_LENGTH } from '../lib/operator/limits';
import { eventBridgeKeyEvents } from '../shared/data/key-events';
import { ActivityRepository, KeysRepository } from '../shared/data/repositories';
import { hashApiKey } from '../shared/domain/api-key';
import { MAX_ALLOWED_IPS } from '../shared/domain/cidr';
import { EVENTS_NOT_SENT, FIRST_EVENT_NOT_SENT, MAX_PENDING_ENTRIES } from '../shared/domain/key-activity';
import type { KeySettingsChange } from '../shared/domain/key-record';
import { SCOPES } from '../shared/domain/schemas';
import { postForm } from './console/support';
import { runCli } from './support/cli';
import { eventBridgeEndpoint } from './support/event-bridge';
import { mainBranch } from './support/fixtures';
import { fixtureClient, invoke, loadService, setUpBranches, tableNames } from './support/harness';
import { keysDocument, newSigningKey, reported, reportInput } from './support/secret-scanning';

const BRANCH = mainBranch.id;
const BUS = { KEY_EVENT_BUS_NAME: 'branch-api-key-events' };
/** What an action's pending entry says while the bus refuses its event. */
const UNSENT = 'its destination did not take it: see "Key event not sent" in the log';
const HELD = "an earlier event of this key is not sent yet, and a key's events go in order";
/** Each test below runs many actions (the CLI's, each a process start): room for a busy machine. */
const MANY_ACTIONS_MS = 120_000;

let busUp = false;
/** Every event the bus accepted, in the order it accepted them. */
const accepted: { type: string; detail: Record<string, string> }[] = [];
let bus: Awaited<ReturnType<typeof eventBridgeEndpoint>>;
const savedEnv = { ...process.env };
let ctx: OperatorContext;
let settings: SettingsConsole;

beforeAll(async () => {
  await setUpBranches();
  bus = await eventBridgeEndpoint((_call, entries) => {
    if (!busUp) return { status: 500, body: { __type: 'InternalException', message: 'the bus is down (test fault)' } };
    const taken = (entries as Record<string, any>[]).map((entry) => {
      accepted.push({ type: entry.DetailType, detail: JSON.parse(entry.Detail) });
      return { EventId: `event-${accepted.length}` };
    });
    return { status: 200, body: { FailedEntryCount: 0, Entries: taken } };
  });
  // Every SDK client of this process and of the CLI children reaches the stand-in bus.
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_EVENTBRIDGE: bus.endpoint,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
  });
  ctx = createOperatorContext({ ...process.env, ...BUS });
  settings = await startConsole({ port: 0, ctx, branches: [BRANCH], log: () => undefined });
});
afterAll(async () => {
  await settings.close();
  ctx.close();
  await bus.close();
  process.env = savedEnv;
});

const cli = (args: string[]) => runCli([...args, '--json'], BUS);
/** What the API answers the key's next call: `ok` or the error code. */
const api = async (key: string): Promise<string> => {
  const response = await invoke(getBranch, { path: '/v1/branch', key });
  return response.statusCode === 200 ? 'ok' : (response.json.error.code as string);
};
/** The actions whose entries wait on the key, and whether each event was sent. */
const waiting = (pending: { action: string; sent: boolean; reason: string }[]) =>
  pending.map(({ action, sent, reason }) => [action, sent, reason]);
const eventsOf = (keyId: string) =>
  accepted.filter((event) => event.detail.key_id === keyId).map((event) => [event.type, event.detail.event_id]);
const inOrder = (keyId: string, types: string[]) => types.map((type, i) => [type, `${keyId}#${i + 1}`]);

/** Keys made in the tests below, with the event types their actions should send, in order. */
const made: { keyId: string; types: string[] }[] = [];

it(
  'the CLI: each action takes effect at once, exits 0, and says which events wait and why',
  async () => {
    const created = await cli(['keys', 'create', '--branch', BRANCH, '--scopes', 'read', '--name', 'cli']);
    expect(created.code).toBe(0);
    const { key, key_id: keyId } = created.json as { key: string; key_id: string };
    expect(waiting(created.json.pending)).toEqual([['created', false, UNSENT]]);
    // The log line says why the bus did not take it (never "undefined").
    const logged = JSON.parse(created.stderr.split('\n').find((line) => line.startsWith('{'))!);
    expect(logged).toMatchObject({ level: 'ERROR', message: 'Key event not sent' });
    expect(logged.key_event.detail.event_id).toBe(`${keyId}#1`);
    expect(logged.error).toContain('the bus is down (test fault)');
    expect(await api(key)).toBe('ok');

    const steps = [
      { args: ['update', keyId, '--name', 'cli renamed'], action: 'updated', then: 'ok' },
      { args: ['disable', keyId], action: 'disabled', then: 'disabled_api_key' },
      { args: ['enable', keyId], action: 'enabled', then: 'ok' },
      { args: ['revoke', keyId], action: 'revoked', then: 'revoked_api_key' },
    ];
    const actions = ['created'];
    for (const { args, action, then } of steps) {
      const result = await cli(['keys', ...args, '--branch', BRANCH]);
      expect([args[0], result.code]).toEqual([args[0], 0]);
      expect(result.stderr).not.toContain('"error":"undefined"');
      actions.push(action);
      // The oldest waiting event was tried and refused; the ones after it wait their turn.
      expect(waiting(result.json.pending)).toEqual(actions.map((done, i) => [done, false, i === 0 ? UNSENT : HELD]));
      expect(await api(key)).toBe(then);
    }
    made.push({ keyId, types: ['Key Created', 'Key Updated', 'Key Disabled', 'Key Enabled', 'Key Revoked'] });
  },
  MANY_ACTIONS_MS,
);

it(
  'the console: each action takes effect at once and shows the warning, never a 500',
  async () => {
    const created = await postForm(settings, BRANCH, `/branches/${BRANCH}/keys`, [
      ['name', 'console'],
      ['scopes', 'read'],
    ]);
    expect(created.status).toBe(200);
    const key = /id="new-key-value" class="key-value">(wsk_[0-9A-Za-z]+)</.exec(created.body)![1]!;
    const keyId = /Warning: key (key_[\w-]+) created, but its key event is not sent yet/.exec(created.body)![1]!;
    expect(await api(key)).toBe('ok');

    const keyUrl = (action: string) => `/branches/${BRANCH}/keys/${keyId}/${action}`;
    const steps: { action: string; done: string; fields: [string, string][]; then: string }[] = [
      {
        action: 'edit',
        done: 'updated',
        fields: [
          ['name', 'console renamed'],
          ['scopes', 'read'],
        ],
        then: 'ok',
      },
      { action: 'disable', done: 'disabled', fields: [], then: 'disabled_api_key' },
      { action: 'enable', done: 'enabled', fields: [], then: 'ok' },
      { action: 'revoke', done: 'revoked', fields: [], then: 'revoked_api_key' },
    ];
    for (const { action, done, fields, then } of steps) {
      const answer = await postForm(settings, BRANCH, keyUrl(action), fields);
      expect([action, answer.status]).toEqual([action, 200]);
      expect(answer.body).toContain(`(${keyId}) is ${done}`);
      expect(answer.body).toContain(`Warning: key ${keyId} ${done}, but its key event is not sent yet`);
      expect(await api(key)).toBe(then);
    }
    made.push({ keyId, types: ['Key Created', 'Key Updated', 'Key Disabled', 'Key Enabled', 'Key Revoked'] });
  },
  MANY_ACTIONS_MS,
);

it(
  'a signed leak report revokes a key whose earlier events are unsent: 200 true_positive, then 401',
  async () => {
    const github = newSigningKey('github-key-1');
    const service = await loadService({ SECRET_SCANNING_KEYS_URL: keysDocument([github]).url, ...BUS });
    const created = await cli(['keys', 'create', '--branch', BRANCH, '--scopes', 'read', '--name', 'leaky']);
    const { key, key_id: keyId } = created.json as { key: string; key_id: string };
    expect((await cli(['keys', 'disable', keyId, '--branch', BRANCH])).code).toBe(0);
    expect((await cli(['keys', 'enable', keyId, '--branch', BRANCH])).code).toBe(0);
    expect(await api(key)).toBe('ok');

    const report = await invoke(service.secretScanning, reportInput(JSON.stringify([reported(key)]), { key: github }));
    expect([report.statusCode, report.json]).toEqual([
      200,
      [{ token_hash: hashApiKey(key), token_type: 'branch_api_key', label: 'true_positive' }],
    ]);
    expect(await api(key)).toBe('revoked_api_key');
    made.push({ keyId, types: ['Key Created', 'Key Disabled', 'Key Enabled', 'Key Leaked'] });
  },
  MANY_ACTIONS_MS,
);

it(
  'once the bus is back, the next command sends every event once, in each key’s action order',
  async () => {
    expect(accepted).toEqual([]);
    busUp = true;
    expect((await cli(['keys', 'list', '--branch', BRANCH])).code).toBe(0);
    for (const { keyId, types } of made) expect(eventsOf(keyId)).toEqual(inOrder(keyId, types));
    const ids = accepted.map((event) => event.detail.event_id);
    expect(new Set(ids).size).toBe(ids.length);
    // Nothing waits any more: the next command sends nothing.
    expect((await cli(['keys', 'list', '--branch', BRANCH])).code).toBe(0);
    expect(accepted.map((event) => event.detail.event_id)).toEqual(ids);
  },
  MANY_ACTIONS_MS,
);

describe(`past ${MAX_PENDING_ENTRIES} entries waiting on one key`, () => {
  /** The largest settings an entry can record, two ways, so every update changes every one. */
  const largest = (variant: number): KeySettingsChange => ({
    name: (variant ? '€' : '£').repeat(MAX_NAME_LENGTH),
    scopes: variant ? [...SCOPES] : [...SCOPES].reverse(),
    expires_at: `2099-0${variant + 1}-01T00:00:00.000Z`,
    allowed_ips: Array.from(
      { length: MAX_ALLOWED_IPS },
      (_, i) => `2001:db8:ffff:ffff:ffff:ffff:${variant ? 'eeee' : 'dddd'}:${(0x1000 + i).toString(16)}/128`,
    ),
    rate_limit: variant ? '100000/h' : '99999/min',
  });

  it(
    'the oldest fold into the next, which counts the events never sent; every action stays in the log',
    async () => {
      busUp = false;
      const keys = new KeysRepository(
        fixtureClient,
        tableNames.keys,
        new ActivityRepository(fixtureClient, tableNames.activity),
        eventBridgeKeyEvents(bus.client, BUS.KEY_EVENT_BUS_NAME, { error: () => undefined }),
      );
      const { key, record } = await keys.create({ branchId: BRANCH, scopes: ['read'], actor: 'alice' });
      const keyId = record.key_id;
      const ACTIONS = MAX_PENDING_ENTRIES + 5;
      for (let i = 1; i < ACTIONS; i += 1) {
        // The settings, not `changed`: on a busy machine the SDK may resend a write that landed.
        const { record: updated } = await keys.update({ branchId: BRANCH, keyId, actor: 'alice' }, largest(i % 2));
        expect(updated.name).toBe(largest(i % 2).name);
      }
      // The last action through the operator library: it takes effect, and its warnings say what was folded.
      const disabled = await disableKey(ctx, { branchId: BRANCH, keyId });
      expect(await api(key)).toBe('disabled_api_key');
      const folded = ACTIONS + 1 - MAX_PENDING_ENTRIES;
      expect(disabled.pending).toHaveLength(MAX_PENDING_ENTRIES);
      expect(disabled.pending![0]).toMatchObject({ action: 'updated', events_not_sent: folded });
      expect(pendingNotice(disabled.pending![0]!)).toContain(
        `(${folded} older events of this key were folded into it, never sent)`,
      );
      const stored = (await keys.outbox.finishKey(hashApiKey(key))).map(({ entry }) => entry);
      // Entries 1 to 6 folded into entry 7, which now counts them; 7 to 26 wait.
      expect(stored.map(({ activity_id }) => activity_id)).toEqual(
        Array.from({ length: MAX_PENDING_ENTRIES }, (_, i) => `${keyId}#${folded + 1 + i}`),
      );
      expect(stored[0]!.details).toEqual({ [EVENTS_NOT_SENT]: String(folded), [FIRST_EVENT_NOT_SENT]: `${keyId}#1` });
      const item = await fixtureClient.send(
        new GetCommand({ TableName: tableNames.keys, Key: { key_hash: hashApiKey(key) } }),
      );
      // The bound's point: the item stays far below DynamoDB's 400 KB (its JSON is larger than its stored size).
      expect(Buffer.byteLength(JSON.stringify(item.Item))).toBeLessThan(200_000);
      const logged = await new ActivityRepository(fixtureClient, tableNames.activity).page({
        branchId: BRANCH,
        keyId,
        limit: 50,
      });
      expect(logged.entries).toHaveLength(ACTIONS + 1);

      busUp = true;
      expect(await keys.outbox.finishAll()).toMatchObject({ unsent: 0, uncopied: 0 });
      const sent = accepted.filter((event) => event.detail.key_id === keyId);
      expect(sent.map((event) => event.detail.event_id)).toEqual(stored.map(({ activity_id }) => activity_id));
      expect(sent[0]!.detail).toMatchObject({
        [EVENTS_NOT_SENT]: String(folded),
        [FIRST_EVENT_NOT_SENT]: `${keyId}#1`,
      });
    },
    MANY_ACTIONS_MS,
  );
});
