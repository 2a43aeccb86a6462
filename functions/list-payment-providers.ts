import { createApiHandler } from '../shared/lambda/handler';
import { readPageRequest, toList } from '../shared/api/http/pagination';
import { jsonResponse, type ApiEvent } from '../shared/api/http/response';
import type { AuthenticatedContext } from '../shared/api/middlewares';
import { branchData } from '../shared/lambda/runtime';

const lambdaHandler = async (event: ApiEvent, { apiKey }: AuthenticatedContext) => {
  const request = readPageRequest(event, 'payment_providers', apiKey.branch_id);
  const page = await branchData.listActiveProviders(apiKey.branch_id, request);
  return jsonResponse(200, toList(page, 'payment_providers', apiKey.branch_id));
};

export const handler = createApiHandler('ListPaymentProviders', lambdaHandler);
