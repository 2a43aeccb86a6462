import { createApiHandler } from '../shared/handler';
import { notFound } from '../shared/errors';
import { jsonResponse, type ApiEvent } from '../shared/http/response';
import type { AuthenticatedContext } from '../shared/middlewares';
import { branchData } from '../shared/runtime';

const lambdaHandler = async (_event: ApiEvent, { apiKey }: AuthenticatedContext) => {
  const branch = await branchData.getBranch(apiKey.branch_id);
  if (!branch) throw notFound('The branch of this key no longer exists.');
  return jsonResponse(200, branch);
};

export const handler = createApiHandler('GetBranch', lambdaHandler);
