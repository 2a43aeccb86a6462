import { createApiHandler } from '../shared/handler';
import { readPageRequest, toList } from '../shared/http/pagination';
import { jsonResponse, type ApiEvent } from '../shared/http/response';
import type { AuthenticatedContext } from '../shared/middlewares';
import { branchData } from '../shared/runtime';

const lambdaHandler = async (event: ApiEvent, { apiKey }: AuthenticatedContext) => {
  const page = await branchData.listMembers(apiKey.branch_id, readPageRequest(event, 'members', apiKey.branch_id));
  return jsonResponse(200, toList(page, 'members', apiKey.branch_id));
};

export const handler = createApiHandler('ListMembers', lambdaHandler);
