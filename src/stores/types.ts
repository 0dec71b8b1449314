/**
 * The idempotency store contract shared by every store.
 * @module
 */

/** The answer of {@link IdempotencyStore.claim}. */
export type ClaimResult =
  | { state: 'claimed'; token: string }
  | { state: 'in_flight' }
  | { state: 'done'; fingerprint?: string };

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
  /** Mark the key done for `ttlMs`, remembering the envelope's fingerprint. */
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
