/**
 * An in-process idempotency store on two generations of `Map`s (generations.ts).
 * @module
 */

import { ConfigError } from '../errors.js';
import type { IdempotencyStore } from './types.js';
import { MEMORY_STORE_DEFAULTS } from '../defaults.js';
import { Generations } from './generations.js';

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /**
   * The most keys kept, in two generations: when the newer one holds half of `max`, or both
   * together hold `max`, the older one is dropped whole. The first `max` keys are all kept, and
   * every key is kept for at least the next `max / 2` (rounded down). The entities of the
   * ordering guard (`latestOnly`) are kept apart, by the same rule. Default 100 000.
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
 * is dropped whole. A key is thus kept for at least the next `max / 2` keys. It keeps the newest
 * version of each entity of the ordering guard (`latestOnly`) too, apart from the keys. It answers
 * at once, without a promise (check and set in one synchronous step is what makes a claim atomic
 * here), and arms no timer.
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
  const keys = new Generations<Entry>(max);
  // Lease tokens only tell this store's own claims apart, so a counter does (no randomness).
  const leases = { last: 0 };

  /** The key's entry while `token`'s lease still holds it. */
  function owned(key: string, token: string): Entry | undefined {
    const entry = keys.find(key);
    return typeof entry?.value === 'number' && String(entry.value) === token ? entry : undefined;
  }

  const store: IdempotencyStore = {
    claim(key, leaseMs) {
      // Check and set in one synchronous step: atomic in this process.
      const entry = keys.find(key);
      if (entry !== undefined) {
        return typeof entry.value === 'string'
          ? { state: 'done', fingerprint: entry.value }
          : { state: 'in_flight' };
      }
      const lease = ++leases.last;
      keys.keep(key, { value: lease, expires: performance.now() + leaseMs });
      return { state: 'claimed', token: String(lease) };
    },
    complete(key, token, ttlMs, fingerprint) {
      const entry = owned(key, token);
      if (entry === undefined) return;
      entry.value = fingerprint;
      entry.expires = performance.now() + ttlMs;
    },
    release(key, token) {
      if (owned(key, token) !== undefined) keys.drop(key);
    },
    ...entityMethods(new Generations<EntityEntry>(max), leases),
  };
  return store;
}

/**
 * An entity's state: the newest version completed and when it is forgotten, the lease of the
 * delivery that holds it and when that ends, and the later of the two (when the entry goes).
 */
interface EntityEntry {
  version: number | undefined;
  versionExpires: number;
  lease: number | undefined;
  leaseExpires: number;
  expires: number;
}

/** The entity methods of a memory store, on entities kept apart from its keys. */
function entityMethods(
  entities: Generations<EntityEntry>,
  leases: { last: number },
): Required<Pick<IdempotencyStore, 'claimEntity' | 'completeEntity' | 'releaseEntity'>> {
  /** The entity's entry while `token`'s lease still holds it. */
  function holding(entity: string, token: string): EntityEntry | undefined {
    const entry = entities.find(entity);
    const now = performance.now();
    return entry?.lease !== undefined && entry.leaseExpires > now && String(entry.lease) === token
      ? entry
      : undefined;
  }

  return {
    claimEntity(entity, versionMs, leaseMs) {
      // Check and set in one synchronous step, as a key's claim.
      const now = performance.now();
      const entry = entities.find(entity);
      if (entry?.version !== undefined && entry.versionExpires > now && entry.version > versionMs) {
        return { state: 'superseded' };
      }
      if (entry?.lease !== undefined && entry.leaseExpires > now) return { state: 'in_flight' };
      const lease = ++leases.last;
      const leaseExpires = now + leaseMs;
      if (entry === undefined) {
        const fresh = { version: undefined, versionExpires: 0, lease, leaseExpires };
        entities.keep(entity, { ...fresh, expires: leaseExpires });
      } else {
        entry.lease = lease;
        entry.leaseExpires = leaseExpires;
        entry.expires = Math.max(entry.expires, leaseExpires);
      }
      return { state: 'claimed', token: String(lease) };
    },
    completeEntity(entity, token, versionMs, ttlMs) {
      const entry = holding(entity, token);
      if (entry === undefined) return;
      const now = performance.now();
      entry.lease = undefined;
      if (
        entry.version === undefined ||
        entry.versionExpires <= now ||
        versionMs >= entry.version
      ) {
        entry.version = versionMs;
        entry.versionExpires = now + ttlMs;
      }
      entry.expires = entry.versionExpires;
    },
    releaseEntity(entity, token) {
      const entry = holding(entity, token);
      if (entry === undefined) return;
      entry.lease = undefined;
      if (entry.version === undefined) entities.drop(entity);
      else entry.expires = entry.versionExpires;
    },
  };
}
