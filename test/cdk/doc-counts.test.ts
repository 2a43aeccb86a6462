/**
 * The counts the docs state are generated from the stack and the route table (lib/infra/counts.ts,
 * `npm run docs:counts`): this fails when README.md or docs/deploy.md is stale.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { routes } from '../../shared/api/routes';
import { tableDefinitions } from '../../shared/data/tables';
import { renderConcurrency } from '../../lib/infra/concurrency';
import {
  COUNTS_END,
  COUNTS_START,
  markers,
  renderCounts,
  renderOutputs,
  stackCounts,
  synthesizedTemplate,
  withGenerated,
} from '../../lib/infra/counts';
import { buildStack } from './support';
import { renderChecks } from '../../lib/verify/template-checks';

const ROOT = join(import.meta.dirname, '..', '..');
const counts = stackCounts();
const block = renderCounts(counts);

describe('generated counts', () => {
  it('come from the stack and the code', () => {
    // One function per route, the catch-all, the aggregator, the secret scanning report, the daily
    // key expiry run and the key actions finisher; one table per definition.
    expect(counts.functions).toBe(routes.length + 5);
    expect(counts.tables).toBe(tableDefinitions.length);
    // The lean set of docs/deploy.md "Alarms": API 5xx rate and p99, three failure metrics, two
    // stream consumers behind and lost, the key expiry run's errors.
    expect(counts.alarms).toBe(10);
    // The key lookup, the rate-limit counter, the usage record and the route's own read.
    for (const { calls } of counts.callsPerRequest) expect(calls).toBe(4);
  });

  it.each(['README.md', 'docs/deploy.md'])('are current in %s (npm run docs:counts)', (doc) => {
    const text = readFileSync(join(ROOT, doc), 'utf8');
    expect(withGenerated(text, 'counts', block)).toBe(text);
  });

  it('state the default template\u2019s reserved concurrency in docs/deploy.md "Concurrency", from the template', () => {
    const text = readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');
    const { start, end } = markers('concurrency');
    const rendered = renderConcurrency(synthesizedTemplate().toJSON(), start, end);
    expect(withGenerated(text, 'concurrency', rendered)).toBe(text);
    // None by default, so any account can take it; one row per kind, the key actions finisher's too.
    expect(rendered).toContain('By default the stack reserves **0** concurrent executions in all');
    expect(rendered).toMatch(/\| `reservedConcurrencyKeyActions` +\| .* \| 1 +\| none +\|/);
    const asked = renderConcurrency(
      buildStack({ reservedConcurrency: { endpoint: 50 } }).template.toJSON(),
      start,
      end,
    );
    expect(asked).toContain('By default the stack reserves **200** concurrent executions');
  });

  it('list every check of the verifier in docs/deploy.md', () => {
    const text = readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');
    const { start, end } = markers('checks');
    expect(withGenerated(text, 'checks', renderChecks(start, end))).toBe(text);
  });

  it('list the stack outputs the operator tooling reads in docs/deploy.md', () => {
    const text = readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');
    const { start, end } = markers('outputs');
    expect(withGenerated(text, 'outputs', renderOutputs(start, end))).toBe(text);
  });

  it('are rewritten when stale, and a doc without markers is told apart', () => {
    const stale = `intro\n${COUNTS_START}\nThe stack: **5 functions**\n${COUNTS_END}\nrest\n`;
    expect(withGenerated(stale, 'counts', block)).toBe(`intro\n${block}\nrest\n`);
    expect(withGenerated('no markers', 'counts', block)).toBeUndefined();
  });
});
