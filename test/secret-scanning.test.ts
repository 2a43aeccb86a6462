/**
 * GitHub secret scanning reports (docs/decisions.md "Leaked keys") through the real function on the
 * embedded DynamoDB: reports signed with key pairs the test generates, public keys from a `file:`
 * URL, key events to a JSON-lines file. No raw reported token may reach a log or the events file.
 */
import { verify } from 'node:crypto';
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateApiKey, hashApiKey } from '../shared/domain/api-key';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { MAX_REPORT_BYTES, MAX_REPORTED_SOURCE_CHARS, MAX_REPORTED_URL_CHARS } from '../shared/domain/secret-scanning';
import { startFaultProxy } from './support/fault-proxy';
import { mainBranch } from './support/fixtures';
import {
  captureLogs,
  countCommands,
  createKey,
  expectError,
  FAST_FAILURE_ENV,
  fixtureClient,
  fixtureKeys,
  headerOf,
  invoke,
  loadService,
  setUpBranches,
  tableNames,
  type Service,
} from './support/harness';
import { secretScanningRoute } from '../shared/api/routes';
import { REPORT_CONCURRENCY, REPORT_RESERVE_MS } from '../shared/api/secret-scanning';
import { ActivityRepository } from '../shared/data/repositories';
import {
  keysDocument,
  newSigningKey,
  readEventsFile,
  reported,
  reportInput,
  signatureTwins,
  signBody,
} from './support/secret-scanning';

const github = newSigningKey('github-key-1');
const stranger = newSigningKey('github-key-1'); // same identifier, another key pair
const document = keysDocument([github]);
const eventsFile = join(mkdtempSync(join(tmpdir(), 'key-events-')), 'events.jsonl');

let service: Service;

beforeAll(async () => {
  await setUpBranches();
  service = await loadService({ SECRET_SCANNING_KEYS_URL: document.url, KEY_EVENTS_FILE: eventsFile });
});

const report = (body: string | Buffer, options: Parameters<typeof reportInput>[1] = { key: github }) =>
  invoke(service.secretScanning, reportInput(body, options));
const branchCall = (key: string) => invoke(service.getBranch, { path: '/v1/branch', key });
const events = () => readEventsFile(eventsFile);

describe('a leaked live key', () => {
  it('is revoked at once: the report answers true_positive and the next call is 401 revoked_api_key', async () => {
    const { key, record } = await createKey({ name: 'CI deploys' });
    expect((await branchCall(key)).statusCode).toBe(200);
    const before = events().length;
    const logs = captureLogs(service.logger);
    let res;
    try {
      res = await report(JSON.stringify([reported(key)]));
    } finally {
      logs.restore();
    }
    expect(res.statusCode).toBe(200);
    expect(res.json).toEqual([{ token_hash: hashApiKey(key), token_type: 'branch_api_key', label: 'true_positive' }]);
    expectError(await branchCall(key), 401, 'revoked_api_key');

    // One Key Leaked event: who, where it was found, never the key.
    const sent = events().slice(before);
    expect(sent).toEqual([
      {
        source: 'branch-api',
        'detail-type': 'Key Leaked',
        time: expect.any(String),
        detail: {
          key_id: record.key_id,
          branch_id: mainBranch.id,
          name: 'CI deploys',
          start: record.start,
          actor: 'github-secret-scanning',
          time: expect.any(String),
          event_id: `${record.key_id}#${record.version! + 1}`,
          url: 'https://github.com/octo/repo/blob/abc/config.js',
          source: 'content',
        },
      },
    ]);
    expect(readFileSync(eventsFile, 'utf8')).not.toContain(key);
    // The `leaked` activity entry: who, where, what changed.
    const activity = new ActivityRepository(fixtureClient, tableNames.activity);
    expect((await activity.page({ branchId: mainBranch.id, keyId: record.key_id, limit: 10 })).entries).toContainEqual(
      expect.objectContaining({
        action: 'leaked',
        actor: 'github-secret-scanning',
        details: { url: 'https://github.com/octo/repo/blob/abc/config.js', source: 'content' },
        changes: { revoked_at: { before: null, after: expect.any(String) } },
      }),
    );
    // The log says what happened, by key id; the token appears nowhere, not even in the response.
    expect(logs.entries).toContainEqual(
      expect.objectContaining({ message: 'Secret scanning report', tokens: 1, revoked_key_ids: [record.key_id] }),
    );
    expect(logs.text).not.toContain(key);
    expect(res.body).not.toContain(key);
  });

  it('is idempotent: the same report again is still true_positive and changes nothing more', async () => {
    const { key, record } = await createKey();
    const body = JSON.stringify([reported(key)]);
    const first = await report(body);
    const revokedAt = (await fixtureKeys.getById(record.key_id))?.revoked_at;
    const afterFirst = events().length;
    const second = await report(body);
    expect(second.json).toEqual(first.json);
    expect((await fixtureKeys.getById(record.key_id))?.revoked_at).toBe(revokedAt);
    expect(events()).toHaveLength(afterFirst);
  });

  it('a high-S signature is accepted like its low-S twin and is harmless: the resend changes nothing', async () => {
    const { key, record } = await createKey();
    const body = JSON.stringify([reported(key)]);
    const { lowS, highS } = signatureTwins(signBody(body, github));
    expect(lowS).not.toBe(highS);
    // Both are valid signatures of the body: ECDSA can't tell a signer's from the twin.
    for (const signature of [lowS, highS]) {
      expect(verify('sha256', Buffer.from(body), github.publicPem, Buffer.from(signature, 'base64'))).toBe(true);
    }
    const first = await report(body, { key: github, signature: highS });
    expect([first.statusCode, first.json]).toEqual([200, [expect.objectContaining({ label: 'true_positive' })]]);
    const revokedAt = (await fixtureKeys.getById(record.key_id))?.revoked_at;
    const afterFirst = events().length;
    const second = await report(body, { key: github, signature: lowS });
    expect([second.statusCode, second.json]).toEqual([200, first.json]);
    expect((await fixtureKeys.getById(record.key_id))?.revoked_at).toBe(revokedAt);
    expect(events()).toHaveLength(afterFirst);
  });

  it('an already revoked key is a true_positive with no new event', async () => {
    const { key, record } = await createKey();
    await fixtureKeys.revoke(record.key_id);
    const before = events().length;
    const res = await report(JSON.stringify([reported(key)]));
    expect(res.json[0].label).toBe('true_positive');
    expect(events()).toHaveLength(before);
  });
});

describe('each token on its own', () => {
  const answerOf = (key: string, label = 'true_positive') => ({
    token_hash: hashApiKey(key),
    token_type: 'branch_api_key',
    label,
  });

  it('a 450 KB url and a long source are cut before they are stored: the key is revoked, the others too', async () => {
    const leaked = await createKey();
    const other = await createKey();
    const url = `https://github.com/octo/repo/blob/abc/${'u'.repeat(450 * 1024)}`;
    const source = 's'.repeat(1000);
    const res = await report(JSON.stringify([{ ...reported(leaked.key, url), source }, reported(other.key)]));
    expect([res.statusCode, res.json]).toEqual([200, [answerOf(leaked.key), answerOf(other.key)]]);
    expectError(await branchCall(leaked.key), 401, 'revoked_api_key');
    expectError(await branchCall(other.key), 401, 'revoked_api_key');
    const activity = new ActivityRepository(fixtureClient, tableNames.activity);
    expect(
      (await activity.page({ branchId: mainBranch.id, keyId: leaked.record.key_id, limit: 10 })).entries,
    ).toContainEqual(
      expect.objectContaining({
        action: 'leaked',
        details: { url: url.slice(0, MAX_REPORTED_URL_CHARS), source: source.slice(0, MAX_REPORTED_SOURCE_CHARS) },
      }),
    );
  });

  it('a token whose key item cannot take the leak: every other is revoked, and a 500 so GitHub sends it again', async () => {
    const [first, stuck, last] = [await createKey(), await createKey(), await createKey()];
    // A key item so close to DynamoDB's 400 KB item limit that the `leaked` write is refused.
    await fixtureClient.send(
      new UpdateCommand({
        TableName: tableNames.keys,
        Key: { key_hash: hashApiKey(stuck.key) },
        UpdateExpression: 'SET padding = :padding',
        ExpressionAttributeValues: { ':padding': 'x'.repeat(408_000) },
      }),
    );
    const url = `https://github.com/octo/repo/blob/abc/${'a'.repeat(MAX_REPORTED_URL_CHARS)}`;
    const logs = captureLogs(service.logger);
    let res;
    try {
      res = await report(JSON.stringify([first, stuck, last].map(({ key }) => reported(key, url))));
    } finally {
      logs.restore();
    }
    // A 200 would end GitHub's deliveries while the key still works.
    expectError(res, 500, 'internal_error');
    expectError(await branchCall(first.key), 401, 'revoked_api_key');
    expectError(await branchCall(last.key), 401, 'revoked_api_key');
    expect((await fixtureKeys.getById(stuck.record.key_id))?.revoked_at).toBeUndefined();
    expect(logs.entries).toContainEqual(
      expect.objectContaining({
        level: 'ERROR',
        message: 'Reported token not revoked',
        index: 1,
        token_hash: hashApiKey(stuck.key),
      }),
    );
    expect(logs.entries).toContainEqual(
      expect.objectContaining({
        message: 'Secret scanning report',
        tokens: 3,
        not_revoked: 1,
        revoked_key_ids: expect.arrayContaining([first.record.key_id, last.record.key_id]),
      }),
    );
    for (const { key } of [first, stuck, last]) expect(logs.text).not.toContain(key);
  });

  it('a leaked key whose activity entry cannot be copied is revoked, and the failed copy is logged', async () => {
    // Fault: the function names an activity table that does not exist.
    const broken = await loadService({
      SECRET_SCANNING_KEYS_URL: document.url,
      KEY_EVENTS_FILE: eventsFile,
      ACTIVITY_TABLE: 'no-such-activity-table',
    });
    const leaked = await createKey();
    const logs = captureLogs(broken.logger);
    let res;
    try {
      res = await invoke(broken.secretScanning, reportInput(JSON.stringify([reported(leaked.key)]), { key: github }));
    } finally {
      logs.restore();
    }
    expect(res.json).toEqual([answerOf(leaked.key)]);
    expectError(await branchCall(leaked.key), 401, 'revoked_api_key');
    expect(logs.entries).toContainEqual(
      expect.objectContaining({ level: 'ERROR', message: 'Leaked key revoked, its activity entry not copied yet' }),
    );
    expect(logs.text).not.toContain(leaked.key);
  });

  it('a token the database is too busy to revoke: the others settled, a 503 so GitHub resends, the resend revokes it', async () => {
    const proxy = await startFaultProxy(process.env.DYNAMODB_ENDPOINT!);
    try {
      const throttled = await loadService({
        ...FAST_FAILURE_ENV,
        DYNAMODB_ENDPOINT: proxy.endpoint,
        SECRET_SCANNING_KEYS_URL: document.url,
        KEY_EVENTS_FILE: eventsFile,
      });
      const stuck = await createKey();
      const unknown = generateApiKey();
      const body = JSON.stringify([reported(stuck.key), reported(unknown), reported('wsk_short')]);
      proxy.inject('UpdateItem', { kind: 'throttle' }); // every key write throttled; reads pass
      const logs = captureLogs(throttled.logger);
      let res;
      try {
        res = await invoke(throttled.secretScanning, reportInput(body, { key: github }));
      } finally {
        logs.restore();
      }
      expectError(res, 503, 'service_unavailable');
      // One batch read for both well-formed tokens; only the key is read again, to be revoked.
      expect(proxy.operations().filter((operation) => /^(Batch)?GetItem$/.test(operation))).toEqual([
        'BatchGetItem',
        'GetItem',
      ]);
      expect(logs.entries).toContainEqual(
        expect.objectContaining({ message: 'Secret scanning report', tokens: 3, not_revoked: 1 }),
      );
      expect((await branchCall(stuck.key)).statusCode).toBe(200);

      proxy.clear();
      const resent = await invoke(throttled.secretScanning, reportInput(body, { key: github }));
      expect(resent.statusCode).toBe(200);
      expect(resent.json.map(({ label }: { label: string }) => label)).toEqual([
        'true_positive',
        'false_positive',
        'false_positive',
      ]);
      expectError(await branchCall(stuck.key), 401, 'revoked_api_key');
    } finally {
      await proxy.close();
    }
  });

  it('a 1 MB report is answered in full, its revocations overlapped up to the bound, a repeated token judged once', async () => {
    const live = await Promise.all(Array.from({ length: 40 }, () => createKey()));
    const liveKeys = new Set(live.map(({ key }) => key));
    const tokens = [...live.map(({ key }) => key), live[0]!.key];
    // Long urls keep the entry count in the hundreds, so the test's time doesn't grow with the machine's load.
    const url = `https://github.com/octo/repo/blob/abc/${'p'.repeat(1900)}`;
    const entrySize = JSON.stringify(reported(generateApiKey(), url)).length + 1;
    while ((tokens.length + 1) * entrySize < MAX_REPORT_BYTES) tokens.push(generateApiKey());
    const body = JSON.stringify(tokens.map((token) => reported(token, url)));
    expect(body.length).toBeGreaterThan(MAX_REPORT_BYTES - entrySize);
    expect(body.length).toBeLessThanOrEqual(MAX_REPORT_BYTES);

    // Counts the table calls in flight at once (a middleware step of the real client; nothing is stubbed).
    const client = service.runtime.documentClient;
    let inFlight = 0;
    let mostInFlight = 0;
    client.middlewareStack.add(
      (next) => async (args) => {
        mostInFlight = Math.max(mostInFlight, (inFlight += 1));
        try {
          return await next(args);
        } finally {
          inFlight -= 1;
        }
      },
      { step: 'initialize', name: 'countInFlight' },
    );
    const counter = countCommands(client);
    let res;
    try {
      res = await report(body);
    } finally {
      client.middlewareStack.remove('countInFlight');
    }
    expect(res.statusCode).toBe(200);
    expect(res.json).toEqual(
      tokens.map((token) => (liveKeys.has(token) ? answerOf(token) : answerOf(token, 'false_positive'))),
    );
    for (const { record } of live)
      expect((await fixtureKeys.getById(record.key_id))?.revoked_at).toEqual(expect.any(String));
    // Which tokens are keys: one batch read per 100; each live key is then read to be revoked.
    const batches = Math.ceil(new Set(tokens).size / 100);
    expect(counter.commands.filter((command) => command === 'BatchGetItemCommand')).toHaveLength(batches);
    expect(counter.commands.filter((command) => command === 'GetItemCommand')).toHaveLength(live.length);
    expect(mostInFlight).toBe(REPORT_CONCURRENCY);
  });
});

describe('reports right after a start', () => {
  it('five at once all succeed: they wait for the public keys read already under way', async () => {
    const fresh = await loadService({ SECRET_SCANNING_KEYS_URL: document.url, KEY_EVENTS_FILE: eventsFile });
    const { key } = await createKey();
    const body = JSON.stringify([reported(key)]);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => invoke(fresh.secretScanning, reportInput(body, { key: github }))),
    );
    expect(answers.map(({ statusCode }) => statusCode)).toEqual([200, 200, 200, 200, 200]);
    expectError(await branchCall(key), 401, 'revoked_api_key');
  });
});

describe('a report that takes long', () => {
  it("the red team's: 1 MB of well-formed tokens that are no key, 2 live keys at the end — a 200 with both revoked, one read per 100 tokens", async () => {
    const live = [await createKey(), await createKey()];
    const entry = (token: string) => ({ token, type: 't', url: 'u', source: 's' });
    const entrySize = JSON.stringify(entry(generateApiKey())).length + 1;
    const strangers = Array.from({ length: Math.floor(MAX_REPORT_BYTES / entrySize) - 2 }, () => generateApiKey());
    const tokens = [...strangers, ...live.map(({ key }) => key)];
    const body = JSON.stringify(tokens.map(entry));
    expect(body.length).toBeLessThanOrEqual(MAX_REPORT_BYTES);
    expect(strangers.length).toBeGreaterThan(10_000);

    const counter = countCommands(service.runtime.documentClient);
    const res = await report(body);
    const made = counter.commands;
    expect(res.statusCode).toBe(200);
    expect(res.json.slice(-2)).toEqual(
      live.map(({ key }) => expect.objectContaining({ token_hash: hashApiKey(key), label: 'true_positive' })),
    );
    for (const { key } of live) expectError(await branchCall(key), 401, 'revoked_api_key');
    // Tokens that are no key cost a share of a batch read, not a read each.
    expect(made.filter((command) => command === 'BatchGetItemCommand')).toHaveLength(Math.ceil(tokens.length / 100));
    expect(made.filter((command) => command === 'GetItemCommand')).toHaveLength(live.length);
  });

  it('whose revocations outlast the function: a 503 with what fit revoked, never a 500, and each resend goes on from there', async () => {
    const live = await Promise.all(Array.from({ length: REPORT_CONCURRENCY + 8 }, () => createKey()));
    const body = JSON.stringify(live.map(({ key }) => reported(key)));
    const counter = countCommands(service.runtime.documentClient);
    const revokedCount = async () =>
      (await Promise.all(live.map(({ record }) => fixtureKeys.getById(record.key_id)))).filter((k) => k?.revoked_at)
        .length;
    // A stand-in clock: the time left drops past the reserve once a key is written, so the test
    // counts writes, not time. What started before that runs to its end.
    const deliver = () => {
      counter.reset();
      const writes = () => counter.commands.filter((command) => command === 'UpdateItemCommand').length;
      const getRemainingTimeInMillis = () => REPORT_RESERVE_MS + (writes() === 0 ? 1000 : -1000);
      return invoke(service.secretScanning, reportInput(body, { key: github }), { getRemainingTimeInMillis });
    };

    const logs = captureLogs(service.logger);
    let first;
    try {
      first = await deliver();
    } finally {
      logs.restore();
    }
    expectError(first, 503, 'service_unavailable');
    expect(headerOf(first, 'retry-after')).toBe('1');
    expect(await revokedCount()).toBe(REPORT_CONCURRENCY);
    expect(logs.entries).toContainEqual(
      expect.objectContaining({ message: 'Secret scanning report', tokens: live.length, deferred: 8 }),
    );

    const second = await deliver();
    expect(second.statusCode).toBe(200);
    expect(second.json.map(({ label }: { label: string }) => label)).toEqual(live.map(() => 'true_positive'));
    expect(await revokedCount()).toBe(live.length);
    // The resend read only the keys still live: the revoked ones cost it nothing but the batch read.
    expect(counter.commands.filter((command) => command === 'GetItemCommand')).toHaveLength(8);
  });
});

describe('tokens that are not live keys', () => {
  it('unknown and malformed tokens are false positives and change nothing; entries keep their order', async () => {
    const { key } = await createKey();
    const unknown = generateApiKey();
    const tokens = [unknown, 'wsk_short', 'ghp_notours', key];
    const before = events().length;
    const res = await report(JSON.stringify(tokens.map((token) => reported(token))));
    expect(res.json.map((entry: { token_hash: string; label: string }) => [entry.token_hash, entry.label])).toEqual([
      [hashApiKey(unknown), 'false_positive'],
      [hashApiKey('wsk_short'), 'false_positive'],
      [hashApiKey('ghp_notours'), 'false_positive'],
      [hashApiKey(key), 'true_positive'],
    ]);
    expect(events().slice(before)).toHaveLength(1);
    for (const token of tokens) expect(res.body).not.toContain(token);
  });

  it('an empty report is an empty answer', async () => {
    const res = await report('[]');
    expect([res.statusCode, res.json]).toEqual([200, []]);
  });
});

describe('refusals', () => {
  const liveKeyReport = async () => {
    const { key } = await createKey();
    return { key, body: JSON.stringify([reported(key)]) };
  };

  /** The key still works: nothing in a refused report was acted on. */
  const expectUntouched = async (key: string) => expect((await branchCall(key)).statusCode).toBe(200);

  it.each([
    ['no identifier header', { key: github, omit: 'identifier' as const }],
    ['no signature header', { key: github, omit: 'signature' as const }],
    ['a signature by another key pair', { key: stranger }],
    ['an identifier the keys document does not list', { key: github, identifier: 'github-key-unknown' }],
    ['a signature that is not base64', { key: github, signature: '%%%not-base64%%%' }],
  ])('%s: 401 invalid_signature', async (_name, options) => {
    const { key, body } = await liveKeyReport();
    expectError(await report(body, options), 401, 'invalid_signature');
    await expectUntouched(key);
  });

  it('a tampered body (signed, then changed): 401 invalid_signature', async () => {
    const { key, body } = await liveKeyReport();
    const signature = signBody(body, github);
    const tampered = body.replace('content', 'commit');
    expectError(await report(tampered, { key: github, signature }), 401, 'invalid_signature');
    await expectUntouched(key);
  });

  it('nothing in the body is read before the signature: an unsigned non-JSON body is a 401, not a 400', async () => {
    expectError(await report('this is not JSON', { key: github, omit: 'signature' }), 401, 'invalid_signature');
  });

  it('over 1 MB: 413 payload_too_large, even when signed', async () => {
    const big = JSON.stringify([reported('x'.repeat(MAX_REPORT_BYTES))]);
    expectError(await report(big), 413, 'payload_too_large');
    const exactly = `[${' '.repeat(MAX_REPORT_BYTES - 2)}]`;
    expect((await report(exactly)).statusCode).toBe(200);
  });

  it.each([
    ['not JSON', 'token=wsk_123'],
    ['an object', '{"token":"wsk_x","type":"t","url":"u","source":"s"}'],
    ['an entry without a token', '[{"type":"t","url":"u","source":"s"}]'],
    ['a token that is not a string', '[{"token":1,"type":"t","url":"u","source":"s"}]'],
    ['null', 'null'],
  ])('signed but %s: 400 invalid_request', async (_name, body) => {
    expectError(await report(body), 400, 'invalid_request');
  });
});

describe('when the public keys cannot be read', () => {
  it('a report is 503 service_unavailable (GitHub sends it again) and nothing is revoked', async () => {
    const unreadable = await loadService({ SECRET_SCANNING_KEYS_URL: `${document.url}.missing` });
    const { key } = await createKey();
    const res = await invoke(unreadable.secretScanning, reportInput(JSON.stringify([reported(key)]), { key: github }));
    expectError(res, 503, 'service_unavailable');
    expect((await branchCall(key)).statusCode).toBe(200);
  });
});

describe('least privilege', () => {
  it('the report makes exactly the table calls its route declares (the CDK grants come from them)', async () => {
    const counter = countCommands(service.runtime.documentClient);
    const { key } = await createKey();
    counter.reset();
    await report(JSON.stringify([reported(key), reported(generateApiKey())]));
    const made = counter.sent.map(({ command, input }) => {
      const table = input.TableName ?? Object.keys(input.RequestItems)[0];
      return [
        `dynamodb:${command.replace(/Command$/, '')}`,
        Object.entries(tableNames).find(([, name]) => name === table)?.[0] ?? table,
      ];
    });
    const declared = secretScanningRoute.access.flatMap(({ table, actions }) =>
      actions.map((action) => [action, table]),
    );
    expect([...new Set(made.map((call) => call.join(' ')))].sort()).toEqual(
      declared.map((call) => call.join(' ')).sort(),
    );
  });
});

describe('the route', () => {
  it('answers another method with 405 Allow: POST', async () => {
    const res = await invoke(service.fallback, { method: 'GET', path: '/security/secret-scanning' });
    expectError(res, 405, 'method_not_allowed');
    expect(res.headers.Allow).toBe('POST');
  });
});
