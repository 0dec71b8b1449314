/**
 * An in-process idempotency store: one `Map`, its order the order of last use.
 * @module
 */

import { ConfigError } from '../errors.js';
import type { IdempotencyStore } from './types.js';

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /** The most keys kept; the least recently used go first beyond it. Default 100 000. */
  max?: number;
}

/** A key's state: its lease number while in flight, its fingerprint once complete. */
class Entry {
  constructor(
    public value: number | string,
    /** On the monotonic clock (`performance.now()`): a change of the system time moves no expiry. */
    public expiresAt: number,
  ) {}
}

/**
 * An idempotency store for one process. Keys expire on their own (the lease, or dedupTtlMs once
 * complete); past `max` keys the least recently used are dropped. It answers at once, without a
 * promise (check and set in one synchronous step is what makes a claim atomic here).
 *
 * A `Map` keeps the keys in the order they were last used, so the first one is the one to drop;
 * an expired key is dropped when it is next looked at or when it comes first. No timer runs: a
 * cache that arms one to refresh its clock or purge expired keys costs each delivery more than
 * this whole store (docs/benchmarks.md).
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
  const entries = new Map<string, Entry>();
  // Lease tokens only tell this store's own claims apart, so a counter does (no randomness).
  let leases = 0;

  /** The key's entry unless it expired (an expired one is dropped). */
  function live(key: string, now: number): Entry | undefined {
    const entry = entries.get(key);
    if (entry === undefined || entry.expiresAt > now) return entry;
    entries.delete(key);
    return undefined;
  }

  /** The entry of a key `token` still holds: its lease has not run out, nor been taken over. */
  function owned(key: string, token: string, now: number): Entry | undefined {
    const entry = live(key, now);
    return entry !== undefined && typeof entry.value === 'number' && String(entry.value) === token
      ? entry
      : undefined;
  }

  /** Move a key to the end of the order: the most recently used. */
  function touch(key: string, entry: Entry): void {
    entries.delete(key);
    entries.set(key, entry);
  }

  return {
    claim(key, leaseMs) {
      const now = performance.now();
      // Check and set in one synchronous step: atomic in this process.
      const entry = live(key, now);
      if (entry !== undefined) {
        touch(key, entry);
        return typeof entry.value === 'string'
          ? { state: 'done', fingerprint: entry.value }
          : { state: 'in_flight' };
      }
      const lease = ++leases;
      entries.set(key, new Entry(lease, now + leaseMs));
      if (entries.size > max) {
        // The first key is the least recently used: a Map iterates in insertion order.
        entries.delete(entries.keys().next().value!);
      }
      return { state: 'claimed', token: String(lease) };
    },
    complete(key, token, ttlMs, fingerprint) {
      const now = performance.now();
      const entry = owned(key, token, now);
      if (entry === undefined) return;
      entry.value = fingerprint;
      entry.expiresAt = now + ttlMs;
      touch(key, entry);
    },
    release(key, token) {
      if (owned(key, token, performance.now()) !== undefined) entries.delete(key);
    },
  };
}
