import { createApiHandler } from '../shared/lambda/handler';
import { readPageRequest, toList } from '../shared/api/http/pagination';
import { jsonResponse, type ApiEvent } from '../shared/api/http/response';
import type { AuthenticatedContext } from '../shared/api/middlewares';
import { branchData } from '../shared/lambda/runtime';

const lambdaHandler = async (event: ApiEvent, { apiKey }: AuthenticatedContext) => {
  const page = await branchData.listMembers(apiKey.branch_id, readPageRequest(event, 'members', apiKey.branch_id));
  return jsonResponse(200, toList(page, 'members', apiKey.branch_id));
};

export const handler = createApiHandler('ListMembers', lambdaHandler);
