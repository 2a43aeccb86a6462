/**
 * The fault the pending-entry tests inject (test/cli and test/console pending-activity): IAM's
 * answer to an operator policy without dynamodb:PutItem on the activity table, given by the
 * verifier's policy proxy (lib/verify/recording-proxy.ts) in front of this file's DynamoDB.
 */
import { startRecordingProxy, type RecordingProxy } from '../../lib/verify/recording-proxy';

const ACTIVITY_TABLE = process.env.ACTIVITY_TABLE!;

/** What the warning gives as the reason. */
export const DENIED =
  `DynamoDB denied dynamodb:PutItem on table ${ACTIVITY_TABLE} (ACTIVITY_TABLE, stack output ActivityTableName) ` +
  'to your AWS identity: its IAM policy needs the operator grants (docs/deploy.md "Operator permissions")';

/** How the warning ends: where the entry is and who finishes it. */
export const STAYS =
  'it stays on the key, in order, and is finished by the key actions finisher or the next action on this key';

/** A DynamoDB endpoint that allows everything but the activity table's PutItem. */
export const denyActivityCopy = (): Promise<RecordingProxy> => {
  const activityArn = new RegExp(`:table/${ACTIVITY_TABLE}$`);
  return startRecordingProxy(
    process.env.DYNAMODB_ENDPOINT!,
    new Map(),
    (action, arn) => !(action === 'dynamodb:PutItem' && activityArn.test(arn)),
  );
};
