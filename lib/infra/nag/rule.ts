/**
 * How the stack's nag rules are written (lib/infra/nag/pack.ts runs them): each judges one kind
 * of L1 resource, read as cdk-nag's own rules read it (typed properties, `Stack.resolve`), so the
 * same rule judges a stack being synthesized and a template included with CfnInclude.
 */
import { CfnResource, Stack } from 'aws-cdk-lib';
import { NagRuleCompliance, type NagRuleResult } from 'cdk-nag';
import type { IConstruct } from 'constructs';

// CloudFormation JSON after Stack.resolve: its shape is the resource type's.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = Record<string, any>;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type L1<T extends CfnResource> = abstract new (...args: any[]) => T;

/** What a check finds: nothing, one or more reasons (findings), or cdk-nag's verdict as is. */
type Found = string | readonly string[] | NagRuleResult | undefined;

export interface StackRule {
  /** Its id is `BranchApi-<name>`; one with a reason is `BranchApi-<name>[<reason>]`. */
  readonly name: string;
  /** What it expects, and why (docs/deploy.md lists every rule). */
  readonly explanation: string;
  /** What is wrong when it finds something without a reason of its own (acknowledgeable by its id alone). */
  readonly info: string;
  applies(node: CfnResource): boolean;
  check(node: CfnResource): NagRuleResult;
}

const VERDICTS = new Set<unknown>(Object.values(NagRuleCompliance));
export const isVerdict = (found: unknown): found is NagRuleCompliance => VERDICTS.has(found);

/** A rule on every resource of an L1 class (or of several); `info` is the reason of a bare NON_COMPLIANT. */
export const rule = <T extends CfnResource>(
  type: L1<T> | readonly L1<T>[],
  name: string,
  explanation: string,
  check: (node: T) => Found,
  info = explanation,
): StackRule => ({
  name,
  explanation,
  info,
  applies: (node) => asList(type).some((one) => node instanceof one),
  check: (node) => {
    const found = check(node as T);
    if (isVerdict(found)) return found;
    const reasons = [found ?? []].flat() as string[];
    return reasons.length === 0 ? NagRuleCompliance.COMPLIANT : reasons;
  },
});

/** A value of the resource as CloudFormation JSON (tokens resolved to `Ref`/`Fn::GetAtt`). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const read = (node: IConstruct, value: unknown): any => Stack.of(node).resolve(value);

export const idOf = (node: CfnResource): string => Stack.of(node).resolve(node.logicalId) as string;

/** The logical id a `Ref` or `Fn::GetAtt` names; undefined for anything else. */
export const targetOf = (node: IConstruct, value: unknown): string | undefined => {
  const json = read(node, value);
  if (!json || typeof json !== 'object') return undefined;
  if (typeof json.Ref === 'string') return json.Ref;
  const getAtt = json['Fn::GetAtt'] as unknown;
  return Array.isArray(getAtt) && typeof getAtt[0] === 'string' ? getAtt[0] : undefined;
};

export const asList = <T>(value: T | readonly T[] | undefined | null): T[] =>
  value === undefined || value === null ? [] : ([value].flat() as T[]);

const indexes = new WeakMap<Stack, Map<string, CfnResource>>();

/** The stack's resources by logical id (read once per stack). */
const resourcesById = (node: IConstruct): Map<string, CfnResource> => {
  const stack = Stack.of(node);
  let found = indexes.get(stack);
  if (!found) {
    found = new Map(
      stack.node
        .findAll()
        .filter(CfnResource.isCfnResource)
        .map((resource) => [idOf(resource), resource]),
    );
    indexes.set(stack, found);
  }
  return found;
};

/** The resource of the stack a logical id names, if it is one of `type`. */
export const resourceOf = <T extends CfnResource>(node: IConstruct, id: string | undefined, type: L1<T>) => {
  const found = id === undefined ? undefined : resourcesById(node).get(id);
  return found instanceof type ? found : undefined;
};

/** The CloudFormation type of the stack's resource a logical id names. */
export const typeOf = (node: IConstruct, id: string): string | undefined =>
  resourcesById(node).get(id)?.cfnResourceType;

/** Every resource of `type` in the node's stack. */
export const resourcesOf = <T extends CfnResource>(node: IConstruct, type: L1<T>): T[] =>
  [...resourcesById(node).values()].filter((resource): resource is T => resource instanceof type);

/** What the stack says of the deployer's intent (its template metadata `BranchApi`). */
export const intentOf = (node: IConstruct): Json => (Stack.of(node).templateOptions.metadata?.BranchApi ?? {}) as Json;

/** A value as text, references by name (`T.Arn/index/x`, `Region`): ARNs and patterns compare alike at synth. */
export const text = (json: unknown): string | undefined => {
  if (typeof json === 'string') return json;
  const node = json as Json | undefined;
  if (typeof node?.Ref === 'string') return node.Ref.replace(/^AWS::/, '');
  if (Array.isArray(node?.['Fn::GetAtt'])) return node['Fn::GetAtt'].join('.');
  if (!Array.isArray(node?.['Fn::Join'])) return undefined;
  const parts = asList<unknown>(node['Fn::Join'][1]).map(text);
  return parts.includes(undefined) ? undefined : parts.join(String(node['Fn::Join'][0]));
};
