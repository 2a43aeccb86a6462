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
  cardCell,
  headerRow,
  html,
  layout,
  textWithTimes,
  time,
  withQuery,
  type Html,
  type HtmlValue,
} from './layout';
import { notFound, queryValue } from './refusals';
import type { ConsoleEnv } from './session';

/** Entries a page shows, as the usage log: newer and older pages link to the rest. */
export const ACTIVITY_PAGE_SIZE = 50;

const shown = (value: unknown): HtmlValue =>
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
  keyId?: string;
  entries: ActivityEntry[];
  /** Positions of the pages beside this one (lib/operator/keys.ts listActivityPage). */
  newer?: string;
  older?: string;
}

const keyFilter = (input: ActivityPageInput): Html =>
  html`<form method="get" action="${branchPath(input.branchId, 'activity')}" class="filters">
    <label for="activity-key"
      >Key
      <select id="activity-key" name="key">
        <option value="">All keys</option>
        ${input.keys.map(
          (k) =>
            html`<option value="${k.key_id}" ${k.key_id === input.keyId ? html`selected` : ''}>
              ${k.name} (${k.key_id})
            </option>`,
        )}
      </select></label
    >
    <button type="submit">Show activity</button>
  </form>`;

const activityTable = (entries: ActivityEntry[]): Html =>
  html`<table id="activity" class="cards">
    <caption>
      Key actions, newest first
    </caption>
    ${headerRow(['When', 'Action', 'Key', 'Who', 'What changed'])}
    <tbody>
      ${entries.map(
        (e) =>
          html`<tr data-activity-id="${e.activity_id}">
            <th scope="row">${time(e.at)}</th>
            ${cardCell('Action', html`<strong>${e.action}</strong>`)}
            ${cardCell('Key', html`${e.key_name} <small><code>${e.key_id}</code></small>`)}
            ${cardCell('Who', html`<code class="cut" title="${e.actor}">${shortActor(e.actor)}</code>`)}
            ${cardCell('What changed', changesCell(e.changes, e.details))}
          </tr>`,
      )}
    </tbody>
  </table>`;

const activityPager = ({ branchId, keyId, newer, older }: ActivityPageInput): Html => {
  const path = branchPath(branchId, 'activity');
  return html`<nav aria-label="Activity pages">
    <ul>
      ${newer ? html`<li><a href="${withQuery(path, { key: keyId, after: newer })}" rel="prev">Newer actions</a></li>` : ''}
      ${older ? html`<li><a href="${withQuery(path, { key: keyId, before: older })}" rel="next">Older actions</a></li>` : ''}
      ${newer ? html`<li><a href="${withQuery(path, { key: keyId })}">Newest actions</a></li>` : ''}
    </ul>
  </nav>`;
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
  const before = queryValue(c, 'before');
  const after = queryValue(c, 'after');
  const { entries, newer, older } = await listActivityPage(c.var.ctx, {
    branchId,
    limit: ACTIVITY_PAGE_SIZE,
    ...(keyId !== undefined ? { keyId } : {}),
    ...(before !== undefined ? { before } : {}),
    ...(after !== undefined ? { after } : {}),
  });
  return c.html(
    activityPage({
      branchId,
      keys,
      entries,
      ...(keyId !== undefined ? { keyId } : {}),
      ...(newer !== undefined ? { newer } : {}),
      ...(older !== undefined ? { older } : {}),
    }),
  );
});
