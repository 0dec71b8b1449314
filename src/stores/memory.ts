/**
 * An in-process idempotency store on lru-cache.
 * @module
 */

import { LRUCache } from 'lru-cache';
import type { ClaimResult, IdempotencyStore } from './types.js';

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /** The most keys kept; the least recently used go first beyond it. Default 100 000. */
  max?: number;
}

/** The store's operations, synchronous: what its promises resolve to, without the promise. */
export interface SyncIdempotencyStore {
  claim(key: string, leaseMs: number): ClaimResult;
  complete(key: string, token: string, ttlMs: number, fingerprint: string): void;
  release(key: string, token: string): void;
}

/**
 * The synchronous face of each store made by {@link memoryStore}, for the receiver to skip a
 * promise per step. Keyed by the store object itself: a copy or a wrapper (`{ ...store, claim }`)
 * is not found here, so whatever it overrides is used.
 */
const syncFaces = new WeakMap<IdempotencyStore, SyncIdempotencyStore>();

/**
 * The synchronous operations of a store made by {@link memoryStore}, or undefined for any other.
 * @internal
 */
export function syncFaceOf(store: IdempotencyStore): SyncIdempotencyStore | undefined {
  return syncFaces.get(store);
}

/**
 * An idempotency store for one process. Keys expire on their own (the lease, or dedupTtlMs once
 * complete); past `max` keys the least recently used are dropped.
 *
 * @example
 * ```ts
 * const receiver = createReceiver({ secret, store: memoryStore({ max: 50_000 }) });
 * ```
 */
export function memoryStore({ max = 100_000 }: MemoryStoreOptions = {}): IdempotencyStore {
  // A key in flight holds its lease number, a completed key its fingerprint: no object per key.
  const entries = new LRUCache<string, number | string>({ max, ttlAutopurge: false });
  // Lease tokens only tell this store's own claims apart, so a counter does (no randomness).
  let leases = 0;

  const sync: SyncIdempotencyStore = {
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

  function owns(key: string, token: string): boolean {
    const entry = entries.peek(key);
    return typeof entry === 'number' && String(entry) === token;
  }

  const store: IdempotencyStore = {
    async claim(key, leaseMs) {
      return sync.claim(key, leaseMs);
    },
    async complete(key, token, ttlMs, fingerprint) {
      sync.complete(key, token, ttlMs, fingerprint);
    },
    async release(key, token) {
      sync.release(key, token);
    },
  };
  syncFaces.set(store, sync);
  return store;
}
