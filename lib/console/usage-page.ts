/**
 * The "API usage" page: filters (key, status, route, period, bucket), the chart and its totals
 * from the rollups, and the log newest first (key name, caller's IP, a detail view per call),
 * with a CSV export of exactly what the filters select.
 */
import {
  branchPath,
  cardsTable,
  html,
  jsonBlock,
  layout,
  pager,
  select,
  time,
  withQuery,
  wrapAfter,
  type Html,
  type HtmlValue,
} from './layout';
import { callRoute, durationText, percentileText } from '../operator/format';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { MAX_QUERY_VALUE_LENGTH } from './refusals';
import {
  BUCKETS,
  RAW_COUNT_LIMIT,
  PERIODS,
  ROUTE_CHOICES,
  STATUS_CLASSES,
  type Bucket,
  type Period,
  type UsageChart,
} from './usage-data';

export interface UsagePageInput {
  branchId: string;
  keys: { key_id: string; name: string; start: string }[];
  keyId?: string;
  status?: string;
  route?: string;
  period: Period;
  bucket: Bucket;
  chart: UsageChart;
  log: UsageRecord[];
  /** Raw records read for this page of the log. */
  scanned: number;
  /** The page's search stopped at LOG_SCAN_LIMIT: its older link searches on. */
  searchStopped?: boolean;
  cursor?: string;
  nextCursor?: string;
  /** Positions of the newer pages this one was reached through, the nearest first. */
  newer?: string[];
}

/**
 * The "Newer calls" trail: the positions of the pages before this one ride in the links
 * (`newer`), as many as fit in a query value (MAX_QUERY_VALUE_LENGTH); past them the link
 * goes to the newest calls.
 */
export const newerTrail = (positions: readonly string[]): string[] => {
  const kept: string[] = [];
  let length = 0;
  for (const position of positions) {
    length += position.length + 1;
    if (length > MAX_QUERY_VALUE_LENGTH) break;
    kept.push(position);
  }
  return kept;
};

const filterForm = (input: UsagePageInput): Html => {
  const keys = input.keys.map((k) => [k.key_id, `${k.name} (${k.start}…)`] as const);
  const routes = ROUTE_CHOICES.map((route) => [route, route === '$default' ? 'Unknown routes' : route] as const);
  const periods = Object.entries(PERIODS).map(([value, p]) => [value, p.label] as const);
  return html`<form method="get" action="${branchPath(input.branchId, 'usage')}" class="filters">
    ${select('Key', 'key', [['', 'All keys'], ...keys], input.keyId)}
    ${select('Status', 'status', [['', 'Any status'], ...STATUS_CLASSES.map((cls) => [cls, cls] as const)], input.status)}
    ${select('Route', 'route', [['', 'Any route'], ...routes], input.route)}
    ${select('Period', 'period', periods, input.period)}
    ${select('Calls per', 'bucket', Object.entries(BUCKETS), input.bucket)}
    <button type="submit">Apply filters</button>
  </form>`;
};

const chartTable = (chart: UsageChart): Html =>
  html`<details>
    <summary>Chart data as a table</summary>
    <table id="usage-chart-table" class="compact">
      <thead>
        <tr>
          <th scope="col">${chart.bucket === 'hour' ? 'Hour starting' : 'Day (UTC)'}</th>
          ${STATUS_CLASSES.map((cls) => html`<th scope="col">${cls}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${chart.starts.map(
          (start, i) =>
            html`<tr>
              <th scope="row">${time(start, '—', { utcDay: chart.bucket === 'day' })}</th>
              ${STATUS_CLASSES.map((cls) => html`<td>${chart.counts[cls][i]}</td>`)}
            </tr>`,
        )}
      </tbody>
    </table>
  </details>`;

/** What the figures count, in words: every filter, so no figure claims more than it counts. */
const scopeOf = (input: UsagePageInput): string => {
  const key = input.keys.find((k) => k.key_id === input.keyId);
  return [
    key ? `key “${key.name}”` : 'all keys',
    input.status ? `status ${input.status}` : 'any status',
    input.route ? `route ${input.route === '$default' ? 'unknown routes' : input.route}` : 'any route',
  ].join(', ');
};

const chartSection = (input: UsagePageInput): Html => {
  const { chart } = input;
  const per = chart.bucket === 'hour' ? 'hour' : 'day';
  return html`<section aria-labelledby="chart-title">
    <h2 id="chart-title">Calls per ${per}, by status class</h2>
    <p id="usage-summary">
      <strong>${chart.total}</strong> call(s) · latency p50 <strong>${percentileText(chart.p50_ms)}</strong> · p95
      <strong>${percentileText(chart.p95_ms)}</strong>
    </p>
    <p id="usage-freshness">
      ${
        chart.counted_from === 'records'
          ? html`Counted from the log's records, as the log and CSV are: the hourly rollups do not count status and
            route
            together.${
              chart.truncated
                ? html` <strong>Only the newest ${RAW_COUNT_LIMIT} calls of the period are counted</strong>; the CSV has
                    them all.`
                : ''
            }`
          : html`Counted as of ${time(chart.as_of, 'never (no call counted yet)')}`
      }
    </p>
    ${
      chart.set_aside
        ? html`<p role="alert" class="error" id="usage-set-aside">
            ${chart.set_aside.count} call(s) from ${time(chart.set_aside.oldest)} to ${time(chart.set_aside.newest)}
            could not be aggregated and are not in these figures. Repair: <code>${chart.set_aside.repair}</code>
          </p>`
        : ''
    }
    <p>
      <small>From ${time(chart.since)} to now: ${scopeOf(input)}; latencies are bucket bounds (≤).</small>
    </p>
    ${
      chart.total === 0
        ? html`<p class="empty">
            No calls in this period yet. Calls made with this branch's keys appear here within seconds.
          </p>`
        : ''
    }
    <div class="chart">
      <canvas
        id="usage-chart"
        role="img"
        aria-label="Bar chart: calls per ${per} by status class; the same figures are in the table below"
      ></canvas>
    </div>
    ${jsonBlock('usage-chart-data', chart)} ${chartTable(chart)}
  </section>`;
};

/** A call's whole record, in a panel that opens over the rows below (wide enough for the request id). */
const callDetails = (r: UsageRecord, key: string): Html => {
  const rows: [string, HtmlValue][] = [
    ['Request id', html`<code class="request-id">${r.request_id}</code>`],
    ['Key', html`${key} <code>${r.key_id}</code>`],
    ['Raw path', html`${r.method} <code class="path">${wrapAfter(r.path, '/')}</code>`],
    ['Route', html`<code>${r.route}</code>`],
    ['Status', r.status],
    ['Duration', durationText(r.response_time_ms)],
    ['Caller IP', r.source_ip ? wrapAfter(r.source_ip, ':') : 'not recorded'], // records older than the field lack it
    ['Time', html`${time(r.timestamp, '—', { seconds: true })} <small><code>${r.timestamp}</code></small>`],
  ];
  return html`<details class="call">
    <summary aria-label="Details of call ${r.request_id}">Details</summary>
    <dl>
      ${rows.map(
        ([term, detail]) =>
          html`<dt>${term}</dt>
            <dd>${detail}</dd>`,
      )}
    </dl>
  </details>`;
};

/**
 * One call a row on a laptop (time, key, route, status, duration, details), two short lines on a
 * phone (assets/console.css); each text that may be long is cut with `…` and whole on hover.
 */
const logTable = (input: UsagePageInput): Html => {
  // Same-named keys told apart by the start of their value.
  const names = new Map(input.keys.map((k) => [k.key_id, `${k.name} ${k.start}…`]));
  const keyOf = (r: UsageRecord) => names.get(r.key_id) ?? r.key_id;
  return cardsTable(
    'usage-log',
    `Calls, newest first${input.cursor ? ' (older page)' : ''}`,
    [
      { header: 'Time', cell: (r) => time(r.timestamp, '—', { seconds: true }) },
      { header: 'Key', cell: (r) => html`<span class="cut" title="${keyOf(r)}">${keyOf(r)}</span>` },
      { header: 'Route', cell: (r) => html`<code class="cut" title="${callRoute(r)}">${callRoute(r)}</code>` },
      {
        header: 'Status',
        cell: (r) => html`<span class="status status-${String(r.status).slice(0, 1)}xx">${r.status}</span>`,
      },
      { header: 'Duration', cell: (r) => durationText(r.response_time_ms) },
      { header: 'Detail', cell: (r) => callDetails(r, keyOf(r)) },
    ],
    input.log,
    (r) => html`data-request-id="${r.request_id}"`,
  );
};

/** Newer and older calls: the older page carries this page's position on its trail back. */
const logPager = (usagePath: string, filters: Record<string, string | undefined>, input: UsagePageInput): Html => {
  const newer = input.newer ?? [];
  const [previous, ...rest] = newer;
  const newerLink = previous
    ? withQuery(usagePath, { ...filters, cursor: previous, newer: rest.join('.') })
    : withQuery(usagePath, filters);
  const trail = input.cursor ? newerTrail([input.cursor, ...newer]) : [];
  const olderLink = withQuery(usagePath, { ...filters, cursor: input.nextCursor, newer: trail.join('.') });
  return pager('Log pages', [
    !!input.cursor && html`<a href="${newerLink}" rel="prev">Newer calls</a>`,
    !!input.nextCursor && html`<a href="${olderLink}" rel="next">Older calls</a>`,
    newer.length > 0 && html`<a href="${withQuery(usagePath, filters)}">Newest calls</a>`,
  ]);
};

const logSection = (input: UsagePageInput): Html => {
  const { keyId: key, status, route, period, bucket } = input;
  const filters = { key, status, route, period, bucket };
  const usagePath = branchPath(input.branchId, 'usage');
  const filtered = status !== undefined || route !== undefined;
  return html`<section aria-labelledby="log-title">
    <h2 id="log-title">Log</h2>
    <p>
      <a href="${withQuery(branchPath(input.branchId, 'usage.csv'), filters)}" download>Export CSV</a> (every call the
      filters select)
    </p>
    ${input.log.length ? logTable(input) : ''}
    ${
      input.searchStopped
        ? html`<p class="empty">
            ${input.log.length || 'No'} call(s) among the ${input.scanned} newest searched match the filters; older
            calls are not searched yet: <strong>Older calls</strong> searches on.
          </p>`
        : input.log.length === 0
          ? html`<p class="empty">
              ${
                filtered
                  ? 'No call in this period matches the status and route filters.'
                  : 'No calls in this period. Make a call with one of this branch’s keys and it shows here.'
              }
            </p>`
          : ''
    }
    ${logPager(usagePath, filters, input)}
  </section>`;
};

export const usagePage = (input: UsagePageInput): string =>
  layout({
    title: 'API usage',
    branchId: input.branchId,
    current: 'usage',
    scripts: ['/assets/chart.umd.min.js'],
    body: html`<h1>API usage</h1>
      ${filterForm(input)} ${chartSection(input)} ${logSection(input)}`,
  });
