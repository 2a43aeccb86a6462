/** Every offline check of the verifier, in the order they are reported (docs/deploy.md lists them). */
import { alarmChecks } from './alarms';
import { apiChecks } from './api';
import { functionChecks } from './functions';
import { outputChecks } from './outputs';
import { streamChecks } from './stream';
import type { TemplateCheck } from './table';
import { tableChecks } from './tables';

export const TEMPLATE_CHECKS: readonly TemplateCheck[] = [
  ...apiChecks,
  ...functionChecks,
  ...streamChecks,
  ...tableChecks,
  ...alarmChecks,
  ...outputChecks,
];

/** The checks as a Markdown list for docs/deploy.md (`npm run docs:counts` writes it). */
export const renderChecks = (start: string, end: string): string =>
  [start, '', ...TEMPLATE_CHECKS.map((check) => `- \`${check.name}\`: ${check.description}.`), '', end].join('\n');
