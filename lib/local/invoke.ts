/**
 * Invokes a function the way Lambda's runtime does when one execution environment serves several
 * requests at once (Lambda Managed Instances): each invocation runs inside its own InvokeStore
 * context, so Powertools keeps log keys (`request_id`, `route`) and stored metrics per invocation.
 * The local gateway and the tests serve concurrent requests from one process, exactly that case;
 * without it one request's log lines would carry another's request id.
 */
import { InvokeStore } from '@aws/lambda-invoke-store';
import type { Context } from 'aws-lambda';

const store = InvokeStore.getInstanceAsync(true).then((instance) => {
  // Read by Powertools at every call, as the runtime sets it in such an environment; set only once
  // the store exists, because Powertools refuses to run with the variable and no store.
  process.env.AWS_LAMBDA_MAX_CONCURRENCY ??= '64';
  return instance;
});
/** The runtime's key for the request id (InvokeStoreBase.PROTECTED_KEYS.REQUEST_ID). */
const REQUEST_ID = Symbol.for('_AWS_LAMBDA_REQUEST_ID');

export const invokeFunction = async <TEvent, TContext extends Context, TResult>(
  handler: (event: TEvent, context: TContext) => Promise<TResult>,
  event: TEvent,
  context: TContext,
): Promise<TResult> => {
  const invokeStore = await store;
  return invokeStore.run({ [REQUEST_ID]: context.awsRequestId }, () => handler(event, context));
};
