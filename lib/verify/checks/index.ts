/** Every offline check of the verifier, in the order they are reported (docs/deploy.md lists them). */
import { alarmChecks } from './alarms';
import { apiChecks } from './api';
import { functionChecks } from './functions';
import { streamChecks } from './stream';
import type { TemplateCheck } from './table';
import { tableChecks } from './tables';

export const TEMPLATE_CHECKS: readonly TemplateCheck[] = [
  ...apiChecks,
  ...functionChecks,
  ...streamChecks,
  ...tableChecks,
  ...alarmChecks,
];
