/**
 * The local stack runs every function the deployed stack routes to, through its one loader
 * (lib/local/functions.ts), which a build of the CLI bundles.
 */
import { fallbackEntry, routes, secretScanningRoute } from '../../shared/api/routes';
import { AGGREGATOR_ENTRY } from '../../shared/lambda/usage-stream';
import { loadHandler, LOCAL_FUNCTION_ENTRIES } from '../../lib/local/functions';

const STACK_ENTRIES = [
  ...routes.map((route) => route.entry),
  secretScanningRoute.entry,
  fallbackEntry,
  AGGREGATOR_ENTRY,
];

test('the loader has every entry the routes, the fallback and the usage aggregator name, and no other', () => {
  expect([...LOCAL_FUNCTION_ENTRIES].sort()).toEqual([...new Set(STACK_ENTRIES)].sort());
});

test.each(STACK_ENTRIES)('%s loads a handler', async (entry) => {
  expect(typeof (await loadHandler(entry))).toBe('function');
});

test('an entry without a loader is refused with the file to add it to', async () => {
  await expect(loadHandler('functions/not-there.ts')).rejects.toThrow('lib/local/functions.ts');
});
