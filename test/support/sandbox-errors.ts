import { types } from 'node:util';

/*
 * Jest runs each test file in a vm context whose `Error` is not the `Error` of Node's core, so an
 * error raised by Node itself (ECONNREFUSED, ECONNRESET) fails `instanceof Error` in the sandbox
 * (jestjs/jest#2549). The SDK's retry middleware then swaps it for a generic "AWS SDK error
 * wrapper" that has lost its `code`: a 503 case would look like a 500, which no Lambda ever sees.
 * Let the sandbox's `Error` (itself only, not its subclasses) recognise native errors of any realm.
 */
const sandboxError = Error;
Object.defineProperty(Error, Symbol.hasInstance, {
  configurable: true,
  value(this: unknown, value: unknown): boolean {
    return (
      Function.prototype[Symbol.hasInstance].call(this, value) || (this === sandboxError && types.isNativeError(value))
    );
  },
});
