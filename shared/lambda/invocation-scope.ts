/**
 * Whether the invocation being handled keeps its own values apart from the environment's, as
 * Powertools decides for its own (commons' InvocationScoped): inside the Lambda runtime's
 * invocation store (@aws/lambda-invoke-store) with AWS_LAMBDA_MAX_CONCURRENCY set, as on Lambda
 * Managed Instances and in the local gateway (lib/local/invoke.ts). Powertools reads the variable at
 * every get and set, about 3 µs of a request in place (docs/performance.md "Where the µs go"); here
 * it is read once, at the first request handled inside a store: the runtime sets it before any
 * code runs, lib/local/invoke.ts before its first invocation.
 */
export interface InvocationStore {
  hasContext(): boolean;
  get(key: string): unknown;
  set(key: string, value: unknown): void;
}

let keptApart: boolean | undefined;

/** The invocation store, when the invocation being handled keeps its values in it. */
export const invocationStore = (): InvocationStore | undefined => {
  const store = (globalThis as { awslambda?: { InvokeStore?: InvocationStore } }).awslambda?.InvokeStore;
  if (store === undefined || !store.hasContext()) return undefined;
  keptApart ??= !!process.env.AWS_LAMBDA_MAX_CONCURRENCY;
  return keptApart ? store : undefined;
};

/** Some invocation of this environment has kept its values apart: invocations run at once here. */
export const invocationsKeptApart = (): boolean => keptApart === true;
