/**
 * An in-process idempotency store on lru-cache.
 * @module
 */

import { LRUCache } from 'lru-cache';
import { randomToken } from '../crypto.js';
import type { ClaimResult, IdempotencyStore } from './types.js';

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /** The most keys kept; the least recently used go first beyond it. Default 100 000. */
  max?: number;
}

type Entry = { state: 'in_flight'; token: string } | { state: 'done'; fingerprint: string };

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
  const entries = new LRUCache<string, Entry>({ max, ttlAutopurge: false });
  return {
    async claim(key: string, leaseMs: number): Promise<ClaimResult> {
      // No await before the check-and-set: it runs in one tick, so it is atomic in this process.
      const entry = entries.get(key);
      if (entry?.state === 'done') return { state: 'done', fingerprint: entry.fingerprint };
      if (entry) return { state: 'in_flight' };
      const token = randomToken();
      entries.set(key, { state: 'in_flight', token }, { ttl: leaseMs });
      return { state: 'claimed', token };
    },
    async complete(key: string, token: string, ttlMs: number, fingerprint: string): Promise<void> {
      if (!owns(key, token)) return;
      entries.set(key, { state: 'done', fingerprint }, { ttl: ttlMs });
    },
    async release(key: string, token: string): Promise<void> {
      if (owns(key, token)) entries.delete(key);
    },
  };

  function owns(key: string, token: string): boolean {
    const entry = entries.peek(key);
    return entry?.state === 'in_flight' && entry.token === token;
  }
}
