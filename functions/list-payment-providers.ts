import { createApiHandler } from '../shared/handler';
import { readPageRequest, toList } from '../shared/http/pagination';
import { jsonResponse, type ApiEvent } from '../shared/http/response';
import type { AuthenticatedContext } from '../shared/middlewares';
import { branchData } from '../shared/runtime';

const lambdaHandler = async (event: ApiEvent, { apiKey }: AuthenticatedContext) => {
  const request = readPageRequest(event, 'payment_providers', apiKey.branch_id);
  const page = await branchData.listActiveProviders(apiKey.branch_id, request);
  return jsonResponse(200, toList(page, 'payment_providers', apiKey.branch_id));
};

export const handler = createApiHandler('ListPaymentProviders', lambdaHandler);
