/**
 * Usage-record accounting: what each request should have left behind (one record against its
 * key, or nothing), checked against the usage table and the records the service logged whole at
 * error level when it could not store them. "0 lost" means every expected record is in one of
 * the two places; and the store it reads. `npm run load` and the reliability tests share it.
 */
import { paginateScan, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { readDynamoDbSettings, readTableNames } from '../../shared/config/env';
import { createDocumentClient } from '../../shared/data/dynamodb';
import { createRepositories } from '../../shared/data/repositories';
import { ensureTables } from '../../lib/operator/tables';

export interface SeenRecord {
  request_id: string;
  key_id: string;
  status: number;
  [field: string]: unknown;
}

export interface Expectation {
  keyId: string;
  status: number;
  /**
   * The key could not even be looked up (the database was gone before the key was read): then
   * there is no known key and no record, only the "Call without a known key" log line.
   */
  mayBeUnattributed?: boolean;
}

export interface UsageAudit {
  requests: number;
  /** Requests made with a known key: each must leave exactly one record. */
  expected: number;
  inTable: number;
  logged: number;
  /** Expected records the service never learned a key for (database gone before the key lookup). */
  unattributed: number;
  /** Request ids of expected records found nowhere. */
  lost: string[];
  /** Records for requests that should have none (no key, unknown key, unknown route). */
  unexpected: string[];
  /** Request ids with more than one record in the table. */
  duplicates: string[];
  /** Request ids both stored and logged as not stored (at-least-once, not lost). */
  storedAndLogged: string[];
  /** Records whose key or status is not the request's. */
  mismatched: string[];
}

export class UsageLedger {
  private readonly expectations = new Map<string, Expectation | null>();

  /** Registers a request: `null` when no record may exist for it. */
  expect(requestId: string, expectation: Expectation | null): void {
    if (!requestId) throw new Error('A response without X-Request-Id cannot be accounted for');
    if (this.expectations.has(requestId)) throw new Error(`Request id ${requestId} seen twice`);
    this.expectations.set(requestId, expectation);
  }

  get size(): number {
    return this.expectations.size;
  }

  audit(
    table: readonly SeenRecord[],
    logged: readonly SeenRecord[] = [],
    unattributed = new Set<string>(),
  ): UsageAudit {
    const count = (records: readonly SeenRecord[]) => {
      const byId = new Map<string, SeenRecord[]>();
      for (const record of records) byId.set(record.request_id, [...(byId.get(record.request_id) ?? []), record]);
      return byId;
    };
    const stored = count(table);
    const logs = count(logged);
    const audit: UsageAudit = {
      requests: this.expectations.size,
      expected: 0,
      inTable: 0,
      logged: 0,
      unattributed: 0,
      lost: [],
      unexpected: [],
      duplicates: [],
      storedAndLogged: [],
      mismatched: [],
    };
    for (const [requestId, expectation] of this.expectations) {
      const inTable = stored.get(requestId) ?? [];
      const inLogs = logs.get(requestId) ?? [];
      if (!expectation) {
        if (inTable.length + inLogs.length > 0) audit.unexpected.push(requestId);
        continue;
      }
      audit.expected += 1;
      if (inTable.length > 1) audit.duplicates.push(requestId);
      if (inTable.length > 0 && inLogs.length > 0) audit.storedAndLogged.push(requestId);
      if (inTable.length > 0) audit.inTable += 1;
      else if (inLogs.length > 0) audit.logged += 1;
      else if (expectation.mayBeUnattributed && unattributed.has(requestId)) audit.unattributed += 1;
      else audit.lost.push(requestId);
      for (const record of [...inTable, ...inLogs]) {
        if (record.key_id !== expectation.keyId || record.status !== expectation.status) {
          audit.mismatched.push(requestId);
          break;
        }
      }
    }
    for (const requestId of [...stored.keys(), ...logs.keys()]) {
      if (!this.expectations.has(requestId)) audit.unexpected.push(requestId);
    }
    return audit;
  }
}

/** The tables the environment names, created if missing, and their repositories; `destroy` when done. */
export const openStore = async () => {
  const tables = readTableNames(process.env);
  const client = createDocumentClient(readDynamoDbSettings(process.env), process.env);
  await ensureTables(client, tables);
  return { client, tables, ...createRepositories(client, tables) };
};

/** Every item of a table, unmarshalled (verification only: request paths never Scan). */
export const scanAll = async (
  client: DynamoDBDocumentClient,
  TableName: string,
): Promise<Record<string, unknown>[]> => {
  const items: Record<string, unknown>[] = [];
  for await (const page of paginateScan({ client }, { TableName })) items.push(...(page.Items ?? []));
  return items;
};

/** A line of the service's JSON log: the fields read here. */
export interface LogEntry {
  level?: string;
  message?: string;
  request_id?: string;
  usage_record?: SeenRecord;
}

/** Records the service could not store and logged whole at error level: kept, to be replayed. */
export const loggedUsageRecords = (entries: readonly LogEntry[]): SeenRecord[] =>
  entries
    .filter((entry) => entry.level === 'ERROR' && entry.message === 'Usage record not stored')
    .map((entry) => entry.usage_record!);

/** Requests the service logged as made without a known key. */
export const unattributedRequests = (entries: readonly LogEntry[]): Set<string> =>
  new Set(entries.filter((entry) => entry.message === 'Call without a known key').map((entry) => entry.request_id!));
