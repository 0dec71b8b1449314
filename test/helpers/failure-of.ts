/**
 * What a promise rejects with, read as an Error, and the ConfigError a call throws.
 * @module
 */

import { ConfigError } from '../../src/errors.js';

/**
 * What `work` rejects with, required to be an `Error`: `rejects.toThrow(pattern)` also passes
 * for a promise that rejects with `undefined`, which would hide an error that lost its message.
 * Fails the test when `work` resolves, or rejects with anything but an `Error`.
 */
export async function failureOf(work: unknown): Promise<Error> {
  try {
    await work;
  } catch (error) {
    if (error instanceof Error) return error;
    throw new Error(`rejected with a non-Error: ${String(error)}`);
  }
  throw new Error('expected a rejection');
}

/**
 * The `ConfigError` `make` throws at once, with its stable code. Fails the test when `make`
 * returns, or throws anything else (which is rethrown as it is).
 */
export function configRefusal(make: () => unknown): ConfigError {
  try {
    make();
  } catch (error) {
    if (error instanceof ConfigError && error.code === 'config') return error;
    throw error;
  }
  throw new Error('expected a ConfigError, and nothing was thrown');
}
