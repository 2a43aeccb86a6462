/**
 * Bundled in place of the AWS SDK credential providers a Lambda function never reaches (see
 * BUNDLING in api-function.ts). Lambda hands the execution role's credentials to the function in
 * environment variables, so the SDK's default chain always stops at its first link, `fromEnv`; the
 * SSO, shared-ini, credential-process and web-identity links after it, with the STS, SSO and
 * sign-in clients they pull in, are about 80 KB of a bundle that is parsed on every cold start.
 * Should the chain ever get this far, each link here declines, exactly as the real one does when
 * its configuration is absent, and the chain moves on.
 */
import { CredentialsProviderError } from '@smithy/core/config';

const unavailable = (name: string) => () => async (): Promise<never> => {
  throw new CredentialsProviderError(`${name} is not bundled in this Lambda function`, { tryNextLink: true });
};

export const fromSSO = unavailable('fromSSO');
export const fromIni = unavailable('fromIni');
export const fromProcess = unavailable('fromProcess');
export const fromTokenFile = unavailable('fromTokenFile');
