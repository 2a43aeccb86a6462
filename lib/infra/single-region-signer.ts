/**
 * Bundled in place of `@aws-sdk/signature-v4-multi-region` (see BUNDLING in api-function.ts). The
 * EventBridge client signs with it so that global endpoints (SigV4a, signing region `*`) can work;
 * key events go to one regional bus (lib/infra/key-events.ts), which plain SigV4 signs. The real
 * module also names the optional CRT and SigV4a packages in its messages, which the bundle check
 * would read as imports left for the runtime.
 */
export { SignatureV4 as SignatureV4MultiRegion } from '@smithy/signature-v4';
