/**
 * The stack's own cdk-nag pack: rules that judge a resource's properties against the code and the
 * contract (lib/infra/nag/*.ts). bin/app.ts runs it at `cdk synth` beside AwsSolutions, and
 * `npm run verify:assembly` on the synthesized template through CfnInclude, so a defect made in
 * the stack's code or in the assembly is named either way. A finding the stack means is
 * acknowledged on its construct with the reason (Validations.acknowledge), as AwsSolutions' are.
 */
import type { CfnResource, PolicyValidationPluginReport } from 'aws-cdk-lib';
import { NagMessageLevel, NagPack, type NagPackProps } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { alarmRules } from './alarms';
import { apiRules } from './api';
import { functionRules } from './functions';
import { permissionRules } from './permissions';
import type { StackRule } from './rule';
import { streamRules } from './streams';
import { tableRules } from './tables';

export const PACK_NAME = 'BranchApi';

/** Every rule, in the order docs/deploy.md lists them. */
export const STACK_RULES: readonly StackRule[] = [
  ...apiRules,
  ...functionRules,
  ...streamRules,
  ...tableRules,
  ...alarmRules,
  ...permissionRules,
];

export class BranchApiChecks extends NagPack {
  readonly name = PACK_NAME;

  constructor(
    scope?: IConstruct,
    props?: NagPackProps,
    private readonly rules: readonly StackRule[] = STACK_RULES,
  ) {
    super(scope, props);
    this.packName = PACK_NAME;
  }

  protected checkResource(node: CfnResource): void {
    for (const rule of this.rules.filter((candidate) => candidate.applies(node))) {
      this.applyRule({
        ruleSuffixOverride: rule.name,
        info: rule.info,
        explanation: rule.explanation,
        level: NagMessageLevel.ERROR,
        node,
        // A rule that can't read a resource is a finding that says why, not a crash of the synth.
        rule: (resource) => {
          try {
            return rule.check(resource);
          } catch (error) {
            return [`the rule could not read this resource: ${error instanceof Error ? error.message : String(error)}`];
          }
        },
      });
    }
  }
}

export interface Finding {
  rule: string;
  reason: string;
  /** Construct paths of the resources it was found on. */
  paths: string[];
}

/** A report's findings: `BranchApi-<rule>[<reason>]`, or a bare id whose reason is the rule's `info`. */
export const findingsOf = (report: PolicyValidationPluginReport): Finding[] =>
  report.violations.map((violation) => {
    const [, rule = violation.ruleName, reason] = /^[^-]+-([^[]+)(?:\[(.*)\])?$/s.exec(violation.ruleName) ?? [];
    return {
      rule,
      reason: reason ?? violation.description,
      paths: violation.violatingResources.flatMap((resource) => resource.constructPath ?? []),
    };
  });
