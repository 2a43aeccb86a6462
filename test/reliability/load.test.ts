/**
 * The mixed load of `npm run load`, at CI size: the same module (bench/reliability/mixed-load.ts),
 * through the in-process local gateway on dynalite, with the same invariants: every status and
 * code as its request kind says, no connection error or timeout, and exactly one usage record per request
 * made with a known key (matched by X-Request-Id), none for the others. Plus secret hygiene.
 */
import { logger } from '../../shared/lambda/observability';
import { loadProblems, formatReport, runLoad, type LoadReport } from '../../bench/reliability/mixed-load';
import { loggedUsageRecords, unattributedRequests } from '../../bench/reliability/ledger';
import { SecretTracker } from '../../bench/reliability/secrets';
import { captureAllLogs, report, secretHygiene } from './support/suite';

const REQUESTS = Number(process.env.RELIABILITY_LOAD_REQUESTS ?? 600);
const CONNECTIONS = 8;

const secrets = new SecretTracker();
let logs: ReturnType<typeof captureAllLogs>;
let result: LoadReport;

beforeAll(async () => {
  logs = captureAllLogs([logger]);
  result = await runLoad({
    requests: REQUESTS,
    connections: CONNECTIONS,
    // A safety net, not a pass mark: the run is judged by counts, however long a busy machine takes.
    maxSeconds: 280,
    secrets,
    loggedRecords: () => loggedUsageRecords(logs.capture.entries),
    unattributed: () => unattributedRequests(logs.capture.entries),
  });
  report(`load (CI size):\n${formatReport(result)}`);
}, 300_000);

afterAll(() => logs?.restore());

it(`answers ${REQUESTS} mixed requests at concurrency ${CONNECTIONS} with only the expected statuses`, () => {
  expect(result.responses).toBe(REQUESTS);
  expect({ unexpected: result.unexpectedStatuses, samples: result.unexpectedSamples }).toEqual({
    unexpected: 0,
    samples: [],
  });
  expect({ errors: result.errors, timeouts: result.timeouts, stoppedEarly: result.stoppedEarly }).toEqual({
    errors: 0,
    timeouts: 0,
    stoppedEarly: false,
  });
  // Every kind of the mix was exercised.
  expect(result.kinds.filter((kind) => kind.requests === 0)).toEqual([]);
});

it('stored exactly one usage record per request made with a known key, and none for the others', () => {
  expect(loadProblems(result)).toEqual([]);
  expect(result.records.expected).toBeGreaterThan(REQUESTS / 2);
  expect(result.records.inTable).toBe(result.records.expected);
  expect(result.perKey.every((key) => key.expected > 0 && key.found === key.expected)).toBe(true);
});

it('stored and logged no plaintext key and no Authorization value', async () => {
  const hygiene = await secretHygiene(secrets, logs.capture.text);
  expect(hygiene.findings).toEqual([]);
  expect(hygiene.keys).toBe(6);
});
