/**
 * The idempotency store contract shared by every store.
 * @module
 */

import type { HandlerTransaction } from '../run-handlers.js';

/** The answer of {@link IdempotencyStore.claim}. */
export type ClaimResult =
  ClaimedKey | { state: 'in_flight' } | { state: 'done'; fingerprint?: string };

/**
 * A key this delivery now holds: its lease token, and the transaction the handlers write
 * through when the store keeps one open for the claim (`postgresStore`).
 */
export interface ClaimedKey {
  state: 'claimed';
  token: string;
  transaction?: ClaimTransaction | undefined;
}

/**
 * The transaction a store opened with a claim. `complete` commits it together with the key,
 * `release` rolls it back.
 */
export interface ClaimTransaction {
  /** What the handlers get as `ctx.transaction`. */
  readonly client: HandlerTransaction;
  /**
   * End the transaction now, rolled back, while handlers may still hold it (they ran past
   * handlerTimeoutMs): nothing they write later may commit, here or anywhere else. The
   * claim's `complete` and `release` are no-ops afterwards.
   */
  abandon(): void;
}

/**
 * The answer of {@link IdempotencyStore.claimEntity}: the entity taken (its lease token), an
 * older version than the newest one completed (`superseded`), or taken by another delivery.
 */
export type EntityClaimResult =
  { state: 'claimed'; token: string } | { state: 'superseded' } | { state: 'in_flight' };

/**
 * The key a delivery holds (its {@link IdempotencyStore.claim}'s token) when it claims its
 * entity: a store whose claim opened a transaction takes the entity in that transaction.
 */
export interface HeldKey {
  readonly key: string;
  readonly token: string;
}

/**
 * Where the receiver records which idempotency keys are in flight and which are done.
 *
 * Each operation returns a promise, or its result at once when the store has it at once
 * (`memoryStore` does): the receiver then goes on without waiting a turn.
 *
 * A store must make `claim` atomic: of many concurrent claims of one free key exactly one
 * gets `claimed`. `complete` and `release` act only while `token` still owns the key, so a
 * delivery whose lease ran out cannot overwrite the one that took over.
 */
export interface IdempotencyStore {
  /** Take the key for `leaseMs`, or say who has it. */
  claim(key: string, leaseMs: number): ClaimResult | Promise<ClaimResult>;
  /**
   * Mark the key done for `ttlMs`, remembering the envelope's fingerprint. With a claim's
   * transaction, this is its commit: a rejection means the handlers' writes are gone too.
   */
  complete(key: string, token: string, ttlMs: number, fingerprint: string): void | Promise<void>;
  /** Give the key back so the next delivery may claim it. */
  release(key: string, token: string): void | Promise<void>;

  /**
   * The ordering guard (`on(name, handler, { latestOnly: true })`): take the entity `entity` (an
   * `entityKeyOf` key, never an idempotency key) for a delivery of version `versionMs` (its
   * event's timestamp), for `leaseMs`, while the delivery holds `held`. `superseded` when a
   * version newer than `versionMs` was completed within its ttl (an equal one is not),
   * `in_flight` while another delivery holds the entity. Of many concurrent claims of one free
   * entity exactly one gets `claimed`. Optional: a receiver with `latestOnly` handlers refuses a
   * store without it (a `ConfigError` at `on()`).
   */
  claimEntity?(
    entity: string,
    versionMs: number,
    leaseMs: number,
    held: HeldKey,
  ): EntityClaimResult | Promise<EntityClaimResult>;
  /**
   * Record `versionMs` as the entity's newest processed version for `ttlMs` (a newer one already
   * recorded stays) and free the entity, while `token` still holds it. With a claim's
   * transaction, it is written in that transaction: it commits with the key's `complete`.
   */
  completeEntity?(
    entity: string,
    token: string,
    versionMs: number,
    ttlMs: number,
  ): void | Promise<void>;
  /**
   * Free the entity, recording nothing, while `token` still holds it. With a claim's transaction,
   * the entity is held by that transaction and freed when the key's claim ends.
   */
  releaseEntity?(entity: string, token: string): void | Promise<void>;

  /**
   * Reconciliation's records (src/entity-records.ts): take the record `record` (a `recordKeyOf`
   * key, kept among the idempotency keys) for a delivery that holds `held`, so no reconciler
   * recovers the entity while the delivery's handlers run. A store whose claim opens a
   * transaction (`postgresStore`) takes and writes it in that transaction; a store without these
   * three methods gets them made of `claim`, `complete` and `release` on the record's key.
   */
  claimRecord?(
    record: string,
    leaseMs: number,
    held: HeldKey,
  ): RecordClaimResult | Promise<RecordClaimResult>;
  /** Record the entity as handled by a webhook for `ttlMs`, while `token` holds the record. */
  completeRecord?(record: string, token: string, ttlMs: number): void | Promise<void>;
  /** Free the record, recording nothing, while `token` holds it. */
  releaseRecord?(record: string, token: string): void | Promise<void>;
}

/**
 * The answer of {@link IdempotencyStore.claimRecord}: the record taken for this delivery (its lease
 * token), already `recorded` by another delivery (nothing to hold: go on), `recovered` by the
 * reconciler (the delivery runs nothing), or held by a reconciler or another delivery.
 */
export type RecordClaimResult =
  | { state: 'claimed'; token: string }
  | { state: 'recorded' }
  | { state: 'recovered' }
  | { state: 'in_flight' };

/** A store that keeps entities' versions: what a receiver with `latestOnly` handlers needs. */
export type EntityVersionStore = IdempotencyStore &
  Required<Pick<IdempotencyStore, 'claimEntity' | 'completeEntity' | 'releaseEntity'>>;

/** Whether `store` keeps entities' versions (all three of its entity methods are there). */
export function keepsEntityVersions(store: IdempotencyStore): store is EntityVersionStore {
  return (
    typeof store.claimEntity === 'function' &&
    typeof store.completeEntity === 'function' &&
    typeof store.releaseEntity === 'function'
  );
}

/** A store whose every operation returns a promise: one on a server (Redis, Postgres). */
export interface AsyncIdempotencyStore extends IdempotencyStore {
  claim(key: string, leaseMs: number): Promise<ClaimResult>;
  complete(key: string, token: string, ttlMs: number, fingerprint: string): Promise<void>;
  release(key: string, token: string): Promise<void>;
  claimEntity?(
    entity: string,
    versionMs: number,
    leaseMs: number,
    held: HeldKey,
  ): Promise<EntityClaimResult>;
  completeEntity?(entity: string, token: string, versionMs: number, ttlMs: number): Promise<void>;
  releaseEntity?(entity: string, token: string): Promise<void>;
}
