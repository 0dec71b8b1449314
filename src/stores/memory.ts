/**
 * An in-process idempotency store on lru-cache.
 * @module
 */

import { LRUCache } from 'lru-cache';
import { ConfigError } from '../errors.js';
import type { IdempotencyStore } from './types.js';

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /** The most keys kept; the least recently used go first beyond it. Default 100 000. */
  max?: number;
}

/**
 * An idempotency store for one process. Keys expire on their own (the lease, or dedupTtlMs once
 * complete); past `max` keys the least recently used are dropped. It answers at once, without a
 * promise (check and set in one synchronous step is what makes a claim atomic here).
 *
 * @example
 * ```ts
 * const receiver = createReceiver({ secret, store: memoryStore({ max: 50_000 }) });
 * ```
 */
export function memoryStore({ max = 100_000 }: MemoryStoreOptions = {}): IdempotencyStore {
  if (!Number.isSafeInteger(max) || max < 1) {
    throw new ConfigError(`memoryStore max must be a positive integer, not ${String(max)}`);
  }
  // A key in flight holds its lease number, a completed key its fingerprint: no object per key.
  // `ttlResolution: 0` reads the clock at each look-up: lru-cache's default caches it for 1 ms
  // and arms a timer to forget it, about one timer per millisecond under load, whose timer work
  // cost a delivery about as much as the store's own look-ups (docs/benchmarks.md).
  const entries = new LRUCache<string, number | string>({
    max,
    ttlAutopurge: false,
    ttlResolution: 0,
  });
  // Lease tokens only tell this store's own claims apart, so a counter does (no randomness).
  let leases = 0;

  function owns(key: string, token: string): boolean {
    const entry = entries.peek(key);
    return typeof entry === 'number' && String(entry) === token;
  }

  const store: IdempotencyStore = {
    claim(key, leaseMs) {
      // Check and set in one synchronous step: atomic in this process.
      const entry = entries.get(key);
      if (typeof entry === 'string') return { state: 'done', fingerprint: entry };
      if (entry !== undefined) return { state: 'in_flight' };
      const lease = ++leases;
      entries.set(key, lease, { ttl: leaseMs });
      return { state: 'claimed', token: String(lease) };
    },
    complete(key, token, ttlMs, fingerprint) {
      if (owns(key, token)) entries.set(key, fingerprint, { ttl: ttlMs });
    },
    release(key, token) {
      if (owns(key, token)) entries.delete(key);
    },
  };
  return store;
}
