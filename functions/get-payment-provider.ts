import { createApiHandler } from '../shared/handler';
import { notFound } from '../shared/errors';
import { jsonResponse, type ApiEvent } from '../shared/http/response';
import type { AuthenticatedContext } from '../shared/middlewares';
import { branchData } from '../shared/runtime';
import { ID_PATTERN } from '../shared/ids';

const lambdaHandler = async (event: ApiEvent, { apiKey }: AuthenticatedContext) => {
  const id = event.pathParameters?.id ?? '';
  // An id no provider could have is the same 404 as an unknown one, without a database read.
  const provider = ID_PATTERN.test(id) ? await branchData.getActiveProvider(apiKey.branch_id, id) : undefined;
  if (!provider) throw notFound('No active payment provider with this id.');
  return jsonResponse(200, provider);
};

export const handler = createApiHandler('GetPaymentProvider', lambdaHandler);
