/**
 * An in-process idempotency store on two generations of `Map`s.
 * @module
 */

import { ConfigError } from '../errors.js';
import type { IdempotencyStore } from './types.js';
import { MEMORY_STORE_DEFAULTS } from '../defaults.js';

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /**
   * The most keys kept, in two generations: when the newer one holds half of `max`, or both
   * together hold `max`, the older one is dropped whole. The first `max` keys are all kept, and
   * every key is kept for at least the next `max / 2` (rounded down). Default 100 000.
   */
  max?: number;
}

/**
 * A key's state: its lease number while in flight, its fingerprint once complete, and the
 * `performance.now()` at which that ends.
 */
interface Entry {
  value: number | string;
  expires: number;
}

/**
 * An idempotency store for one process. Keys expire on their own (the lease, or dedupTtlMs once
 * complete). It keeps at most `max` keys, in two generations: a key claimed or looked up goes
 * into the newer one, and when that one holds half of `max` (or both hold `max`) the older one
 * is dropped whole. A key is thus kept for at least the next `max / 2` keys. It answers at once,
 * without a promise (check and set in one synchronous step is what makes a claim atomic here),
 * and arms no timer.
 *
 * @example
 * ```ts
 * const receiver = createReceiver({ secret, store: memoryStore({ max: 50_000 }) });
 * ```
 */
export function memoryStore({
  max = MEMORY_STORE_DEFAULTS.max,
}: MemoryStoreOptions = {}): IdempotencyStore {
  if (!Number.isSafeInteger(max) || max < 1) {
    throw new ConfigError(`memoryStore max must be a positive integer, not ${String(max)}`);
  }
  // Two generations rather than a least-recently-used list: a list of 100 000 keys lives in
  // long arrays written at every claim, which Bun's collector rescans whole at each young
  // collection (a delivery on Bun.serve slowed from 33 to 162 µs as the store filled), and a
  // `Map` evicted from its head scans the deleted entries before it. Dropping a whole
  // generation does neither (docs/maintainers/benchmarks.md).
  // The newer generation holds up to half of max, rounded up. It becomes the older one when full,
  // or when the two together hold max, so the older one never holds more than that half.
  const generation = Math.ceil(max / 2);
  let recent = new Map<string, Entry>();
  let older = new Map<string, Entry>();
  // Lease tokens only tell this store's own claims apart, so a counter does (no randomness).
  let leases = 0;

  /** Puts a key into the newer generation, which first becomes the older one if either is full. */
  function keep(key: string, entry: Entry): void {
    if (recent.size >= generation || recent.size + older.size >= max) {
      // The newer generation stays on as the older one only with room for the key beside it
      // (always, but for max 1).
      older = recent.size < max ? recent : new Map();
      recent = new Map();
    }
    recent.set(key, entry);
  }

  /** The key's entry if it has not expired, in the newer generation from now on. */
  function find(key: string): Entry | undefined {
    const current = recent.get(key);
    if (current !== undefined) {
      if (current.expires > performance.now()) return current;
      recent.delete(key);
      return undefined;
    }
    const old = older.get(key);
    if (old === undefined) return undefined;
    older.delete(key);
    if (old.expires <= performance.now()) return undefined;
    keep(key, old);
    return old;
  }

  /** The key's entry while `token`'s lease still holds it. */
  function owned(key: string, token: string): Entry | undefined {
    const entry = find(key);
    return typeof entry?.value === 'number' && String(entry.value) === token ? entry : undefined;
  }

  const store: IdempotencyStore = {
    claim(key, leaseMs) {
      // Check and set in one synchronous step: atomic in this process.
      const entry = find(key);
      if (entry !== undefined) {
        return typeof entry.value === 'string'
          ? { state: 'done', fingerprint: entry.value }
          : { state: 'in_flight' };
      }
      const lease = ++leases;
      keep(key, { value: lease, expires: performance.now() + leaseMs });
      return { state: 'claimed', token: String(lease) };
    },
    complete(key, token, ttlMs, fingerprint) {
      const entry = owned(key, token);
      if (entry === undefined) return;
      entry.value = fingerprint;
      entry.expires = performance.now() + ttlMs;
    },
    release(key, token) {
      if (owned(key, token) !== undefined) recent.delete(key);
    },
  };
  return store;
}
