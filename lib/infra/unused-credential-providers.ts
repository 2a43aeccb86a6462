/**
 * Bundled in place of the SDK credential providers a Lambda function never reaches: its chain stops
 * at `fromEnv`, where Lambda puts the role's credentials. Should it get further, each link here
 * declines as the real one does without its configuration, and the chain moves on.
 */
import { CredentialsProviderError } from '@smithy/core/config';

const unavailable = (name: string) => () => async (): Promise<never> => {
  throw new CredentialsProviderError(`${name} is not bundled in this Lambda function`, { tryNextLink: true });
};

export const fromSSO = unavailable('fromSSO');
export const fromIni = unavailable('fromIni');
export const fromProcess = unavailable('fromProcess');
export const fromTokenFile = unavailable('fromTokenFile');
