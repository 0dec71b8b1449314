/**
 * An in-process idempotency store on two generations of `Map`s (`Generations`, below).
 * @module
 */

import { ConfigError } from '../errors.js';
import type {
  Claim,
  ClaimRequest,
  HeldClaim,
  IdempotencyStore,
  KeyState,
  RecordClaim,
  Settlement,
  VersionRequest,
} from './types.js';
import { MEMORY_STORE_DEFAULTS } from '../defaults.js';
import { MemoryWatch } from './memory-watch.js';

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
 * A key's state (an idempotency key or an entity's record): its lease number while in flight,
 * its fingerprint once complete, and the `performance.now()` at which that ends.
 */
interface Entry {
  value: number | string;
  expires: number;
}

/**
 * An entity's state: the newest version possibly applied and when it is forgotten, the lease of
 * the claim that holds it (and when that ends), the version it held before that claim (given
 * back by a release), and the later of all these (when the entry goes).
 */
interface EntityEntry {
  version: number | undefined;
  versionExpires: number;
  lease: number | undefined;
  leaseExpires: number;
  before: { version: number | undefined; versionExpires: number };
  expires: number;
}

/**
 * An idempotency store for one process. Keys expire on their own (the lease, or the completion's
 * ttl). It keeps at most `max` keys, in two generations: a key claimed or looked up goes into the
 * newer one, and when that one holds half of `max` (or both hold `max`) the older one is dropped
 * whole. A key is thus kept for at least the next `max / 2` keys. The entities of the ordering
 * guard (`latestOnly`) are kept apart, by the same rule. Each call checks and sets in one
 * synchronous step (atomic in this process) and answers with a settled promise; it arms no timer.
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
  const store = new MemoryStore(max);
  const watched = new MemoryWatch();
  // A plain object of the store's methods, so a copy or a wrapper ({ ...store }) keeps them.
  return {
    claim: (request) => Promise.resolve(store.claim(request)),
    settle(claim, how) {
      store.settle(claim, how);
      return DONE;
    },
    peek: (keys) => Promise.resolve(keys.map((key) => store.peek(key))),
    watch: (batch) => Promise.resolve(watched.watch(batch)),
  };
}

/** {@link memoryStore}'s state: its keys and records, its entities, its last lease number. */
class MemoryStore {
  readonly #keys: Generations<Entry>;
  readonly #entities: Generations<EntityEntry>;
  /** Lease tokens only tell this store's own claims apart, so a counter does (no randomness). */
  #lastLease = 0;

  constructor(max: number) {
    this.#keys = new Generations<Entry>(max);
    this.#entities = new Generations<EntityEntry>(max);
  }

  /** The claim `request` answered now: taken whole, or nothing taken. */
  claim(request: ClaimRequest): Claim {
    const { key, version } = request;
    const now = performance.now();
    const entry = this.#keys.find(key, now);
    if (entry !== undefined) {
      return typeof entry.value === 'string'
        ? { state: 'done', fingerprint: entry.value }
        : { state: 'in_flight', held: 'key' };
    }
    const asked = request.records;
    const records: RecordClaim[] = asked === undefined ? NO_RECORDS : [];
    for (let i = 0; asked !== undefined && i < asked.length; i++) {
      const held = this.#keys.find(asked[i]!, now);
      if (held === undefined) records.push(HELD);
      else if (typeof held.value === 'string') {
        records.push({ state: 'done', fingerprint: held.value });
      } else return { state: 'in_flight', held: 'record' };
    }
    let superseded = false;
    let entity: EntityEntry | undefined;
    if (version !== undefined) {
      entity = this.#entities.find(version.entity, now);
      const leased = entity?.lease !== undefined && entity.leaseExpires > now;
      // While a claim holds the entity, what counts is what was applied before it.
      const newest = leased ? entity!.before : entity;
      if (newest?.version !== undefined && newest.versionExpires > now) {
        superseded = newest.version > version.versionMs;
      }
      if (leased && !superseded) return { state: 'in_flight', held: 'entity' };
    }
    // Everything is free: take it all.
    const lease = ++this.#lastLease;
    const leaseExpires = now + request.leaseMs;
    this.#keys.keep(key, { value: lease, expires: leaseExpires });
    for (let i = 0; asked !== undefined && i < asked.length; i++) {
      if (records[i] === HELD) this.#keys.keep(asked[i]!, { value: lease, expires: leaseExpires });
    }
    if (version !== undefined && !superseded) {
      this.#takeEntity(entity, lease, leaseExpires, version, now);
    }
    return { state: 'claimed', request, token: String(lease), records, superseded };
  }

  /** The entity taken at `version` (recorded now as possibly applied), by lease `lease`. */
  #takeEntity(
    found: EntityEntry | undefined,
    lease: number,
    leaseExpires: number,
    { entity, versionMs, ttlMs }: VersionRequest,
    now: number,
  ): void {
    const current = found?.version !== undefined && found.versionExpires > now ? found : undefined;
    const before = {
      version: current?.version,
      versionExpires: current?.versionExpires ?? 0,
    };
    const versionExpires = now + ttlMs;
    const expires = Math.max(versionExpires, leaseExpires);
    const entry = { version: versionMs, versionExpires, lease, leaseExpires, before, expires };
    if (found === undefined) this.#entities.keep(entity, entry);
    else Object.assign(found, entry);
  }

  /** Settles what `claim` holds, if its lease still holds it. */
  settle(claim: HeldClaim, how: Settlement): void {
    const { request, token } = claim;
    const { completion } = request;
    const now = performance.now();
    this.#endKey(request.key, token, how, completion.fingerprint, completion.ttlMs, now);
    const asked = request.records;
    const { fingerprint, ttlMs } = completion.records ?? completion;
    for (let i = 0; asked !== undefined && i < asked.length; i++) {
      if (claim.records[i]?.state === 'held') {
        this.#endKey(asked[i]!, token, how, fingerprint, ttlMs, now);
      }
    }
    if (request.version !== undefined && !claim.superseded) {
      this.#endEntity(request.version.entity, token, how, now);
    }
  }

  /** Completes (or frees) a key or a record while `token`'s lease holds it. */
  #endKey(
    key: string,
    token: string,
    how: Settlement,
    fingerprint: string,
    ttlMs: number,
    now: number,
  ): void {
    const entry = this.#keys.find(key, now);
    if (typeof entry?.value !== 'number' || String(entry.value) !== token) return;
    if (how === 'release') this.#keys.drop(key);
    else {
      entry.value = fingerprint;
      entry.expires = now + ttlMs;
    }
  }

  /** Frees the entity a claim holds, keeping its version (`complete`) or the one before (`release`). */
  #endEntity(name: string, token: string, how: Settlement, now: number): void {
    const entity = this.#entities.find(name, now);
    if (entity?.lease === undefined || entity.leaseExpires <= now) return;
    if (String(entity.lease) !== token) return;
    entity.lease = undefined;
    // A release gives the entity back the version it had; a completion keeps its own.
    if (how === 'release') Object.assign(entity, entity.before);
    entity.expires = entity.versionExpires;
    if (entity.version === undefined) this.#entities.drop(name);
  }

  /** What `key` holds now. */
  peek(key: string): KeyState {
    const entry = this.#keys.find(key, performance.now());
    if (entry === undefined) return FREE;
    return typeof entry.value === 'string'
      ? { state: 'done', fingerprint: entry.value }
      : IN_FLIGHT;
  }
}

const HELD: RecordClaim = Object.freeze({ state: 'held' });
/** The records of a claim that asked for none (never written to). */
const NO_RECORDS: RecordClaim[] = [];
const FREE: KeyState = Object.freeze({ state: 'free' });
const IN_FLIGHT: KeyState = Object.freeze({ state: 'in_flight' });
const DONE: Promise<void> = Promise.resolve();

/** An entry: it is dropped once `performance.now()` reaches `expires`. */
interface Expiring {
  expires: number;
}

/**
 * At most `max` entries, in two generations: an entry kept or found goes into the newer one, and
 * when that one holds half of `max` (or both hold `max`) the older one is dropped whole. An entry
 * is thus kept for at least the next `max / 2` (rounded down).
 *
 * Two generations rather than a least-recently-used list: a list lives in long arrays written at
 * every claim, which Bun's collector rescans whole at each young collection, and a `Map` evicted
 * from its head scans the deleted entries before it. Dropping a whole generation does neither
 * (docs/decisions.md has what it saves).
 */
class Generations<E extends Expiring> {
  readonly #max: number;
  /** The newer generation holds up to half of max, rounded up. */
  readonly #generation: number;
  #recent = new Map<string, E>();
  #older = new Map<string, E>();

  constructor(max: number) {
    this.#max = max;
    this.#generation = Math.ceil(max / 2);
  }

  /** Puts an entry into the newer generation, which first becomes the older one if either is full. */
  keep(key: string, entry: E): void {
    const recent = this.#recent;
    if (recent.size >= this.#generation || recent.size + this.#older.size >= this.#max) {
      // The newer generation stays on as the older one only with room for the entry beside it
      // (always, but for max 1).
      this.#older = recent.size < this.#max ? recent : new Map();
      this.#recent = new Map();
    }
    this.#recent.set(key, entry);
  }

  /**
   * The entry of `key` if it has not expired at `now` (the caller's `performance.now()`, read once
   * per store call), in the newer generation from now on.
   */
  find(key: string, now: number): E | undefined {
    const current = this.#recent.get(key);
    if (current !== undefined) {
      if (current.expires > now) return current;
      this.#recent.delete(key);
      return undefined;
    }
    const old = this.#older.get(key);
    if (old === undefined) return undefined;
    this.#older.delete(key);
    if (old.expires <= now) return undefined;
    this.keep(key, old);
    return old;
  }

  /** Drops the entry of `key` (one just found: it is in the newer generation). */
  drop(key: string): void {
    this.#recent.delete(key);
  }
}
