/**
 * The idempotency store contract shared by every store: one claim and one settle per delivery
 * (every lease a delivery needs is taken in its claim and ended in its settle), and one look at
 * many keys for a reconcile page (docs/stores.md#writing-a-store).
 * @module
 */

import type { StoreUnavailableError } from '../errors.js';
import type { HandlerTransaction } from '../receiving/run-handlers.js';
import type { WatchBatch, WatchState } from '../watchdog/types.js';

/**
 * What a delivery (or a reconcile run's recovery) asks the store to take, in one call: its key,
 * the records of the entity it is about, and the entity's version, each only if it needs it.
 */
export interface ClaimRequest {
  /** The key to take: a delivery's (`deliveryKeyOf`, `runKeyOf`) or an entity's record. */
  readonly key: string;
  /** How long the claim holds before another may take what it took. */
  readonly leaseMs: number;
  /**
   * What the key (and each record taken) is completed with when the claim settles `complete`.
   * Known at claim time, so a store whose claim is a transaction writes it then, to commit later.
   */
  readonly completion: Completion;
  /**
   * Reconciliation's records (`recordKeyOf` keys) of the entity the claim is about: each taken
   * with the key unless a webhook or a run completed it already (see {@link HeldClaim.records}).
   * Completed with {@link Completion.records} (or the key's completion) at `complete`.
   */
  readonly records?: readonly string[] | undefined;
  /** The ordering guard (`latestOnly`): the entity whose newest state the handlers apply. */
  readonly version?: VersionRequest | undefined;
}

/** What a claim's key and records are completed with. */
export interface Completion {
  /** The key's fingerprint once done (what a later claim of it answers in `done`). */
  readonly fingerprint: string;
  /** How long the key is kept done. */
  readonly ttlMs: number;
  /** How the records the claim took are completed; default: as the key. */
  readonly records?: { readonly fingerprint: string; readonly ttlMs: number } | undefined;
}

/** The entity a claim takes for the ordering guard, at the version its handlers apply. */
export interface VersionRequest {
  /** Its store key: `entityKeyOf(entity, tenant)`, never an idempotency key. */
  readonly entity: string;
  /** The delivery's version: its event's timestamp, in ms since the epoch. */
  readonly versionMs: number;
  /** How long the newest version is remembered. */
  readonly ttlMs: number;
}

/** The answer of {@link IdempotencyStore.claim}. */
export type Claim =
  HeldClaim | InFlight | { readonly state: 'done'; readonly fingerprint?: string };

/**
 * Something the claim needed is held by another claim that is still in flight: nothing was
 * taken. `held` says what: the key, one of its records, or the entity (ordering guard).
 */
export interface InFlight {
  readonly state: 'in_flight';
  readonly held: 'key' | 'record' | 'entity';
}

/**
 * A claim that holds its key: settle it exactly once (`settle(claim, 'complete' | 'release')`).
 */
export interface HeldClaim {
  readonly state: 'claimed';
  /** The request it answers. */
  readonly request: ClaimRequest;
  /** Its lease token. */
  readonly token: string;
  /**
   * One answer per record of the request, in its order: `held` (taken with the key, completed or
   * freed with it), or `done` with the fingerprint a webhook or a run completed it with.
   */
  readonly records: readonly RecordClaim[];
  /**
   * True when the request's version is older than the entity's newest one (applied, or possibly
   * applied by a claim whose lease ran out unsettled): the entity was not taken, and the
   * handlers must not run. False when the entity was taken, or none was asked for.
   */
  readonly superseded: boolean;
  /** The transaction the store opened with the claim, if it opens one (`postgresStore`). */
  readonly transaction?: ClaimTransaction | undefined;
}

/** A record a claim asked for: taken with its key, or completed earlier. */
export type RecordClaim =
  { readonly state: 'held' } | { readonly state: 'done'; readonly fingerprint: string };

/**
 * The transaction a store opened with a claim. Settling `complete` commits it, `release` rolls it
 * back.
 */
export interface ClaimTransaction {
  /** What the handlers get as `ctx.transaction`. */
  readonly client: HandlerTransaction;
  /**
   * End the transaction now, rolled back, while handlers may still hold it (they ran past
   * handlerTimeoutMs): nothing they write later may commit, here or anywhere else. The claim's
   * settle is a no-op afterwards.
   */
  abandon(): void;
}

/** How a claim ends: its key, records and entity all done, or all given back. */
export type Settlement = 'complete' | 'release';

/** What {@link IdempotencyStore.peek} sees of one key, taking nothing. */
export type KeyState =
  | { readonly state: 'free' }
  | { readonly state: 'in_flight' }
  | { readonly state: 'done'; readonly fingerprint?: string };

/**
 * Where the receiver records which keys are in flight and which are done, which entities' records
 * a webhook or a reconcile run completed, and each entity's newest version.
 *
 * - `claim` is atomic and all or nothing: of many concurrent claims of one free key exactly one
 *   is `claimed`, and a claim that finds its key done, or anything it needs held by another
 *   claim, takes nothing.
 * - **The version is taken at claim time.** A claim that takes an entity records its version as
 *   possibly applied: if its lease runs out unsettled (its process died mid-handler), an older
 *   version is `superseded` from then on, and the same or a newer one may run. A release gives
 *   the entity its version back; a completion keeps it.
 * - `settle` acts only while the claim's token still owns what it took, so a delivery whose lease
 *   ran out can neither complete nor free what another delivery has taken since.
 * - Every method returns a promise; a store that fails rejects (never throws).
 */
export interface IdempotencyStore {
  /** Take the key, and the records and entity the request names, for `leaseMs`; or say why not. */
  claim(request: ClaimRequest): Promise<Claim>;
  /**
   * End a claim: `complete` marks its key and the records it holds done (with the request's
   * {@link Completion}) and keeps its version; `release` frees all of them and gives the entity
   * its version back. With a claim's transaction this is its commit, or its rollback.
   */
  settle(claim: HeldClaim, how: Settlement): Promise<void>;
  /**
   * What each key holds now, taking nothing: one round trip for a reconcile page, and a dry run
   * that writes nothing. A store whose claims are transactions may see a key in flight as `free`
   * (a claim of it then answers `in_flight`).
   */
  peek(keys: readonly string[]): Promise<readonly KeyState[]>;
  /**
   * The watchdog's bookkeeping (src/watchdog, docs/watchdog.md), optional: keep the answers a
   * receiver gave and give back what one tenant's answers say. A receiver calls it at most once a
   * second per process with all its answers since (and once more when a watchdog given it
   * checks), never once a delivery. Every process's notes of a tenant count together, in any
   * order; a failing delivery first answered before `now - keepMs` is forgotten, and so are the
   * oldest (by first attempt) past `maxFailing` a tenant; an unknown tenant reads
   * `{ failing: [] }`, a batch without `read` gives back undefined. A server that expires what it
   * keeps drops a tenant's failing deliveries keepMs after its last write, and its summary (last
   * success, last attempt, failing time) only keepSummaryMs after, longer than the platform's
   * disable span: a tenant that hears nothing for days still reads its last success. memoryStore
   * (which keeps summaries with the process), redisStore (one script a call) and postgresStore (one
   * short transaction a call) keep them; a store without it cannot be watched.
   */
  watch?(batch: WatchBatch): Promise<WatchState | undefined>;
  /**
   * Optional: be told of each failure the store's client reports outside any call (a pooled
   * connection the server ended while idle, a reconnection that failed), as a
   * `StoreUnavailableError`. Returns what stops it. A receiver subscribes when it is created and
   * reports each through its `onError` handlers or its logger; while nobody subscribes, the store
   * writes them to the console itself, one line per burst. `postgresStore` and `redisStore`
   * listen to their client from their creation, so such an error never ends the process.
   *
   * @example
   * ```ts
   * const stop = store.onError?.((error) => console.warn(error.code, error.message));
   * ```
   */
  onError?(listener: (error: StoreUnavailableError) => void): () => void;
  /**
   * Optional: let go of what the store holds of its client (its `'error'` listener) once no
   * call is made any more. The client or pool was given by the caller and stays open: end it
   * after this (`await store.close?.(); await pool.end()`).
   */
  close?(): Promise<void>;
}

/** The methods every store must have, in the order a `ConfigError` names a missing one. */
export const STORE_METHODS = ['claim', 'settle', 'peek'] as const;
