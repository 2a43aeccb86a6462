/**
 * The function handlers the local stack runs, by the entries the CDK stack deploys
 * (shared/api/routes.ts, shared/lambda/usage-stream.ts). Written as imports so that the CLI's
 * build (scripts/build.mjs) bundles them; each loads when first asked for, as a Lambda at init.
 */
const FUNCTION_LOADERS: Readonly<Record<string, () => Promise<{ handler: unknown }>>> = {
  'functions/get-branch.ts': () => import('../../functions/get-branch'),
  'functions/list-members.ts': () => import('../../functions/list-members'),
  'functions/list-payment-providers.ts': () => import('../../functions/list-payment-providers'),
  'functions/get-payment-provider.ts': () => import('../../functions/get-payment-provider'),
  'functions/secret-scanning.ts': () => import('../../functions/secret-scanning'),
  'functions/fallback.ts': () => import('../../functions/fallback'),
  'functions/aggregate-usage.ts': () => import('../../functions/aggregate-usage'),
};

/** The entries the local stack can run (test/local/functions.test.ts checks them against the stack's). */
export const LOCAL_FUNCTION_ENTRIES: readonly string[] = Object.keys(FUNCTION_LOADERS);

/** The handler of a function entry (`functions/get-branch.ts`), of the type its caller invokes. */
export const loadHandler = async <Handler>(entry: string): Promise<Handler> => {
  const loader = FUNCTION_LOADERS[entry];
  if (!loader) throw new Error(`The local stack has no loader for ${entry}: add it to lib/local/functions.ts`);
  return (await loader()).handler as Handler;
};
