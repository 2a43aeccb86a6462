/**
 * Routes of the "API usage" page and its CSV export: both read the same filters, so the CSV is
 * exactly what the page's filters select.
 */
import { SECURITY_HEADERS } from './security';
import { Refusal, notFound, queryValue } from './http';
import { page, type ConsoleRoute, type RouteRequest } from './routes';
import { usagePage } from './usage-page';
import {
  allUsageRecords,
  CSV_COLUMNS,
  csvRow,
  DEFAULT_PERIOD,
  isStatusFilter,
  loadUsageChart,
  loadUsageLog,
  PERIODS,
  ROUTE_CHOICES,
  type Bucket,
  type LoggedCall,
  type Period,
  type UsageFilters,
} from './usage-data';

const parsePeriod = (value: string | undefined): Period => {
  if (value === undefined) return DEFAULT_PERIOD;
  if (!Object.hasOwn(PERIODS, value)) throw new Refusal(400, 'Bad request', `No period "${value}".`);
  return value as Period;
};

const parseBucket = (value: string | undefined, period: Period): Bucket => {
  if (value === undefined) return PERIODS[period].bucket;
  if (value !== 'hour' && value !== 'day') throw new Refusal(400, 'Bad request', 'Calls are counted per hour or day.');
  return value;
};

/** The page's filters from its query; a value it does not offer is a 400, an unknown key a 404. */
const usageFilters = async (r: RouteRequest) => {
  const branchId = r.params.branch!;
  const keys = await r.ctx.keys.listByBranch(branchId);
  const period = parsePeriod(queryValue(r.query, 'period'));
  const keyId = queryValue(r.query, 'key');
  const status = queryValue(r.query, 'status');
  const route = queryValue(r.query, 'route');
  if (keyId !== undefined && !keys.some((k) => k.key_id === keyId))
    throw notFound(`Branch ${branchId} has no key ${keyId}.`);
  if (status !== undefined && !isStatusFilter(status)) throw new Refusal(400, 'Bad request', `No status "${status}".`);
  if (route !== undefined && !ROUTE_CHOICES.includes(route))
    throw new Refusal(400, 'Bad request', `No route "${route}".`);
  const filters: UsageFilters = {
    branchId,
    period,
    bucket: parseBucket(queryValue(r.query, 'bucket'), period),
    now: new Date(),
    ...(keyId ? { keyId } : {}),
    ...(status ? { status } : {}),
    ...(route ? { route } : {}),
  };
  return { keys, filters };
};

const usageRoute: ConsoleRoute = {
  method: 'GET',
  path: '/branches/:branch/usage',
  handle: async (r) => {
    const { keys, filters } = await usageFilters(r);
    const cursor = queryValue(r.query, 'cursor');
    const newer = (queryValue(r.query, 'newer') ?? '').split('.').filter(Boolean);
    // The log first: a bad cursor fails before the chart's larger read starts.
    const log = await loadUsageLog(r.ctx, filters, cursor);
    const chart = await loadUsageChart(r.ctx, filters);
    return page(
      usagePage({
        branchId: filters.branchId,
        keys,
        period: filters.period,
        bucket: filters.bucket,
        chart,
        log: log.records,
        scanned: log.scanned,
        newer,
        ...(filters.keyId ? { keyId: filters.keyId } : {}),
        ...(filters.status ? { status: filters.status } : {}),
        ...(filters.route ? { route: filters.route } : {}),
        ...(cursor ? { cursor } : {}),
        ...(log.nextPosition ? { nextCursor: log.nextPosition } : {}),
      }),
    );
  },
};

const csvRoute: ConsoleRoute = {
  method: 'GET',
  path: '/branches/:branch/usage.csv',
  handle: async (r) => {
    const { filters } = await usageFilters(r);
    const pages = allUsageRecords(r.ctx, filters);
    // Read the first page before the headers go out, so a failure is still a proper error page.
    const first = await pages.next();
    r.response.writeHead(200, {
      ...SECURITY_HEADERS,
      'Cache-Control': 'no-store',
      'Content-Type': 'text/csv; charset=utf-8',
      'Content-Disposition': `attachment; filename="usage-${filters.branchId.replace(/[^\w.-]/g, '_')}-${filters.period}.csv"`,
    });
    r.response.write(csvRow(CSV_COLUMNS));
    const write = (records: LoggedCall[]) =>
      r.response.write(records.map((record) => csvRow(CSV_COLUMNS.map((column) => record[column]))).join(''));
    if (!first.done) write(first.value);
    for await (const records of pages) write(records);
    r.response.end();
    return undefined;
  },
};

export const USAGE_ROUTES: ConsoleRoute[] = [usageRoute, csvRoute];
