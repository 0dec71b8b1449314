/**
 * An idempotency store on PostgreSQL (node-postgres) whose claim is a transaction: the handlers
 * write through it, and their writes and the key's completion commit together.
 * @module
 */

// Types only: importing this file never loads pg; the caller passes their own pool.
import type { Pool, PoolClient } from 'pg';
import { BoundedCalls, type BoundedCall } from '../bounded-calls.js';
import { randomToken } from '../crypto.js';
import { ConfigError, StoreUnavailableError } from '../errors.js';
import { noop } from '../noop.js';
import { storageKey } from './storage-key.js';
import { storeUnavailable } from './unavailable.js';
import type { ClaimResult, ClaimTransaction, IdempotencyStore } from './types.js';
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

/** How many expired keys one statement deletes, and how many statements one sweep runs. */
const SWEEP_BATCH = 500;
const SWEEP_BATCHES = 10;

/** One part of a table name: what Postgres accepts unquoted, in any letter case. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

/** The validated parts of a table name, each double-quoted, and the name of its index. */
interface TableName {
  /** `"name"` or `"schema"."name"`. */
  readonly quoted: string;
  /** The expiry index, `"name_expires_at"` (in the table's schema). */
  readonly index: string;
  /** The table as written (for the advisory lock's key and for messages). */
  readonly plain: string;
}

function tableName(table: string, factory: string): TableName {
  const parts = table.split('.');
  if (parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) {
    throw new ConfigError(
      `${factory}: table must be a name or schema.name of letters, digits, "_" and "$"`,
    );
  }
  const name = parts[parts.length - 1]!;
  return {
    quoted: parts.map((part) => `"${part}"`).join('.'),
    index: `"${`${name}_expires_at`.slice(0, 63)}"`,
    plain: table,
  };
}

function ddl({ quoted, index }: TableName): string {
  return (
    `CREATE TABLE IF NOT EXISTS ${quoted} (\n` +
    '  key text PRIMARY KEY,\n' +
    '  fingerprint text NOT NULL,\n' +
    '  expires_at timestamptz NOT NULL\n' +
    ');\n' +
    `CREATE INDEX IF NOT EXISTS ${index} ON ${quoted} (expires_at);\n`
  );
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
  return ddl(tableName(table, 'postgresStoreSql'));
}

/** A claim this process holds: its open transaction, until commit, rollback or the lease's end. */
interface Holder {
  /** The storageKey of the idempotency key, as the table holds it. */
  readonly key: string;
  readonly client: PoolClient;
  readonly lease: ReturnType<typeof setTimeout>;
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
export function postgresStore({
  pool,
  table = POSTGRES_STORE_DEFAULTS.table,
  connectTimeoutMs = POSTGRES_STORE_DEFAULTS.connectTimeoutMs,
}: PostgresStoreOptions): IdempotencyStore {
  const name = tableName(table, 'postgresStore');
  if (!(connectTimeoutMs > 0) || !Number.isFinite(connectTimeoutMs)) {
    throw new ConfigError('postgresStore: connectTimeoutMs must be a positive number');
  }
  const calls = new BoundedCalls(connectTimeoutMs, {
    timedOut: (operation) =>
      new StoreUnavailableError(
        `Postgres did not answer ${operation} within ${connectTimeoutMs} ms`,
      ),
    failed: unavailable,
  });
  // The lock's key is a 64-bit hash of the table and the idempotency key, so two tables never
  // share locks. The table name has no ':' (checked above), so the text is unambiguous.
  const lockPrefix = `schoolhooks:${name.plain}:`;
  const selectDone =
    `SELECT fingerprint FROM ${name.quoted} ` + 'WHERE key = $1 AND expires_at > clock_timestamp()';
  const upsertDone =
    `INSERT INTO ${name.quoted} (key, fingerprint, expires_at) ` +
    "VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond') " +
    'ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, ' +
    'expires_at = excluded.expires_at';
  const deleteExpired =
    `DELETE FROM ${name.quoted} WHERE key IN (SELECT key FROM ${name.quoted} ` +
    `WHERE expires_at <= clock_timestamp() LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED)`;

  // Claims held by this process, by lease token.
  const holders = new Map<string, Holder>();
  // Abandoned claims whose session is still closing, by key.
  const closing = new Map<string, Promise<void>>();
  let tableReady: Promise<void> | undefined;
  let tableMade = false;
  let lastSweep = 0;

  /** Creates the table once (callers bound the wait); a failure is retried by the next call. */
  function ensureTable(): Promise<void> {
    tableReady ??= pool.query(ddl(name)).then(
      () => void (tableMade = true),
      (error: unknown) => {
        // Two processes creating it at once: the loser sees a duplicate; the table is there.
        if (isDuplicateObject(error)) return void (tableMade = true);
        tableReady = undefined;
        throw error;
      },
    );
    return tableReady;
  }

  /** Deletes expired keys in small batches, at most once a minute, never holding up a claim. */
  function sweep(): void {
    const now = Date.now();
    if (now - lastSweep < POSTGRES_STORE_DEFAULTS.sweepEveryMs) return;
    lastSweep = now;
    void (async () => {
      for (let batch = 0; batch < SWEEP_BATCHES; batch++) {
        const { rowCount } = await pool.query(deleteExpired);
        if ((rowCount ?? 0) < SWEEP_BATCH) return;
      }
    })().catch(noop);
  }

  /** Back to the pool, for the next claim. */
  function giveBack(client: PoolClient): void {
    client.off('error', noop);
    client.release();
  }

  /** Closed, never reused: a transaction in it is rolled back, and later queries fail. */
  function destroy(client: PoolClient, reason: string): void {
    client.off('error', noop);
    client.release(new Error(reason));
  }

  /** Ends a claim this process no longer keeps: closes its client (Postgres rolls back). */
  function abandon(token: string, reason: string): void {
    const holder = holders.get(token);
    if (holder === undefined) return;
    holders.delete(token);
    clearTimeout(holder.lease);
    // The lock goes when the server has ended the session, a moment after the close is sent: a
    // claim of the same key here waits for that rather than answer in_flight meanwhile.
    const { key, client } = holder;
    // (Bounded: a connection that had already dropped emits no second 'end'.)
    const ended = new Promise<void>((resolve) => {
      client.once('end', () => resolve());
      setTimeout(resolve, connectTimeoutMs / 2).unref?.();
    });
    closing.set(key, ended);
    void ended.then(() => {
      if (closing.get(key) === ended) closing.delete(key);
    });
    destroy(client, reason);
  }

  /** Takes the holder of `token` for `key` out of the map, or undefined if it has none. */
  function take(key: string, token: string): Holder | undefined {
    const holder = holders.get(token);
    if (holder === undefined || holder.key !== key) return undefined;
    holders.delete(token);
    clearTimeout(holder.lease);
    return holder;
  }

  async function claimWith(key: string, leaseMs: number, call: BoundedCall): Promise<ClaimResult> {
    if (!tableMade) {
      await ensureTable();
      step(call);
    }
    sweep();
    const abandoned = closing.get(key);
    if (abandoned !== undefined) {
      await abandoned;
      step(call);
    }
    const client = await pool.connect();
    // A checked-out client whose connection breaks emits 'error'; its queries fail on their own.
    client.on('error', noop);
    try {
      step(call);
      // Read committed: each statement sees what was committed before it began, so the SELECT
      // after the lock sees the commit of the delivery that held the lock before us.
      await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
      step(call);
      // A transaction-level advisory lock rather than a row lock: the row of a key in flight
      // does not exist yet, and inserting it would wait on another transaction's uncommitted
      // insert of the same key. pg_try_advisory_xact_lock never waits, and Postgres frees it
      // with the transaction, at commit, at rollback, or when the connection drops.
      const locked = await client.query<{ locked: boolean }>(
        'SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked',
        [lockPrefix + key],
      );
      step(call);
      if (locked.rows[0]?.locked !== true) {
        await client.query('ROLLBACK');
        giveBack(client);
        return { state: 'in_flight' };
      }
      const done = await client.query<{ fingerprint: string }>(selectDone, [key]);
      step(call);
      const row = done.rows[0];
      if (row !== undefined) {
        await client.query('ROLLBACK');
        giveBack(client);
        return { state: 'done', fingerprint: row.fingerprint };
      }
      const token = randomToken();
      const lease = setTimeout(() => abandon(token, 'the lease ran out'), leaseMs);
      lease.unref?.();
      holders.set(token, { key, client, lease });
      const transaction: ClaimTransaction = {
        client,
        abandon: () => abandon(token, 'the handlers ran past their timeout'),
      };
      return { state: 'claimed', token, transaction };
    } catch (error) {
      destroy(client, 'the claim failed');
      throw error;
    }
  }

  const store: IdempotencyStore = {
    async claim(key: string, leaseMs: number): Promise<ClaimResult> {
      if (!(leaseMs > 0) || !Number.isFinite(leaseMs)) {
        throw new ConfigError('postgresStore: leaseMs must be a positive number of milliseconds');
      }
      // No handler for a late claim: claimWith checks the deadline after its last await and
      // returns a claim in that same tick, and only a timer aborts a call, so none comes late.
      // Its storageKey from here on: pg sends UTF-8 text, which holds no lone surrogate and
      // no U+0000, to a btree of entries under 2.7 kB.
      return calls.run('claim', (call) => claimWith(storageKey(key), leaseMs, call));
    },

    async complete(key: string, token: string, ttlMs: number, fingerprint: string): Promise<void> {
      const holder = take(storageKey(key), token);
      if (holder === undefined) return;
      const { client } = holder;
      try {
        await calls.run('commit', async () => {
          await client.query(upsertDone, [holder.key, fingerprint, ttlMs]);
          await client.query('COMMIT');
        });
      } catch (error) {
        // Unanswered or failed: never let the half-done transaction back into the pool.
        destroy(client, 'the commit failed');
        throw error;
      }
      giveBack(client);
    },

    async release(key: string, token: string): Promise<void> {
      const holder = take(storageKey(key), token);
      if (holder === undefined) return;
      const { client } = holder;
      try {
        // Awaited, so the key is free again once release resolves (a retry gets it at once).
        await calls.run('rollback', () => client.query('ROLLBACK'));
      } finally {
        // Closed rather than pooled: a handler that still holds it can write nowhere.
        destroy(client, 'the claim was released');
      }
    },
  };
  return store;
}

/** Throws once the call's deadline has passed: the caller was told it failed, so stop here. */
function step(call: BoundedCall): void {
  if (call.aborted) throw new Error('the call timed out');
}

/**
 * `CREATE … IF NOT EXISTS` racing another session: 23505 on pg_type, 42P07 (the relation), or
 * 42710 (its row type, "type … already exists").
 */
function isDuplicateObject(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === '42P07' || code === '42710';
}

/** A `StoreUnavailableError` for any failure of a call to Postgres. */
function unavailable(operation: string, error: unknown): StoreUnavailableError {
  return storeUnavailable('Postgres', operation, error);
}
