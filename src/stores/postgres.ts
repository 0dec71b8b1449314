/**
 * An idempotency store on PostgreSQL (node-postgres) whose claim is a transaction: the handlers
 * write through it, and their writes and the key's completion commit together.
 * @module
 */

// Types only: importing this file never loads pg; the caller passes their own pool.
import type { Pool, PoolClient } from 'pg';
import { BoundedCalls, type BoundedCall } from '../utils/bounded-calls.js';
import { ConfigError, StoreUnavailableError } from '../errors.js';
import { noop } from '../utils/noop.js';
import { ConnectionErrors } from './connection-errors.js';
import { destroy, giveBack, HeldClaims } from './postgres-claims.js';
import { storageKey } from './storage-key.js';
import {
  keyStatements,
  TableUpkeep,
  tableDdl,
  tableName,
  type KeyStatements,
} from './postgres-table.js';
import { storeUnavailable } from './unavailable.js';
import { PostgresWatch } from './postgres-watch.js';
import { checkWatchBatch } from './watch-batch.js';
import type { WatchBatch, WatchState } from '../watchdog/types.js';
import type {
  Claim,
  ClaimRequest,
  HeldClaim,
  IdempotencyStore,
  KeyState,
  RecordClaim,
  Settlement,
} from './types.js';
import { POSTGRES_STORE_DEFAULTS } from '../defaults.js';

// In the built types this module is named 'schoolhooks' (scripts/name-augmentations.mjs), the
// module users import HandlerTransactions from.
declare module '../receiving/run-handlers.js' {
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
   * deliveries you run at once (pg's default is 10). The store listens to its `'error'` event
   * (an idle client whose connection Postgres ended, as a restart does) until `close()`, and
   * reports each (see `IdempotencyStore.onError`): a pool without a listener of its own no
   * longer ends the process.
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
 * - `claim` takes a client from the pool, opens a transaction and takes the locks of the key, its
 *   records and its entity without waiting (one round trip), then reads what is done and writes,
 *   in the transaction, what its completion will commit: the key done, the records `webhook` (or
 *   `reconciled`), the entity's version (one statement). A key another delivery holds is
 *   `in_flight` at once, a completed one is `done` with its fingerprint, each answered once the
 *   transaction is rolled back (its locks free again); otherwise the transaction stays open for
 *   the handlers.
 * - Keys are stored as they are, except one with a lone surrogate or U+0000, or over 2 kB, which
 *   is its `storageKey` (src/stores/storage-key.ts): Postgres text holds neither, and a btree
 *   entry holds about 2.7 kB.
 * - `settle` commits (`complete`: the handlers' writes through `ctx.transaction` and the
 *   completion are one atomic commit; a transaction a failed statement aborted commits nothing,
 *   and its `complete` fails) or rolls back (`release`). A timeout (handlers still running
 *   at handlerTimeoutMs) or the end of the lease closes the client at once, so whatever the
 *   handlers write later fails instead of committing.
 * - A process that dies mid-delivery leaves nothing: Postgres rolls back the transaction of a
 *   dropped connection and frees its locks, so the retry is processed at once, with no lease to
 *   wait out; an entity's version rolls back with the handlers' writes.
 * - `peek` reads which keys are done in one statement, writing and creating nothing (a key in
 *   flight is seen as free: its claim then answers `in_flight`; a table no claim has made yet
 *   holds nothing, so every key is free).
 * - `watch` (the watchdog's notes, docs/watchdog.md) keeps them in `<table>_watch`, one short
 *   transaction a call (src/stores/postgres-watch.ts).
 * - Every call fails with `StoreUnavailableError` within `connectTimeoutMs`, never hangs. The
 *   table is created on first claim; expired keys are deleted in small batches, at most once a
 *   minute.
 * - The pool's `'error'` events (idle clients whose connection ended: Postgres restarted, or
 *   `pg_terminate_backend`) are heard from the store's creation and reported: to the receiver's
 *   `onError` handlers (or its logger), as a `StoreUnavailableError`; with no receiver, to the
 *   console, one line per burst. `close()` removes that listener and leaves the pool open.
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
    claim: (request) => store.claim(request),
    settle: (claim, how) => store.settle(claim, how),
    peek: (keys) => store.peek(keys),
    watch: (batch) => store.watch(batch),
    onError: (listener) => store.errors.subscribe(listener),
    close: async () => store.errors.close(),
  };
}

/** {@link postgresStore}'s state: its table, its bounded calls and the claims it holds. */
class PostgresStore {
  readonly #pool: Pool;
  readonly #calls: BoundedCalls;
  readonly #table: TableUpkeep;
  readonly #statements: KeyStatements;
  readonly #held: HeldClaims;
  readonly #watch: PostgresWatch;
  /** The pool's `'error'` events, heard and told. */
  readonly errors: ConnectionErrors;

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
    this.#watch = new PostgresWatch(name.watch);
    // Last, once the options are checked: a store that was never made leaves no listener.
    this.errors = new ConnectionErrors('Postgres', pool);
  }

  /**
   * The watchdog's notes written (its table made first, as a claim makes the others) and a tenant read
   * back: one short transaction. A read alone is one statement, and finds nothing in a table no
   * call has made yet.
   */
  async watch(batch: WatchBatch): Promise<WatchState | undefined> {
    checkWatchBatch(batch, 'postgresStore');
    if (batch.notes.length === 0) {
      if (batch.read === undefined) return undefined;
      return this.#calls.run('watch', async () => {
        try {
          return await this.#watch.read(this.#pool, batch);
        } catch (error) {
          if (!this.#table.watchMade && isUndefinedTable(error)) return { failing: [] };
          throw error;
        }
      });
    }
    return this.#calls.run('watch', async (call) => {
      if (!this.#table.watchMade) {
        await this.#table.ensureWatch();
        step(call);
      }
      const client = await this.#pool.connect();
      client.on('error', noop);
      try {
        step(call);
        const state = await this.#watch.write(client, batch);
        giveBack(client);
        return state;
      } catch (error) {
        // Its transaction may be half done: never back into the pool.
        destroy(client);
        throw error;
      }
    });
  }

  async claim(request: ClaimRequest): Promise<Claim> {
    const { leaseMs, version } = request;
    if (!(leaseMs > 0) || !Number.isFinite(leaseMs)) {
      throw new ConfigError('postgresStore: leaseMs must be a positive number of milliseconds');
    }
    if (version !== undefined && !Number.isFinite(version.versionMs)) {
      throw new ConfigError('postgresStore: versionMs must be a finite number of milliseconds');
    }
    // No handler for a late claim: #claimWith checks the deadline after its last await and
    // returns a claim in that same tick, and only a timer aborts a call, so none comes late.
    return this.#calls.run('claim', (call) => this.#claimWith(request, call));
  }

  async settle(claim: HeldClaim, how: Settlement): Promise<void> {
    const holder = this.#held.take(storageKey(claim.request.key), claim.token);
    if (holder === undefined) return;
    const { client } = holder;
    if (how === 'release') {
      try {
        // Awaited, so the key is free again once release resolves (a retry gets it at once).
        await this.#calls.run('rollback', () => client.query('ROLLBACK'));
      } finally {
        // Closed rather than pooled: a handler that still holds it can write nowhere.
        destroy(client);
      }
      return;
    }
    try {
      await this.#calls.run('commit', async () => {
        const { command } = await client.query('COMMIT');
        // Postgres answers the COMMIT of a transaction a failed statement aborted (a handler
        // that caught its error) with a ROLLBACK: nothing committed, the key's done row neither.
        if (command !== 'COMMIT') {
          throw new Error(
            `the transaction was rolled back (${command}): a statement in it had failed`,
          );
        }
      });
    } catch (error) {
      // Unanswered or failed: never let the half-done transaction back into the pool.
      destroy(client);
      throw error;
    }
    giveBack(client);
  }

  async peek(keys: readonly string[]): Promise<readonly KeyState[]> {
    if (keys.length === 0) return [];
    const stored = keys.map(storageKey);
    const rows = await this.#calls.run('peek', () => this.#doneAmong(stored));
    const done = new Map(rows.map((row) => [row.key, row.fingerprint]));
    return stored.map((key): KeyState => {
      const fingerprint = done.get(key);
      return fingerprint === undefined ? FREE : { state: 'done', fingerprint };
    });
  }

  /**
   * The keys of `stored` that are done. A table that does not exist yet (no claim has made it)
   * holds nothing: every key is free, and nothing is created.
   */
  async #doneAmong(stored: readonly string[]): Promise<{ key: string; fingerprint: string }[]> {
    if (this.#table.made) return this.#done(stored);
    try {
      return await this.#done(stored);
    } catch (error) {
      if (isUndefinedTable(error)) return [];
      throw error;
    }
  }

  async #done(stored: readonly string[]): Promise<{ key: string; fingerprint: string }[]> {
    const { peekDone } = this.#statements;
    return (await this.#pool.query<{ key: string; fingerprint: string }>(peekDone, [stored])).rows;
  }

  /** A claim within `call`: the table made, a client in a transaction, the locks taken. */
  async #claimWith(request: ClaimRequest, call: BoundedCall): Promise<Claim> {
    if (!this.#table.made) {
      await this.#table.ensure();
      step(call);
    }
    this.#table.sweep();
    // Its storageKey from here on: pg sends UTF-8 text, which holds no lone surrogate and no
    // U+0000, to a btree of entries under 2.7 kB.
    const key = storageKey(request.key);
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
      const claim = await this.#lockAndRead(client, key, request, call);
      if (claim.state !== 'claimed') {
        // Nothing taken: rolled back before the answer, so the locks the claim took (the key's,
        // its records', the entity's) are free and its writes gone when its caller hears it. A
        // rollback left running would hold them a moment longer: a resend of a done key would
        // be answered in_flight, not done, and a record another delivery waits for, held.
        await client.query('ROLLBACK');
        giveBack(client);
        return claim;
      }
      const held = this.#held.hold(key, client, request.leaseMs);
      return { ...claim, token: held.token, transaction: held.transaction };
    } catch (error) {
      // The claim failed: its transaction may be half done.
      destroy(client);
      throw error;
    }
  }

  /**
   * Opens the transaction, takes the locks of the key, its records and its entity without
   * waiting, then reads (and writes, to commit with the handlers) in one statement: the claim, or
   * why not (the caller rolls back).
   */
  async #lockAndRead(
    client: PoolClient,
    key: string,
    request: ClaimRequest,
    call: BoundedCall,
  ): Promise<Claim | (Omit<HeldClaim, 'token'> & { token?: undefined })> {
    const records = request.records?.map(storageKey) ?? [];
    const { completion, version } = request;
    const entity =
      version === undefined ? undefined : { ...version, key: storageKey(version.entity) };
    const text = this.#statements.claim(
      { key, records, done: completion, recordsDone: completion.records ?? completion, entity },
      (literal) => client.escapeLiteral(literal),
    );
    const results = (await client.query(text)) as unknown as readonly [
      unknown,
      { rows: Record<string, unknown>[] },
      { rows: { done: string | null; records: (string | null)[] | null; superseded: boolean }[] },
    ];
    step(call);
    const locks = results[1].rows[0]!;
    if (locks['l0'] !== true) return { state: 'in_flight', held: 'key' };
    for (let i = 1; i <= records.length; i++) {
      if (locks[`l${i}`] !== true) return { state: 'in_flight', held: 'record' };
    }
    const row = results[2].rows[0]!;
    if (row.done !== null) return { state: 'done', fingerprint: row.done };
    if (entity !== undefined && !row.superseded && locks['taken'] !== 'entity') {
      return { state: 'in_flight', held: 'entity' };
    }
    const found = row.records ?? [];
    return {
      state: 'claimed',
      request,
      records: records.map((_, i): RecordClaim => {
        const fingerprint = found[i];
        return typeof fingerprint === 'string' ? { state: 'done', fingerprint } : HELD;
      }),
      superseded: entity !== undefined && row.superseded,
    };
  }
}

const HELD: RecordClaim = Object.freeze({ state: 'held' });
/** Postgres's code for a relation that does not exist. */
const UNDEFINED_TABLE = '42P01';
const FREE: KeyState = Object.freeze({ state: 'free' });

/** Whether `error` is Postgres's for a relation that does not exist. */
function isUndefinedTable(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === UNDEFINED_TABLE;
}

/** Throws once the call's deadline has passed: the caller was told it failed, so stop here. */
function step(call: BoundedCall): void {
  if (call.aborted) throw new Error('the call timed out');
}

/** A `StoreUnavailableError` for any failure of a call to Postgres. */
function unavailable(operation: string, error: unknown): StoreUnavailableError {
  return storeUnavailable('Postgres', operation, error);
}
