import { createApiHandler } from '../shared/lambda/handler';
import { notFound } from '../shared/api/errors';
import { jsonResponse, type ApiEvent } from '../shared/api/http/response';
import type { AuthenticatedContext } from '../shared/api/middlewares';
import { branchData } from '../shared/lambda/runtime';
import { ID_PATTERN } from '../shared/domain/ids';

const lambdaHandler = async (event: ApiEvent, { apiKey }: AuthenticatedContext) => {
  const id = event.pathParameters?.id ?? '';
  // An id no provider could have is the same 404 as an unknown one, without a database read.
  const provider = ID_PATTERN.test(id) ? await branchData.getActiveProvider(apiKey.branch_id, id) : undefined;
  if (!provider) throw notFound('No active payment provider with this id.');
  return jsonResponse(200, provider);
};

export const handler = createApiHandler('GetPaymentProvider', lambdaHandler);
