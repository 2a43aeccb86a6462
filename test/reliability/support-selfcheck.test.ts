/**
 * The instruments of the reliability suites can fail: the ledger reports each kind of accounting
 * error and the secret tracker finds a secret in each form it could leak in. (Without this, a
 * "0 lost" or "0 found" elsewhere could come from an instrument that never finds anything.)
 */
import { generateApiKey } from '../../shared/domain/api-key';
import { UsageLedger, type SeenRecord } from '../../bench/reliability/ledger';
import { MIN_SECRET_LENGTH, SecretTracker } from '../../bench/reliability/secrets';

const record = (request_id: string, key_id = 'key_a', status = 200): SeenRecord => ({ request_id, key_id, status });

describe('UsageLedger', () => {
  const ledger = new UsageLedger();
  ledger.expect('stored', { keyId: 'key_a', status: 200 });
  ledger.expect('logged', { keyId: 'key_a', status: 200 });
  ledger.expect('lost', { keyId: 'key_a', status: 200 });
  ledger.expect('twice', { keyId: 'key_a', status: 200 });
  ledger.expect('wrong-status', { keyId: 'key_a', status: 503 });
  ledger.expect('no-record', null);
  ledger.expect('unattributed', { keyId: 'key_a', status: 503, mayBeUnattributed: true });
  ledger.expect('not-unattributable', { keyId: 'key_a', status: 200 });
  const audit = ledger.audit(
    [record('stored'), record('twice'), record('twice'), record('wrong-status'), record('no-record'), record('stray')],
    [record('logged'), record('stored')],
    new Set(['unattributed', 'not-unattributable']),
  );

  it('counts where each expected record went', () => {
    expect({
      expected: audit.expected,
      inTable: audit.inTable,
      logged: audit.logged,
      unattributed: audit.unattributed,
    }).toEqual({ expected: 7, inTable: 3, logged: 1, unattributed: 1 });
  });

  it('reports lost, unexpected, duplicated, mismatched and stored-and-logged records', () => {
    expect(audit.lost.sort()).toEqual(['lost', 'not-unattributable']);
    expect(audit.unexpected.sort()).toEqual(['no-record', 'stray']);
    expect(audit.duplicates).toEqual(['twice']);
    expect(audit.mismatched).toEqual(['wrong-status']);
    expect(audit.storedAndLogged).toEqual(['stored']);
  });

  it('refuses a request id seen twice or missing', () => {
    expect(() => ledger.expect('stored', null)).toThrow(/seen twice/);
    expect(() => ledger.expect('', null)).toThrow(/X-Request-Id/);
  });
});

describe('SecretTracker', () => {
  const key = generateApiKey();
  const tracker = new SecretTracker();
  tracker.key(key);
  const header = 'Bearer\twsk_"quoted"\u0001value-long-enough';
  tracker.authorization(header);
  tracker.authorization('Basic abc');

  it.each([
    ['the key as is', `{"x":"${key}"}`, 'key'],
    ['the key without its prefix', `token=${key.slice(4)}`, 'key'],
    ['a header value as sent', `raw ${header} raw`, 'authorization'],
    [
      'a header value JSON-escaped, as a log line carries it',
      JSON.stringify({ authorization: header }),
      'authorization',
    ],
  ])('finds %s', (_what, haystack, what) => {
    expect(tracker.findIn(haystack).map((finding) => finding.what)).toContain(what);
  });

  it('ignores what is not a secret, and never reports a secret whole', () => {
    expect(tracker.counts).toEqual({ keys: 1, authorizations: 1 });
    expect('Basic abc'.length).toBeLessThan(MIN_SECRET_LENGTH);
    expect(tracker.findIn(`WWW-Authenticate: Bearer realm="branch-api" ${key.slice(0, 8)}`)).toEqual([]);
    expect(JSON.stringify(tracker.findIn(key))).not.toContain(key.slice(10));
  });
});
