/**
 * Routes of the "API usage" page and its CSV export: both read the same filters, so the CSV is
 * exactly what the page's filters select.
 */
import { Hono } from 'hono';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { notFound, queryChoice, queryValue } from './refusals';
import type { ConsoleContext, ConsoleEnv } from './session';
import { usagePage } from './usage-page';
import {
  allUsageRecords,
  BUCKETS,
  CSV_COLUMNS,
  csvRow,
  DEFAULT_PERIOD,
  isStatusFilter,
  loadUsageChart,
  loadUsageLog,
  PERIODS,
  ROUTE_CHOICES,
  type Bucket,
  type Period,
  type UsageFilters,
} from './usage-data';

/** The page's filters from its query; a value it does not offer is a 400, an unknown key a 404. */
const usageFilters = async (c: ConsoleContext) => {
  const branchId = c.req.param('branch')!;
  const keys = await c.var.ctx.keys.listByBranch(branchId);
  const period = queryChoice(c, 'period', Object.keys(PERIODS) as Period[]) ?? DEFAULT_PERIOD;
  const keyId = queryValue(c, 'key');
  if (keyId !== undefined && !keys.some((k) => k.key_id === keyId))
    throw notFound(`Branch ${branchId} has no key ${keyId}.`);
  const status = queryChoice(c, 'status', isStatusFilter);
  const route = queryChoice(c, 'route', ROUTE_CHOICES);
  const bucket = queryChoice(c, 'bucket', Object.keys(BUCKETS) as Bucket[], () => 'Calls are counted per hour or day.');
  const filters: UsageFilters = { branchId, period, bucket: bucket ?? PERIODS[period].bucket, now: new Date() };
  return { keys, filters: { ...filters, keyId, status, route } };
};

/**
 * The CSV's rows, a page of records at a time, after its header row and the `first` page (read
 * before the headers went out). A read failing later can no longer be a 500: `cut` ends the
 * connection, so the download is visibly incomplete rather than a file that looks whole.
 */
async function* csvRows(first: IteratorResult<UsageRecord[]>, pages: AsyncIterable<UsageRecord[]>, cut: () => void) {
  const rows = (records: UsageRecord[]) =>
    records.map((record) => csvRow(CSV_COLUMNS.map((column) => record[column]))).join('');
  yield csvRow(CSV_COLUMNS);
  if (!first.done) yield rows(first.value);
  try {
    for await (const records of pages) yield rows(records);
  } catch {
    cut();
  }
}

export const usageRoutes = new Hono<ConsoleEnv>()
  .get('/branches/:branch/usage', async (c) => {
    const { keys, filters } = await usageFilters(c);
    const cursor = queryValue(c, 'cursor');
    const newer = (queryValue(c, 'newer') ?? '').split('.').filter(Boolean);
    // The log first: a bad cursor fails before the chart's larger read starts.
    const log = await loadUsageLog(c.var.ctx, filters, cursor);
    const chart = await loadUsageChart(c.var.ctx, filters);
    return c.html(
      usagePage({
        ...filters,
        keys,
        chart,
        log: log.records,
        scanned: log.scanned,
        searchStopped: log.searchStopped,
        newer,
        cursor,
        nextCursor: log.nextPosition,
      }),
    );
  })
  .get('/branches/:branch/usage.csv', async (c) => {
    const { filters } = await usageFilters(c);
    const pages = allUsageRecords(c.var.ctx, filters);
    // Read the first page before the headers go out, so a failure is still a proper error page.
    const first = await pages.next();
    const filename = `usage-${filters.branchId.replace(/[^\w.-]/g, '_')}-${filters.period}.csv`;
    // Streamed as read, with backpressure.
    const rows = csvRows(first, pages, () => c.env.outgoing.destroy());
    return c.body(ReadableStream.from(rows).pipeThrough(new TextEncoderStream()), 200, {
      'Content-Type': 'text/csv; charset=utf-8',
      'Content-Disposition': `attachment; filename="${filename}"`,
    });
  });
