/**
 * The check every option that takes a store makes once, at start-up: a store written for this
 * contract (src/stores/types.ts) has every one of its methods. A store of an earlier contract
 * (`complete`, `release`, `claimEntity`…) is refused naming what it lacks, rather than failing
 * on its first delivery.
 * @module
 */

import { ConfigError } from '../errors.js';
import { STORE_METHODS, type IdempotencyStore } from './types.js';

/** `store` as an idempotency store, or a `ConfigError` naming the methods it lacks (`where`: the option). */
export function checkStore(store: unknown, where: string): IdempotencyStore {
  if (typeof store !== 'object' || store === null) {
    throw new ConfigError(`${where} must be an idempotency store (${STORE_METHODS.join(', ')})`);
  }
  const methods = store as Partial<Record<(typeof STORE_METHODS)[number], unknown>>;
  const missing = STORE_METHODS.filter((name) => typeof methods[name] !== 'function');
  if (missing.length > 0) {
    throw new ConfigError(
      `${where} lacks ${missing.map((name) => `${name}()`).join(', ')}: an idempotency store has ` +
        `${STORE_METHODS.join(', ')} (docs/stores.md#writing-a-store; a store written for ` +
        'schoolhooks 0.2 needs its claim and its completion rewritten as one claim and one settle)',
    );
  }
  return store as IdempotencyStore;
}
