/**
 * The grants are only as right as the route table's declarations (shared/api/routes.ts), so each is
 * checked against what its function really sends: every route's handler is invoked with a valid
 * key against the embedded DynamoDB, with a step on the handlers' own client recording each
 * command (nothing stubbed). A call the route does not declare would be an AccessDenied once
 * deployed; a declared call never made would be a grant too many.
 */
import { handler as getBranch } from '../../functions/get-branch';
import { handler as getProvider } from '../../functions/get-payment-provider';
import { handler as listMembers } from '../../functions/list-members';
import { handler as listProviders } from '../../functions/list-payment-providers';
import { documentClient } from '../../shared/lambda/runtime';
import { getRoute, routes, tableAccessOf, type RouteId } from '../../shared/api/routes';
import type { TableNames } from '../../shared/data/tables';
import { countCommands, invoke, setUpBranches, tableNames } from '../support/harness';

const counter = countCommands(documentClient);
let key: string;

beforeAll(async () => {
  ({ key } = await setUpBranches());
});

beforeEach(() => counter.reset());

const requests: Record<RouteId, () => Promise<{ statusCode: number }>> = {
  GetBranch: () => invoke(getBranch, { path: '/v1/branch', key }),
  ListMembers: () => invoke(listMembers, { path: '/v1/members', query: { limit: '1' }, key }),
  ListPaymentProviders: () => invoke(listProviders, { path: '/v1/payment-providers', query: { limit: '1' }, key }),
  GetPaymentProvider: () =>
    invoke(getProvider, { path: '/v1/payment-providers/pp_stripe', pathParameters: { id: 'pp_stripe' }, key }),
};

const tableOf = (tableName: string): keyof TableNames => {
  const entry = Object.entries(tableNames).find(([, name]) => name === tableName);
  if (!entry) throw new Error(`A call to an unknown table ${tableName}`);
  return entry[0] as keyof TableNames;
};

/** `dynamodb:GetItem keys`, `dynamodb:Query branchData/index/active-providers`, … */
const describeCall = (action: string, table: string, index?: string) =>
  `${action} ${table}${index === undefined ? '' : `/index/${index}`}`;

describe('each route declares exactly the DynamoDB calls its function makes', () => {
  it.each(routes.map((route) => route.id))('%s', async (id) => {
    const res = await requests[id]();
    expect(res.statusCode).toBe(200);
    const made = counter.sent.map(({ command, input }) =>
      describeCall(`dynamodb:${command.replace(/Command$/, '')}`, tableOf(input.TableName), input.IndexName),
    );
    const declared = tableAccessOf(getRoute(id)).flatMap(({ table, actions, index }) =>
      actions.map((action) => describeCall(action, table, index)),
    );
    expect([...new Set(made)].sort()).toEqual([...declared].sort());
  });
});
