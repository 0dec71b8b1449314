/**
 * An idempotency store on PostgreSQL (node-postgres) whose claim is a transaction: the handlers
 * write through it, and their writes and the key's completion commit together.
 * @module
 */

// Types only: importing this file never loads pg; the caller passes their own pool.
import type { Pool, PoolClient } from 'pg';
import { BoundedCalls, type BoundedCall } from '../bounded-calls.js';
import { ConfigError, StoreUnavailableError } from '../errors.js';
import { noop } from '../noop.js';
import { destroy, giveBack, HeldClaims, type Holder } from './postgres-claims.js';
import { RECORDED_BY_WEBHOOK, RECOVERED_BY_RUN } from '../entity-records.js';
import { storageKey } from './storage-key.js';
import {
  keyStatements,
  TableUpkeep,
  tableDdl,
  tableName,
  type KeyStatements,
} from './postgres-table.js';
import { storeUnavailable } from './unavailable.js';
import type {
  ClaimResult,
  EntityClaimResult,
  HeldKey,
  IdempotencyStore,
  RecordClaimResult,
} from './types.js';
import { POSTGRES_STORE_DEFAULTS } from '../defaults.js';

// In the built types this module is named 'schoolhooks' (scripts/name-augmentations.mjs), the
// module users import HandlerTransactions from.
declare module '../run-handlers.js' {
  // With `schoolhooks/postgres` imported, `ctx.transaction` is pg's `PoolClient`.
  interface HandlerTransactions {
    postgres: PoolClient;
  }
}

/** Options of {@link postgresStore}. */
export interface PostgresStoreOptions {
  /**
   * A node-postgres `Pool`; the store never ends it. Each delivery in flight holds one of its
   * clients from the claim to the commit, so give it at least as many connections as
   * deliveries you run at once (pg's default is 10).
   */
  pool: Pool;
  /**
   * The table of completed keys, created on first use. A name, or `schema.name`, of letters,
   * digits, `_` and `$`. Default `'schoolhooks_deliveries'`.
   */
  table?: string;
  /**
   * The longest a store call (a connection from the pool, a claim, a commit) may take before it
   * fails with `StoreUnavailableError` (the receiver answers 503 `store_unavailable`). Default 1000.
   */
  connectTimeoutMs?: number;
}

/** Options of {@link postgresStoreSql}. */
export interface PostgresStoreSqlOptions {
  /** As in {@link PostgresStoreOptions.table}. Default `'schoolhooks_deliveries'`. */
  table?: string;
}

/**
 * The SQL that creates {@link postgresStore}'s table, for projects that run their own
 * migrations (the store runs the same statements, `IF NOT EXISTS`, on first use).
 *
 * @example
 * ```ts
 * import { postgresStoreSql } from 'schoolhooks/postgres';
 * await pool.query(postgresStoreSql({ table: 'webhooks.deliveries' }));
 * ```
 */
export function postgresStoreSql({
  table = POSTGRES_STORE_DEFAULTS.table,
}: PostgresStoreSqlOptions = {}): string {
  return tableDdl(tableName(table, 'postgresStoreSql'));
}

/**
 * An idempotency store on PostgreSQL in which a claim is a transaction: the handlers get it as
 * `ctx.transaction`, and the completion commits their writes and the key as one commit.
 *
 * - `claim` takes a client from the pool, opens a transaction and takes the key's lock without
 *   waiting: a key another delivery holds is `in_flight` at once, a completed one is `done` with
 *   its fingerprint; otherwise the transaction stays open for the handlers.
 * - Keys are stored as they are, except one with a lone surrogate or U+0000, or over 2 kB, which
 *   is its `storageKey` (src/stores/storage-key.ts): Postgres text holds neither, and a btree
 *   entry holds about 2.7 kB.
 * - `complete` records the key (fingerprint and expiry) and commits: the handlers' writes
 *   through `ctx.transaction` and the completion are one atomic commit. `release` rolls back.
 *   A timeout (handlers still running at handlerTimeoutMs) or the end of the lease closes the
 *   client at once, so whatever the handlers write later fails instead of committing.
 * - A process that dies mid-delivery leaves nothing: Postgres rolls back the transaction of a
 *   dropped connection and frees its lock, so the retry is processed at once, with no lease to
 *   wait out.
 * - Every call fails with `StoreUnavailableError` within `connectTimeoutMs`, never hangs. The
 *   table is created on first use; expired keys are deleted in small batches, at most once a
 *   minute.
 *
 * Effects outside `ctx.transaction` (an e-mail, an HTTP call, another database) stay
 * at-least-once, as with any store.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { createReceiver } from 'schoolhooks';
 * import { postgresStore } from 'schoolhooks/postgres';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const receiver = createReceiver({ secret, store: postgresStore({ pool }) });
 * receiver.on('PaymentCompleted', async (event, ctx) => {
 *   const { user, totalAmount } = event.data.payment.invoice;
 *   await ctx.transaction!.query('insert into grants (user_id, amount) values ($1, $2)', [
 *     user.id,
 *     totalAmount,
 *   ]);
 * });
 * ```
 */
export function postgresStore(options: PostgresStoreOptions): IdempotencyStore {
  const store = new PostgresStore(options);
  // A plain object of the store's methods, so a copy or a wrapper ({ ...store }) keeps them.
  return {
    claim: (key, leaseMs) => store.claim(key, leaseMs),
    complete: (key, token, ttlMs, fingerprint) => store.complete(key, token, ttlMs, fingerprint),
    release: (key, token) => store.release(key, token),
    claimEntity: (entity, versionMs, leaseMs, held) =>
      store.claimEntity(entity, versionMs, leaseMs, held),
    completeEntity: (entity, token, versionMs, ttlMs) =>
      store.completeEntity(entity, token, versionMs, ttlMs),
    releaseEntity: (entity, token) => store.releaseEntity(entity, token),
    claimRecord: (record, leaseMs, held) => store.claimRecord(record, leaseMs, held),
    completeRecord: (record, token, ttlMs) => store.completeRecord(record, token, ttlMs),
    releaseRecord: (record, token) => store.releaseRecord(record, token),
  };
}

/** {@link postgresStore}'s state: its table, its bounded calls and the claims it holds. */
class PostgresStore implements IdempotencyStore {
  readonly #pool: Pool;
  readonly #calls: BoundedCalls;
  readonly #table: TableUpkeep;
  readonly #statements: KeyStatements;
  readonly #held: HeldClaims;

  constructor({
    pool,
    table = POSTGRES_STORE_DEFAULTS.table,
    connectTimeoutMs = POSTGRES_STORE_DEFAULTS.connectTimeoutMs,
  }: PostgresStoreOptions) {
    const name = tableName(table, 'postgresStore');
    if (!(connectTimeoutMs > 0) || !Number.isFinite(connectTimeoutMs)) {
      throw new ConfigError('postgresStore: connectTimeoutMs must be a positive number');
    }
    this.#pool = pool;
    this.#calls = new BoundedCalls(connectTimeoutMs, {
      timedOut: (operation) =>
        new StoreUnavailableError(
          `Postgres did not answer ${operation} within ${connectTimeoutMs} ms`,
        ),
      failed: unavailable,
    });
    this.#table = new TableUpkeep(pool, name);
    this.#statements = keyStatements(name);
    this.#held = new HeldClaims(connectTimeoutMs / 2);
  }

  async claim(key: string, leaseMs: number): Promise<ClaimResult> {
    if (!(leaseMs > 0) || !Number.isFinite(leaseMs)) {
      throw new ConfigError('postgresStore: leaseMs must be a positive number of milliseconds');
    }
    // No handler for a late claim: #claimWith checks the deadline after its last await and
    // returns a claim in that same tick, and only a timer aborts a call, so none comes late.
    // Its storageKey from here on: pg sends UTF-8 text, which holds no lone surrogate and
    // no U+0000, to a btree of entries under 2.7 kB.
    return this.#calls.run('claim', (call) => this.#claimWith(storageKey(key), leaseMs, call));
  }

  async complete(key: string, token: string, ttlMs: number, fingerprint: string): Promise<void> {
    const holder = this.#held.take(storageKey(key), token);
    if (holder === undefined) return;
    const { client } = holder;
    try {
      await this.#calls.run('commit', async () => {
        await client.query(this.#statements.upsertDone, [holder.key, fingerprint, ttlMs]);
        await client.query('COMMIT');
      });
    } catch (error) {
      // Unanswered or failed: never let the half-done transaction back into the pool.
      destroy(client);
      throw error;
    }
    giveBack(client);
  }

  async release(key: string, token: string): Promise<void> {
    const holder = this.#held.take(storageKey(key), token);
    if (holder === undefined) return;
    const { client } = holder;
    try {
      // Awaited, so the key is free again once release resolves (a retry gets it at once).
      await this.#calls.run('rollback', () => client.query('ROLLBACK'));
    } finally {
      // Closed rather than pooled: a handler that still holds it can write nowhere.
      destroy(client);
    }
  }

  /**
   * The ordering guard's claim of an entity, in the transaction of the key `held` (so its
   * version commits with the handlers' writes): the entity's lock taken without waiting, then
   * `superseded` if a newer version is recorded, else `in_flight` if another transaction has the
   * lock. The lock is the transaction's: its lease is the key's, and it goes when the key's
   * claim ends, whatever the answer.
   */
  async claimEntity(
    entity: string,
    versionMs: number,
    _leaseMs: number,
    held: HeldKey,
  ): Promise<EntityClaimResult> {
    if (!Number.isFinite(versionMs)) {
      throw new ConfigError('postgresStore: versionMs must be a finite number of milliseconds');
    }
    const holder = this.#holderOf(held, 'the entity');
    const key = storageKey(entity);
    const { client } = holder;
    const { entityLockPrefix, selectSuperseded } = this.#statements;
    return this.#calls.run('claimEntity', async (call): Promise<EntityClaimResult> => {
      const locked = await client.query<{ locked: boolean }>(LOCK, [entityLockPrefix + key]);
      step(call);
      // Read after the lock, in a statement of its own: it sees the version the transaction
      // that held the lock before committed (read committed). Read without it too: an older
      // version is superseded at once even while a newer one is in flight.
      const newer = await client.query<{ superseded: boolean }>(selectSuperseded, [key, versionMs]);
      step(call);
      if (newer.rows[0]?.superseded === true) return { state: 'superseded' };
      if (locked.rows[0]?.locked !== true) return { state: 'in_flight' };
      holder.entity = key;
      return { state: 'claimed', token: held.token };
    });
  }

  /** Writes the entity's version in its claim's transaction; the key's `complete` commits it. */
  async completeEntity(
    entity: string,
    token: string,
    versionMs: number,
    ttlMs: number,
  ): Promise<void> {
    const holder = this.#held.find(token);
    const key = storageKey(entity);
    if (holder?.entity !== key) return;
    holder.entity = undefined;
    const { upsertEntity } = this.#statements;
    await this.#calls.run('completeEntity', () =>
      holder.client.query(upsertEntity, [key, versionMs, ttlMs]),
    );
  }

  /** Lets go of the entity: its lock goes with the key's transaction, rolled back by `release`. */
  releaseEntity(entity: string, token: string): Promise<void> {
    const holder = this.#held.find(token);
    if (holder?.entity === storageKey(entity)) holder.entity = undefined;
    return Promise.resolve();
  }

  /**
   * Reconciliation's record of an entity (src/entity-records.ts), in the transaction of the key
   * `held`: the record key's lock taken without waiting (`in_flight` when a reconcile run or
   * another delivery holds it), then `recovered` or `recorded` when its row says so. The lock
   * is the transaction's, as the entity's is.
   */
  async claimRecord(record: string, _leaseMs: number, held: HeldKey): Promise<RecordClaimResult> {
    const holder = this.#holderOf(held, "the entity's record");
    const key = storageKey(record);
    const { client } = holder;
    const { lockPrefix, selectDone } = this.#statements;
    return this.#calls.run('claimRecord', async (call): Promise<RecordClaimResult> => {
      const locked = await client.query<{ locked: boolean }>(LOCK, [lockPrefix + key]);
      step(call);
      if (locked.rows[0]?.locked !== true) return { state: 'in_flight' };
      const done = await client.query<{ fingerprint: string }>(selectDone, [key]);
      step(call);
      const row = done.rows[0];
      if (row !== undefined) {
        return { state: row.fingerprint === RECOVERED_BY_RUN ? 'recovered' : 'recorded' };
      }
      holder.record = key;
      return { state: 'claimed', token: held.token };
    });
  }

  /** Writes the record in its claim's transaction; the key's `complete` commits it. */
  async completeRecord(record: string, token: string, ttlMs: number): Promise<void> {
    const holder = this.#held.find(token);
    const key = storageKey(record);
    if (holder?.record !== key) return;
    holder.record = undefined;
    const { upsertDone } = this.#statements;
    await this.#calls.run('completeRecord', () =>
      holder.client.query(upsertDone, [key, RECORDED_BY_WEBHOOK, ttlMs]),
    );
  }

  /** Lets go of the record: its lock goes with the key's transaction. */
  releaseRecord(record: string, token: string): Promise<void> {
    const holder = this.#held.find(token);
    if (holder?.record === storageKey(record)) holder.record = undefined;
    return Promise.resolve();
  }

  /** The claim of the key `held`, still open, whose transaction takes `what`. */
  #holderOf(held: HeldKey, what: string): Holder {
    const holder = this.#held.find(held.token);
    if (holder === undefined || holder.key !== storageKey(held.key)) {
      throw new StoreUnavailableError(
        `postgresStore: the key's claim has ended (its lease ran out), so its transaction cannot take ${what}`,
      );
    }
    return holder;
  }

  /** A claim within `call`: the table made, a client in a transaction, the key's lock taken. */
  async #claimWith(key: string, leaseMs: number, call: BoundedCall): Promise<ClaimResult> {
    if (!this.#table.made) {
      await this.#table.ensure();
      step(call);
    }
    this.#table.sweep();
    const abandoned = this.#held.closingOf(key);
    if (abandoned !== undefined) {
      await abandoned;
      step(call);
    }
    const client = await this.#pool.connect();
    // A checked-out client whose connection breaks emits 'error'; its queries fail on their own.
    client.on('error', noop);
    try {
      step(call);
      const answer = await this.#lock(client, key, call);
      if (answer !== undefined) {
        giveBack(client);
        return answer;
      }
      return { state: 'claimed', ...this.#held.hold(key, client, leaseMs) };
    } catch (error) {
      // The claim failed: its transaction may be half done.
      destroy(client);
      throw error;
    }
  }

  /**
   * Opens the transaction and takes the key's lock: undefined once held (the transaction stays
   * open), or, rolled back, `in_flight` (another delivery holds it) or `done`.
   */
  async #lock(
    client: PoolClient,
    key: string,
    call: BoundedCall,
  ): Promise<ClaimResult | undefined> {
    // Read committed: each statement sees what was committed before it began, so the SELECT
    // after the lock sees the commit of the delivery that held the lock before us.
    await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
    step(call);
    // A transaction-level advisory lock rather than a row lock: the row of a key in flight
    // does not exist yet, and inserting it would wait on another transaction's uncommitted
    // insert of the same key. pg_try_advisory_xact_lock never waits, and Postgres frees it
    // with the transaction, at commit, at rollback, or when the connection drops.
    const locked = await client.query<{ locked: boolean }>(LOCK, [
      this.#statements.lockPrefix + key,
    ]);
    step(call);
    if (locked.rows[0]?.locked !== true) {
      await client.query('ROLLBACK');
      return { state: 'in_flight' };
    }
    const done = await client.query<{ fingerprint: string }>(this.#statements.selectDone, [key]);
    step(call);
    const row = done.rows[0];
    if (row === undefined) return undefined;
    await client.query('ROLLBACK');
    return { state: 'done', fingerprint: row.fingerprint };
  }
}

/** $1 the text of a lock: true once this transaction holds it, false if another one does. */
const LOCK = 'SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked';

/** Throws once the call's deadline has passed: the caller was told it failed, so stop here. */
function step(call: BoundedCall): void {
  if (call.aborted) throw new Error('the call timed out');
}

/** A `StoreUnavailableError` for any failure of a call to Postgres. */
function unavailable(operation: string, error: unknown): StoreUnavailableError {
  return storeUnavailable('Postgres', operation, error);
}
