/**
 * The claims one `postgresStore` holds in this process: each an open transaction on a pooled
 * client, until its commit, its rollback or the end of its lease.
 * @module
 */

// Types only: importing this file never loads pg.
import type { PoolClient } from 'pg';
import { randomToken } from '../utils/crypto.js';
import { noop } from '../utils/noop.js';
import type { ClaimTransaction } from './types.js';

/** A claim this process holds: its open transaction, until commit, rollback or the lease's end. */
export interface Holder {
  /** The storageKey of the idempotency key, as the table holds it. */
  readonly key: string;
  readonly client: PoolClient;
  readonly lease: ReturnType<typeof setTimeout>;
}

/** Back to the pool, for the next claim. */
export function giveBack(client: PoolClient): void {
  client.off('error', noop);
  client.release();
}

/**
 * Closed, never reused: a transaction in it is rolled back, and later queries fail. (pg reads
 * only that `release` was given something true: why is said where it is called.)
 */
export function destroy(client: PoolClient): void {
  client.off('error', noop);
  client.release(true);
}

/**
 * The claims held here, by lease token, and the keys of abandoned claims whose session is still
 * closing (a claim of such a key waits for the close rather than answer `in_flight` meanwhile).
 */
export class HeldClaims {
  readonly #holders = new Map<string, Holder>();
  readonly #closing = new Map<string, Promise<void>>();
  /** The longest an abandoned claim's close is waited for. */
  readonly #closeWaitMs: number;

  constructor(closeWaitMs: number) {
    this.#closeWaitMs = closeWaitMs;
  }

  /** Keep `client`'s open transaction as the claim of `key` for `leaseMs`; its token and handle. */
  hold(
    key: string,
    client: PoolClient,
    leaseMs: number,
  ): { token: string; transaction: ClaimTransaction } {
    const token = randomToken();
    // The lease ran out: the claim ends here.
    const lease = setTimeout(() => this.abandon(token), leaseMs);
    lease.unref?.();
    this.#holders.set(token, { key, client, lease });
    const transaction: ClaimTransaction = {
      client,
      // The handlers ran past their timeout.
      abandon: () => this.abandon(token),
    };
    return { token, transaction };
  }

  /** Takes the holder of `token` for `key` out of the map, or undefined if it has none. */
  take(key: string, token: string): Holder | undefined {
    const holder = this.#holders.get(token);
    if (holder === undefined || holder.key !== key) return undefined;
    this.#holders.delete(token);
    clearTimeout(holder.lease);
    return holder;
  }

  /** The holder of `token`, left in the map, or undefined if it has none (any more). */
  find(token: string): Holder | undefined {
    return this.#holders.get(token);
  }

  /** The close in progress of an abandoned claim of `key`, if any. */
  closingOf(key: string): Promise<void> | undefined {
    return this.#closing.get(key);
  }

  /** Ends a claim this process no longer keeps: closes its client (Postgres rolls back). */
  abandon(token: string): void {
    const holder = this.#holders.get(token);
    if (holder === undefined) return;
    this.#holders.delete(token);
    clearTimeout(holder.lease);
    // The lock goes when the server has ended the session, a moment after the close is sent: a
    // claim of the same key here waits for that rather than answer in_flight meanwhile.
    const { key, client } = holder;
    // (Bounded: a connection that had already dropped emits no second 'end'.)
    const ended = new Promise<void>((resolve) => {
      client.once('end', () => resolve());
      setTimeout(resolve, this.#closeWaitMs).unref?.();
    });
    this.#closing.set(key, ended);
    void ended.then(() => {
      if (this.#closing.get(key) === ended) this.#closing.delete(key);
    });
    destroy(client);
  }
}
