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
}

/** A store whose every operation returns a promise: one on a server (Redis, Postgres). */
export interface AsyncIdempotencyStore extends IdempotencyStore {
  claim(key: string, leaseMs: number): Promise<ClaimResult>;
  complete(key: string, token: string, ttlMs: number, fingerprint: string): Promise<void>;
  release(key: string, token: string): Promise<void>;
}
