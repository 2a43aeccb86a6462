/**
 * The counts the docs state (functions, tables, alarms, routes, DynamoDB calls per request),
 * taken from the synthesized stack and the route table rather than typed by hand. `npm run
 * docs:counts` writes them between markers in README.md and docs/deploy.md; a test fails when
 * the docs are stale (test/cdk/doc-counts.test.ts).
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { routeKey, routes, tableAccessOf } from '../../shared/api/routes';
import { markdownTable } from '../markdown';
import { OPERATOR_OUTPUTS } from '../operator/target';
import { renderOperatorPolicy } from '../operator/grants';
import { BranchApiStack } from './branch-api-stack';
import { renderConcurrency } from './concurrency';
import { costInputs, renderCost } from './cost';

export interface StackCounts {
  functions: number;
  tables: number;
  alarms: number;
  routes: number;
  /** DynamoDB calls one successful request makes, per route: the chain's and the handler's. */
  callsPerRequest: { route: string; calls: number; detail: string }[];
}

const TABLE_LABELS: Record<string, string> = { branchData: 'branch data', rateLimits: 'rate limits' };

/** The stack's template, synthesized without bundling (the counts and the cost read it). */
export const synthesizedTemplate = (): Template => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  return Template.fromStack(new BranchApiStack(app, 'Counts'));
};

export const stackCounts = (template: Template = synthesizedTemplate()): StackCounts => {
  const count = (type: string) => Object.keys(template.findResources(type)).length;
  return {
    functions: count('AWS::Lambda::Function'),
    tables: count('AWS::DynamoDB::Table'),
    alarms: count('AWS::CloudWatch::Alarm'),
    routes: routes.length,
    callsPerRequest: routes.map((route) => {
      const access = tableAccessOf(route);
      const calls = access.flatMap(({ table, actions, index }) =>
        actions.map(
          (action) => `${action.replace('dynamodb:', '')} ${TABLE_LABELS[table] ?? table}${index ? ` (${index})` : ''}`,
        ),
      );
      return { route: routeKey(route), calls: calls.length, detail: calls.join(', ') };
    }),
  };
};

/** Markers of a generated block named `name` (`counts`, `checks`). */
export const markers = (name: string) => ({
  start: `<!-- generated:${name} (npm run docs:counts) -->`,
  end: `<!-- /generated:${name} -->`,
});
export const { start: COUNTS_START, end: COUNTS_END } = markers('counts');

export const renderCounts = (counts: StackCounts): string =>
  [
    COUNTS_START,
    '',
    `The stack: **${counts.functions} functions** (${counts.routes} endpoints, the catch-all, the rollups aggregator, the secret scanning report, the daily key expiry run, the key actions finisher on the keys stream), ` +
      `**${counts.tables} DynamoDB tables**, **${counts.alarms} alarms**, ${counts.routes} routes and \`$default\`.`,
    '',
    ...markdownTable([
      ['Route', 'DynamoDB calls per successful request'],
      ...counts.callsPerRequest.map(({ route, calls, detail }) => [`\`${route}\``, `${calls}: ${detail}`]),
    ]),
    '',
    COUNTS_END,
  ].join('\n');

/** `text` with its generated block `name` replaced by `block` (which starts and ends with the markers); undefined when it has none. */
export const withGenerated = (text: string, name: string, block: string): string | undefined => {
  const { start: open, end: close } = markers(name);
  const start = text.indexOf(open);
  const end = text.indexOf(close);
  if (start === -1 || end < start) return undefined;
  return text.slice(0, start) + block + text.slice(end + close.length);
};

/** The stack outputs the operator tooling reads (lib/operator/target.ts), as a table for docs/deploy.md. */
export const renderOutputs = (start: string, end: string): string =>
  [
    start,
    '',
    ...markdownTable([
      ['Output', 'Variable', 'What it names'],
      ['`ApiBaseUrl`', '—', '`{base_url}`: `https://<id>.execute-api.<region>.amazonaws.com/api`'],
      ...OPERATOR_OUTPUTS.map(({ output, envVar, what }) => [`\`${output}\``, `\`${envVar}\``, what]),
    ]),
    '',
    end,
  ].join('\n');

/**
 * Every generated block of each doc, rendered once: `current` gives a doc's text with them up to date.
 * `more`: blocks of docs/deploy.md rendered outside the stack's folder (scripts/doc-counts.ts).
 */
export const generatedBlocks = (
  template: Template = synthesizedTemplate(),
  more: Record<string, (start: string, end: string) => string> = {},
) => {
  const block = (name: string, render: (start: string, end: string) => string) => {
    const { start, end } = markers(name);
    return { name, text: render(start, end) };
  };
  const counts = { name: 'counts', text: renderCounts(stackCounts(template)) };
  const deployOnly = [
    ...Object.entries(more).map(([name, render]) => block(name, render)),
    block('concurrency', (start, end) => renderConcurrency(template.toJSON(), start, end)),
    block('outputs', renderOutputs),
    block('policy', renderOperatorPolicy),
    block('cost', (start, end) => renderCost(costInputs(template.toJSON()), start, end)),
  ];
  return {
    /** `text` with its blocks current; undefined when one is missing. */
    current: (doc: string, text: string): string | undefined =>
      [counts, ...(doc.endsWith('deploy.md') ? deployOnly : [])].reduce<string | undefined>(
        (next, { name, text: generated }) => next && withGenerated(next, name, generated),
        text,
      ),
  };
};
