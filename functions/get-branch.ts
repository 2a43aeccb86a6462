import { createApiHandler } from '../shared/lambda/handler';
import { notFound } from '../shared/api/errors';
import { jsonResponse, type ApiEvent } from '../shared/api/http/response';
import type { AuthenticatedContext } from '../shared/api/middlewares';
import { branchData } from '../shared/lambda/runtime';

const lambdaHandler = async (_event: ApiEvent, { apiKey }: AuthenticatedContext) => {
  const branch = await branchData.getBranch(apiKey.branch_id);
  if (!branch) throw notFound('The branch of this key no longer exists.');
  return jsonResponse(200, branch);
};

export const handler = createApiHandler('GetBranch', lambdaHandler);
