/**
 * Who an operator action is recorded as (docs/decisions.md "Key activity"): the OS user against a
 * local DynamoDB, the IAM principal (STS GetCallerIdentity, asked once per process, on first use)
 * against AWS. Never a credential: only the user name or the principal's ARN.
 */
import { userInfo } from 'node:os';

type Env = Record<string, string | undefined>;

/** The OS user's name, or `unknown` where the OS has none for this process. */
export const osUser = (): string => {
  try {
    return `${userInfo().username}`;
  } catch {
    return 'unknown';
  }
};

/** STS is loaded here, on first use: against a local target, and for reads, it never is. */
const callerArn = async (region: string): Promise<string> => {
  const { GetCallerIdentityCommand, STSClient } = await import('@aws-sdk/client-sts');
  const sts = new STSClient({ region, maxAttempts: 3 });
  try {
    const { Arn } = await sts.send(new GetCallerIdentityCommand({}));
    return Arn ?? 'unknown';
  } finally {
    sts.destroy();
  }
};

/**
 * A function that answers the actor, computing it at most once. The local target never calls
 * STS (it has no AWS identity and may run offline).
 */
export const actorResolver = (env: Env, local: boolean): (() => Promise<string>) => {
  let actor: Promise<string> | undefined;
  return () => {
    actor ??= local
      ? Promise.resolve(osUser())
      : callerArn(env.AWS_REGION?.trim() || env.AWS_DEFAULT_REGION?.trim() || 'us-east-1').catch((error: unknown) => {
          actor = undefined; // a failed look-up is asked again by the next action, not cached
          throw error;
        });
    return actor;
  };
};
