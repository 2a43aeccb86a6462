/**
 * A child process for tests that kill one mid-action: disables the keys named on its command line
 * (the branch first), all at once, through the keys repository against DYNAMODB_ENDPOINT, with its
 * events to KEY_EVENTS_FILE. Run with `node --import tsx`; the test holds its calls and kills it.
 */
import { createOperatorContext } from '../../lib/operator/context';

const [branchId, ...keyIds] = process.argv.slice(2);
const ctx = createOperatorContext(process.env);
await Promise.all(keyIds.map((keyId) => ctx.keys.disable({ branchId: branchId!, keyId, actor: 'killed-child' })));
ctx.close();
