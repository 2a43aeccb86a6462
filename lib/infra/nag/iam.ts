/**
 * IAM's evaluation of identity-based policies, for every "may this principal do this" question of
 * the stack's nag rules and the verifier (a role, the operator): an explicit Deny wins over any Allow;
 * Action/NotAction and Resource/NotResource; `*` and `?` wildcards (actions case-insensitive, an
 * ARN's `*` kept within its segment unless it ends one). A statement with a Condition is not
 * evaluated here: the decision says so (docs/decisions.md "Assembly verification").
 */

export interface Statement {
  readonly Effect?: string;
  readonly Action?: string | readonly string[];
  readonly NotAction?: string | readonly string[];
  readonly Resource?: string | readonly string[];
  readonly NotResource?: string | readonly string[];
  readonly Condition?: unknown;
  /** Where it stands (`GetBranchRoleDefaultPolicy… statement 2`), for the decision's reason. */
  readonly source?: string;
}

export interface Decision {
  allowed: boolean;
  /** Why not (the Deny, the condition), or undefined when allowed. */
  reason?: string;
}

export const NOT_ALLOWED = 'no statement allows it';

const list = (value: string | readonly string[] | undefined): readonly string[] =>
  value === undefined ? [] : typeof value === 'string' ? [value] : value;

const escape = (text: string) => text.replace(/[.+^${}()|[\]\\]/g, '\\$&');

/** An action pattern (`dynamodb:Get*`): case-insensitive, wildcards anywhere. */
export const actionMatches = (pattern: string, action: string): boolean =>
  new RegExp(`^${escape(pattern).replace(/\*/g, '.*').replace(/\?/g, '.')}$`, 'i').test(action);

/** An ARN pattern: `*` and `?` within a segment, a `*` that ends a segment reaching past its colons. */
export const resourceMatches = (pattern: string, arn: string): boolean =>
  new RegExp(
    `^${escape(pattern).replace(/[*?]/g, (token, at: number, text: string) =>
      token === '?' ? '[^:]' : [':', undefined].includes(text[at + 1]) ? '.*' : '[^:]*',
    )}$`,
  ).test(arn);

/** Whether a statement applies to the request, its condition aside. */
const applies = (statement: Statement, action: string, arn: string): boolean => {
  const byAction =
    statement.Action !== undefined
      ? list(statement.Action).some((pattern) => actionMatches(pattern, action))
      : statement.NotAction !== undefined &&
        !list(statement.NotAction).some((pattern) => actionMatches(pattern, action));
  const byResource =
    statement.Resource !== undefined
      ? list(statement.Resource).some((pattern) => resourceMatches(pattern, arn))
      : statement.NotResource !== undefined &&
        !list(statement.NotResource).some((pattern) => resourceMatches(pattern, arn));
  return byAction && byResource;
};

const describe = (statement: Statement) =>
  [
    statement.Effect,
    statement.Action !== undefined
      ? list(statement.Action).join(', ')
      : `every action but ${list(statement.NotAction).join(', ')}`,
    ...(statement.NotResource !== undefined ? [`on every resource but ${list(statement.NotResource).join(', ')}`] : []),
    ...(statement.source ? [`in ${statement.source}`] : []),
  ].join(' ');

const conditionKeys = (statement: Statement) =>
  Object.values((statement.Condition ?? {}) as Record<string, Record<string, unknown>>)
    .flatMap((test) => Object.keys(test ?? {}))
    .join(', ');

/** May the holder of `statements` do `action` on `arn`? */
export const evaluate = (statements: readonly Statement[], action: string, arn: string): Decision => {
  const applying = statements.filter((statement) => applies(statement, action, arn));
  const deny = applying.find((statement) => statement.Effect === 'Deny' && statement.Condition === undefined);
  if (deny) return { allowed: false, reason: `denied by ${describe(deny)}` };
  const conditional = applying.find((statement) => statement.Effect === 'Deny' && statement.Condition !== undefined);
  if (conditional) {
    return {
      allowed: false,
      reason: `${describe(conditional)} applies under a condition the run can't evaluate (${conditionKeys(conditional)})`,
    };
  }
  if (applying.some((statement) => statement.Effect === 'Allow' && statement.Condition === undefined))
    return { allowed: true };
  const allowIf = applying.find((statement) => statement.Effect === 'Allow');
  return allowIf
    ? {
        allowed: false,
        reason: `${describe(allowIf)} allows it only under a condition the run can't evaluate (${conditionKeys(allowIf)})`,
      }
    : { allowed: false, reason: NOT_ALLOWED };
};
