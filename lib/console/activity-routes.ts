/**
 * The "Activity" page: the branch's key actions (created, updated, disabled, enabled, rolled,
 * revoked, leaked), newest first, who did each and what changed, read from the activity table
 * through the operator library (`listActivity`, the same as `keys activity`).
 */
import { Hono } from 'hono';
import type { ActivityChange, ActivityEntry } from '../../shared/domain/key-activity';
import { shortActor } from '../operator/format';
import { listActivityPage } from '../operator/keys';
import {
  branchPath,
  cardsTable,
  html,
  layout,
  pager,
  select,
  textWithTimes,
  time,
  withQuery,
  type Html,
} from './layout';
import { notFound, queryValue } from './refusals';
import type { ConsoleEnv } from './session';

/** Entries a page shows, as the usage log: newer and older pages link to the rest. */
export const ACTIVITY_PAGE_SIZE = 50;

const shown = (value: unknown) =>
  value === null || value === undefined
    ? 'none'
    : Array.isArray(value)
      ? value.join(', ')
      : textWithTimes(String(value));

const changesCell = (changes: Record<string, ActivityChange>, details: Record<string, string> | undefined): Html => {
  const rows = [
    ...Object.entries(changes).map(
      ([field, c]) => html`<li><code>${field}</code>: ${shown(c.before)} → ${shown(c.after)}</li>`,
    ),
    // A detail that repeats a change (a roll's rolled_to) is shown once, as the change.
    ...Object.entries(details ?? {})
      .filter(([name]) => !Object.hasOwn(changes, name))
      .map(([name, value]) => html`<li><code>${name}</code>: ${textWithTimes(value)}</li>`),
  ];
  return rows.length
    ? html`<ul class="findings">
        ${rows}
      </ul>`
    : html`—`;
};

interface ActivityPageInput {
  branchId: string;
  keys: { key_id: string; name: string }[];
  keyId: string | undefined;
  entries: ActivityEntry[];
  /** Positions of the pages beside this one (lib/operator/keys.ts listActivityPage). */
  newer?: string;
  older?: string;
}

const keyFilter = (input: ActivityPageInput): Html => {
  const keys = input.keys.map((k) => [k.key_id, `${k.name} (${k.key_id})`] as const);
  return html`<form method="get" action="${branchPath(input.branchId, 'activity')}" class="filters">
    ${select('Key', 'key', [['', 'All keys'], ...keys], input.keyId, 'activity-key')}
    <button type="submit">Show activity</button>
  </form>`;
};

const activityTable = (entries: ActivityEntry[]): Html =>
  cardsTable(
    'activity',
    'Key actions, newest first',
    [
      { header: 'When', cell: (e) => time(e.at) },
      { header: 'Action', cell: (e) => html`<strong>${e.action}</strong>` },
      { header: 'Key', cell: (e) => html`${e.key_name} <small><code>${e.key_id}</code></small>` },
      { header: 'Who', cell: (e) => html`<code class="cut" title="${e.actor}">${shortActor(e.actor)}</code>` },
      { header: 'What changed', cell: (e) => changesCell(e.changes, e.details) },
    ],
    entries,
    (e) => html`data-activity-id="${e.activity_id}"`,
  );

const activityPager = ({ branchId, keyId, newer, older }: ActivityPageInput): Html => {
  const path = branchPath(branchId, 'activity');
  return pager('Activity pages', [
    !!newer && html`<a href="${withQuery(path, { key: keyId, after: newer })}" rel="prev">Newer actions</a>`,
    !!older && html`<a href="${withQuery(path, { key: keyId, before: older })}" rel="next">Older actions</a>`,
    !!newer && html`<a href="${withQuery(path, { key: keyId })}">Newest actions</a>`,
  ]);
};

export const activityPage = (input: ActivityPageInput): string =>
  layout({
    title: 'Activity',
    branchId: input.branchId,
    current: 'activity',
    body: html`<h1>Activity</h1>
      <p>Every action on this branch's keys, from this console and from the <code>branch-api</code> CLI.</p>
      ${keyFilter(input)}
      ${
        input.entries.length
          ? activityTable(input.entries)
          : html`<p class="empty">
              No key actions yet. Creating, editing, disabling, enabling, rolling or revoking a key on the
              <a href="${branchPath(input.branchId, 'keys')}">API keys</a> page records it here.
            </p>`
      }
      ${activityPager(input)}`,
  });

export const activityRoutes = new Hono<ConsoleEnv>().get('/branches/:branch/activity', async (c) => {
  const branchId = c.req.param('branch');
  const keyId = queryValue(c, 'key');
  const keys = await c.var.ctx.keys.listByBranch(branchId);
  if (keyId !== undefined && !keys.some((k) => k.key_id === keyId))
    throw notFound(`Branch ${branchId} has no key ${keyId}.`);
  const page = await listActivityPage(c.var.ctx, {
    branchId,
    limit: ACTIVITY_PAGE_SIZE,
    keyId,
    before: queryValue(c, 'before'),
    after: queryValue(c, 'after'),
  });
  return c.html(activityPage({ branchId, keys, keyId, ...page }));
});
