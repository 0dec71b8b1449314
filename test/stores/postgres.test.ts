import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { nodeListener } from '../../src/adapters/node.js';
import { ConfigError, StoreUnavailableError } from '../../src/errors.js';
import { createReceiver, type Receiver } from '../../src/receiving/receiver.js';
import { memoryInbox } from '../../src/inbox/memory.js';
import { memoryStore } from '../../src/stores/memory.js';
import { postgresStore, postgresStoreSql } from '../../src/stores/postgres.js';
import type { HeldClaim } from '../../src/stores/types.js';
import { entityTableOf } from '../../src/stores/postgres-table.js';
import { freePort, sleep } from '../helpers/redis.js';
import {
  dropTables,
  startPostgresCluster,
  uniqueTable,
  useTestPostgres,
  type TestPostgres,
} from '../helpers/postgres.js';
import { failureOf } from '../helpers/failure-of.js';
import { signedRequest, SECRET } from '../helpers/signed.js';
import { describeStoreContract, heldOf, requestFor } from './contract.js';

let database: TestPostgres;
let pool: pg.Pool;
const tables: string[] = [];

/** A table of this run's own, dropped in afterAll. */
function table(prefix = 'sh_test'): string {
  const name = uniqueTable(prefix);
  tables.push(name);
  return name;
}

beforeAll(async () => {
  database = await useTestPostgres();
  pool = new pg.Pool({ connectionString: database.url, max: 30 });
  pool.on('error', () => {});
}, 60_000);

afterAll(async () => {
  if (pool) {
    await dropTables(pool, tables);
    // Claims the contract tests left open end with their lease: no need to wait for them.
    await Promise.race([pool.end(), sleep(1000)]);
  }
  await database?.close();
});

describeStoreContract('postgresStore', async () => ({
  store: postgresStore({ pool, table: table('sh_contract') }),
  cleanup: async () => {},
  transactional: true,
}));

describe('postgresStore', () => {
  it('creates its table on first use, with the DDL postgresStoreSql gives', async () => {
    const name = table();
    const store = postgresStore({ pool, table: name });
    await store.settle(heldOf(await store.claim(requestFor('k'))), 'complete');
    const { rows } = await pool.query<{ key: string; fingerprint: string }>(
      `SELECT key, fingerprint FROM "${name}"`,
    );
    expect(rows).toEqual([{ key: 'k', fingerprint: 'fp' }]);
    expect(postgresStoreSql({ table: name })).toContain(`CREATE TABLE IF NOT EXISTS "${name}"`);
    // The same DDL run again (a project's own migration) changes nothing.
    await pool.query(postgresStoreSql({ table: name }));
  });

  it('accepts schema.table and refuses table names that are not plain identifiers', async () => {
    expect(postgresStoreSql({ table: 'public.deliveries' })).toContain('"public"."deliveries"');
    for (const bad of ['', 'a-b', 'x; drop table y', '"q"', 'a.b.c', '1abc', 'a:b']) {
      expect(() => postgresStoreSql({ table: bad }), bad).toThrow(ConfigError);
      expect(() => postgresStore({ pool, table: bad }), bad).toThrow(ConfigError);
    }
    expect(() => postgresStore({ pool, connectTimeoutMs: 0 })).toThrow(ConfigError);
  });

  it('gives the handlers the claim transaction: the key and their writes commit together', async () => {
    const name = table();
    const effects = await effectsTable();
    const store = postgresStore({ pool, table: name });
    const claim = heldOf(await store.claim(requestFor('together')));
    await transactionOf(claim).query(`INSERT INTO "${effects}" VALUES ('together')`);
    // Not visible outside before the commit, the key's done row neither.
    expect((await pool.query(`SELECT * FROM "${effects}"`)).rows).toEqual([]);
    expect(await store.peek(['together'])).toEqual([{ state: 'free' }]);
    await store.settle(claim, 'complete');
    expect((await pool.query(`SELECT key FROM "${effects}"`)).rows).toEqual([{ key: 'together' }]);
    expect(await store.claim(requestFor('together'))).toEqual({ state: 'done', fingerprint: 'fp' });
  });

  it("writes an entity's version and its record in the claim's transaction: they commit with the key, or not at all", async () => {
    const name = table();
    const store = postgresStore({ pool, table: name });
    const entity = '~["entity",null,"progress:1:2:3"]';
    const record = '~["record",null,"progress:1:2:3"]';
    /** A delivery's claim of its key, the entity's record and the entity at `versionMs`. */
    const claimAt = async (key: string, versionMs: number) => {
      const claim = heldOf(
        await store.claim(
          requestFor(key, {
            records: [record],
            recordsAs: { fingerprint: 'webhook', ttlMs: 60_000 },
            version: { entity, versionMs },
          }),
        ),
      );
      expect(claim).toMatchObject({ records: [{ state: 'held' }], superseded: false });
      return claim;
    };
    const versions = async () =>
      (await pool.query(`SELECT key, version_ms FROM "${name}_entities"`)).rows;
    const keys = async () =>
      (await pool.query(`SELECT key, fingerprint FROM "${name}" ORDER BY key`)).rows;
    // Rolled back with the key (the handlers' writes failed to commit): nothing recorded.
    const rolled = await claimAt('rolled-back', 2_000);
    expect(await versions()).toEqual([]);
    expect(await keys()).toEqual([]);
    await store.settle(rolled, 'release');
    expect(await versions()).toEqual([]);
    expect(await keys()).toEqual([]);
    // Committed with the key.
    const done = await claimAt('committed', 1_000);
    expect(await versions()).toEqual([]);
    expect(await keys()).toEqual([]);
    await store.settle(done, 'complete');
    expect(await versions()).toEqual([{ key: entity, version_ms: 1_000 }]);
    expect(await keys()).toEqual([
      { key: 'committed', fingerprint: 'fp' },
      { key: record, fingerprint: 'webhook' },
    ]);
  });

  it('rolls the handlers writes back with the release, and frees the key at once', async () => {
    const name = table();
    const effects = await effectsTable();
    const store = postgresStore({ pool, table: name });
    const claim = heldOf(await store.claim(requestFor('rolled')));
    await transactionOf(claim).query(`INSERT INTO "${effects}" VALUES ('rolled')`);
    await store.settle(claim, 'release');
    expect((await pool.query(`SELECT * FROM "${effects}"`)).rows).toEqual([]);
    expect((await store.claim(requestFor('rolled'))).state).toBe('claimed');
  });

  it('lets the key go when the connection of its claim drops, with no lease to wait out', async () => {
    const name = table();
    const store = postgresStore({ pool, table: name });
    const claim = heldOf(await store.claim(requestFor('dropped', { leaseMs: 60_000 })));
    await pool.query('SELECT pg_terminate_backend($1, 5000)', [pidOf(claim)]);
    const next = heldOf(await store.claim(requestFor('dropped', { leaseMs: 60_000 })));
    // The dead claim's completion does not pretend to have committed...
    const failure = await failureOf(store.settle(claim, 'complete'));
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect((failure as StoreUnavailableError).code).toBe('store_unavailable');
    // ...nor does it record the key anywhere: once the next claim lets go, the key is free, not
    // done (a completion written outside the claim's transaction would run no resend again).
    expect((await pool.query(`SELECT key FROM "${name}"`)).rows).toEqual([]);
    await store.settle(next, 'release');
    expect((await store.claim(requestFor('dropped', { leaseMs: 60_000 }))).state).toBe('claimed');
  });

  it('abandons a claim: later writes through its client fail and nothing commits', async () => {
    const name = table();
    const effects = await effectsTable();
    const store = postgresStore({ pool, table: name });
    const claim = heldOf(await store.claim(requestFor('abandoned', { leaseMs: 60_000 })));
    const client = transactionOf(claim);
    await client.query(`INSERT INTO "${effects}" VALUES ('before')`);
    claim.transaction!.abandon();
    // pg refuses a query on a client it has closed (an Error, never a result).
    await failureOf(client.query(`INSERT INTO "${effects}" VALUES ('after')`));
    await store.settle(claim, 'complete');
    expect((await pool.query(`SELECT * FROM "${effects}"`)).rows).toEqual([]);
    expect((await pool.query(`SELECT key FROM "${name}"`)).rows).toEqual([]);
    // The key is free again as soon as Postgres has seen the connection go.
    await eventually(
      async () =>
        (await store.claim(requestFor('abandoned', { leaseMs: 60_000 }))).state === 'claimed',
    );
  });

  it('deletes expired keys in the background', async () => {
    const name = table();
    const store = postgresStore({ pool, table: name });
    for (const key of ['old-1', 'old-2']) {
      await store.settle(heldOf(await store.claim(requestFor(key, { ttlMs: 1 }))), 'complete');
    }
    // A new store sweeps on its first claim (the first store already swept this minute).
    await sleep(20);
    await postgresStore({ pool, table: name }).claim(requestFor('fresh'));
    await eventually(async () => (await pool.query(`SELECT key FROM "${name}"`)).rows.length === 0);
  });

  it('fails within connectTimeoutMs when nothing answers, never hangs', async () => {
    const port = await freePort();
    const dead = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/test` });
    dead.on('error', () => {});
    const store = postgresStore({ pool: dead, table: table(), connectTimeoutMs: 300 });
    const startedAt = Date.now();
    for (const failing of [store.claim(requestFor('k')), store.peek(['k'])]) {
      const failure = await failureOf(failing);
      expect(failure).toBeInstanceOf(StoreUnavailableError);
      expect((failure as StoreUnavailableError).code).toBe('store_unavailable');
    }
    expect(Date.now() - startedAt).toBeLessThan(3000);
    await dead.end();
  });

  it('fails within connectTimeoutMs when the server accepts connections and never answers', async () => {
    // A TCP server that accepts and stays silent: pg waits for the startup reply forever.
    const silent = createTcpServer(() => {});
    const sockets = new Set<Socket>();
    silent.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const dead = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/test` });
    dead.on('error', () => {});
    const store = postgresStore({ pool: dead, table: table(), connectTimeoutMs: 300 });
    const startedAt = Date.now();
    for (const [operation, failing] of [
      ['claim', store.claim(requestFor('k'))],
      ['peek', store.peek(['k'])],
    ] as const) {
      const failure = await failureOf(failing);
      expect(failure).toBeInstanceOf(StoreUnavailableError);
      expect(failure).toMatchObject({
        code: 'store_unavailable',
        message: `Postgres did not answer ${operation} within 300 ms`,
      });
    }
    expect(Date.now() - startedAt).toBeLessThan(2000);
    for (const socket of sockets) socket.destroy();
    silent.close();
    void dead.end().catch(() => {});
  });
});

describe("postgresStore's one claim and one settle", () => {
  const RECORD = '~["record",null,"invoice:9"]';
  const ENTITY = '~["entity",null,"invoice:9"]';

  /** A pool of its own (its clients are wrapped) whose queries are listed as they are sent. */
  function listedPool(options: { rollbackDelayMs?: number } = {}): {
    pool: pg.Pool;
    /** What the pool's clients sent, in order: the text of each query. */
    sent: string[];
    /** What was sent through the pool itself (table upkeep, peek). */
    pooled: string[];
  } {
    const own = new pg.Pool({ connectionString: database.url, max: 4 });
    own.on('error', () => {});
    ends.push(own);
    const sent: string[] = [];
    const pooled: string[] = [];
    const listed = {
      query(...args: unknown[]) {
        pooled.push(String(args[0]));
        return (own.query as (...args: unknown[]) => unknown)(...args);
      },
      async connect() {
        const client = await own.connect();
        // Listed while the store has it: the pool's own queries (own.query) may borrow it later.
        const { query, release } = client;
        const patched = client as unknown as { query: unknown; release: unknown };
        patched.query = async (...args: unknown[]) => {
          const text = String(args[0]);
          sent.push(text);
          if (text === 'ROLLBACK' && options.rollbackDelayMs !== undefined) {
            await sleep(options.rollbackDelayMs);
          }
          return (query as (...args: unknown[]) => Promise<unknown>).apply(client, args);
        };
        patched.release = (...args: unknown[]) => {
          patched.query = query;
          patched.release = release;
          return (release as (...args: unknown[]) => unknown).apply(client, args);
        };
        return client;
      },
    } as unknown as pg.Pool;
    return { pool: listed, sent, pooled };
  }

  /** Pools a test made, ended after it. */
  const ends: pg.Pool[] = [];
  afterEach(async () => {
    for (const own of ends.splice(0)) await Promise.race([own.end(), sleep(1000)]);
  });

  /** The request with a key, a record and a version whose round trips are counted. */
  const everything = (key: string) =>
    requestFor(key, {
      records: [RECORD + key],
      recordsAs: { fingerprint: 'webhook', ttlMs: 60_000 },
      version: { entity: ENTITY, versionMs: Date.now() },
    });

  it('claims a key, a record and a version in one round trip, and settles in one', async () => {
    const { pool: listed, sent, pooled } = listedPool();
    const store = postgresStore({ pool: listed, table: table() });
    // The first claim makes the table and starts the minute's sweep (both on the pool).
    await store.settle(heldOf(await store.claim(everything('warm'))), 'release');
    sent.length = 0;
    pooled.length = 0;

    const claim = heldOf(await store.claim(everything('counted')));
    expect(claim).toMatchObject({ records: [{ state: 'held' }], superseded: false });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(
      /^BEGIN ISOLATION LEVEL READ COMMITTED; SELECT l\.\*, set_config\('schoolhooks\.claim', .*; WITH key_done AS /,
    );
    // Every lock in that one simple query: the key's, the record's, the entity's.
    expect(sent[0]!.match(/pg_try_advisory_xact_lock/g)).toHaveLength(3);
    expect(pooled).toEqual([]);

    sent.length = 0;
    await store.settle(claim, 'complete');
    expect(sent).toEqual(['COMMIT']);

    const released = heldOf(await store.claim(everything('released')));
    sent.length = 0;
    await store.settle(released, 'release');
    expect(sent).toEqual(['ROLLBACK']);
    expect(pooled).toEqual([]);
    expect(await store.peek(['counted', RECORD + 'counted', 'released'])).toEqual([
      { state: 'done', fingerprint: 'fp' },
      { state: 'done', fingerprint: 'webhook' },
      { state: 'free' },
    ]);
    // The peek is one query on the pool, none on a client of its own.
    expect(sent).toEqual(['ROLLBACK']);
    expect(pooled).toHaveLength(1);
    expect(pooled[0]).toMatch(/^SELECT key, fingerprint FROM .* WHERE key = ANY\(\$1/);

    // A claim that takes nothing ends its transaction before it answers: its one query and the
    // ROLLBACK, whether the key is held or done.
    const holding = heldOf(await store.claim(everything('holding')));
    sent.length = 0;
    expect(await store.claim(everything('holding'))).toEqual({ state: 'in_flight', held: 'key' });
    expect(sent).toHaveLength(2);
    expect(sent[1]).toBe('ROLLBACK');
    sent.length = 0;
    expect(await store.claim(everything('counted'))).toEqual({ state: 'done', fingerprint: 'fp' });
    expect(sent).toHaveLength(2);
    expect(sent[1]).toBe('ROLLBACK');
    await store.settle(holding, 'release');
  });

  it('peeks without creating its table: none made yet is all free and stays missing; one dropped since fails with 42P01', async () => {
    const name = table();
    /** Whether the keys' table and the entities' exist. */
    const tables = async () =>
      (
        await pool.query<{ keys: string | null; entities: string | null }>(
          'SELECT to_regclass($1) IS NOT NULL AS keys, to_regclass($2) IS NOT NULL AS entities',
          [`"${name}"`, `"${entityTableOf(name)}"`],
        )
      ).rows[0];
    const store = postgresStore({ pool, table: name });
    // No claim has made it: nothing was recorded there, and the peek creates nothing.
    expect(await store.peek(['k', 'l'])).toEqual([{ state: 'free' }, { state: 'free' }]);
    expect(await tables()).toEqual({ keys: false, entities: false });

    // Made by a claim, then dropped: not taken for a table not made yet, and not made again.
    await store.settle(heldOf(await store.claim(requestFor('k'))), 'complete');
    expect(await store.peek(['k', 'l'])).toEqual([
      { state: 'done', fingerprint: 'fp' },
      { state: 'free' },
    ]);
    await pool.query(`DROP TABLE "${name}"`);
    const failure = await failureOf(store.peek(['k']));
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect((failure as StoreUnavailableError).code).toBe('store_unavailable');
    expect((failure.cause as { code?: unknown }).code).toBe('42P01');
    expect(failure.message).toMatch(/^Postgres peek failed: /);
    expect(await tables()).toEqual({ keys: false, entities: true });
  });

  describe('a claim that takes nothing rolls back what its transaction wrote', () => {
    /** A store on a pool of one client, beside `holder` on the test pool, on one table. */
    async function oneClientStore() {
      const name = table();
      const holder = postgresStore({ pool, table: name });
      const one = new pg.Pool({ connectionString: database.url, max: 1 });
      one.on('error', () => {});
      ends.push(one);
      const store = postgresStore({ pool: one, table: name });
      await store.settle(heldOf(await store.claim(requestFor('warm'))), 'complete');
      const pid = await backendOf(one);
      return { name, holder, one, store, pid };
    }

    async function backendOf(one: pg.Pool): Promise<number> {
      const { rows } = await one.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      return rows[0]!.pid;
    }

    /** What the table holds of `keys`, as `client` sees it. */
    async function rowsOf(client: pg.Pool, name: string, keys: readonly string[]) {
      const { rows } = await client.query<{ key: string; fingerprint: string }>(
        `SELECT key, fingerprint FROM "${name}" WHERE key = ANY($1) ORDER BY key`,
        [keys],
      );
      return rows;
    }

    /**
     * Whether the pooled client of `one` is out of any transaction: its `now()` is its
     * statement's start, not the start of a transaction opened before.
     */
    async function outOfTransaction(one: pg.Pool): Promise<boolean> {
      const { rows } = await one.query<{ fresh: boolean }>(
        'SELECT now() = statement_timestamp() AS fresh',
      );
      return rows[0]!.fresh;
    }

    it.each([
      ['its key is done', 'done'],
      ['its record is held', 'record'],
      ['its entity is held', 'entity'],
    ] as const)('%s: nothing it wrote is left, and its client is pooled again', async (_, why) => {
      const { name, holder, one, store, pid } = await oneClientStore();
      const [key, record, entity] = [`k-${why}`, `${RECORD}${why}`, `${ENTITY}${why}`];
      const holding = heldOf(
        await holder.claim(
          why === 'done'
            ? requestFor(key, { fingerprint: 'first' })
            : why === 'record'
              ? requestFor('holder', { records: [record] })
              : requestFor('holder', { version: { entity, versionMs: 1 } }),
        ),
      );
      if (why === 'done') await holder.settle(holding, 'complete');
      const request = requestFor(key, {
        fingerprint: 'second',
        records: [record],
        version: { entity, versionMs: 2 },
      });
      expect(await store.claim(request)).toEqual(
        why === 'done'
          ? { state: 'done', fingerprint: 'first' }
          : { state: 'in_flight', held: why },
      );
      const before = why === 'done' ? [{ key, fingerprint: 'first' }] : [];
      // Not committed, and rolled back: its own client no longer sees it either.
      expect(await rowsOf(pool, name, [key, record])).toEqual(before);
      expect(await rowsOf(one, name, [key, record])).toEqual(before);
      expect(await outOfTransaction(one)).toBe(true);
      const { rows } = await pool.query(`SELECT key FROM "${name}_entities" WHERE key = $1`, [
        entity,
      ]);
      expect(rows).toEqual([]);
      // The same client, given back, not closed: and it claims and commits.
      expect(await backendOf(one)).toBe(pid);
      await store.settle(heldOf(await store.claim(requestFor('after'))), 'complete');
      expect(await rowsOf(pool, name, ['after'])).toEqual([{ key: 'after', fingerprint: 'fp' }]);
      expect(await backendOf(one)).toBe(pid);
      await holder.settle(holding, 'release');
    });

    it('has rolled back before it answers: the locks it took are free when the caller hears it', async () => {
      // Clients whose ROLLBACK takes 300 ms: an answer given before its rollback is done would
      // leave the key's lock (and its record's) held after it, and answer the next claim
      // in_flight where the key is done, or the record free.
      const { pool: slow, sent } = listedPool({ rollbackDelayMs: 300 });
      const name = table();
      const store = postgresStore({ pool: slow, table: name });
      const holder = postgresStore({ pool, table: name });
      await store.settle(heldOf(await store.claim(requestFor('done'))), 'complete');
      expect(await store.claim(requestFor('done'))).toEqual({ state: 'done', fingerprint: 'fp' });
      expect(await holder.claim(requestFor('done'))).toEqual({ state: 'done', fingerprint: 'fp' });

      const entityHolder = heldOf(
        await holder.claim(
          requestFor('entity-holder', { version: { entity: ENTITY, versionMs: 1 } }),
        ),
      );
      const waiting = requestFor('waits', {
        records: [RECORD],
        version: { entity: ENTITY, versionMs: 2 },
      });
      expect(await store.claim(waiting)).toEqual({ state: 'in_flight', held: 'entity' });
      const record = heldOf(await holder.claim(requestFor('record-taker', { records: [RECORD] })));
      expect(record.records).toEqual([{ state: 'held' }]);
      const waits = heldOf(await holder.claim(requestFor('waits')));
      expect(sent.filter((text) => text === 'ROLLBACK')).toHaveLength(2);
      for (const claim of [entityHolder, record, waits]) await holder.settle(claim, 'release');
    });
  });

  it('fails the completion of a transaction a failed statement aborted: nothing commits, never a silent rollback', async () => {
    const name = table();
    const effects = await effectsTable();
    const store = postgresStore({ pool, table: name });
    const claim = heldOf(await store.claim(requestFor('aborted', { records: [RECORD] })));
    const client = transactionOf(claim);
    await client.query(`INSERT INTO "${effects}" VALUES ('aborted')`);
    // A handler that catches its failed statement, and returns as if all went well.
    const division = await failureOf(client.query('SELECT 1/0'));
    expect((division as Error & { code?: string }).code).toBe('22012');
    const failure = await failureOf(store.settle(claim, 'complete'));
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect((failure as StoreUnavailableError).code).toBe('store_unavailable');
    expect(failure.message).toMatch(/^Postgres commit failed: /);
    // Postgres rolled it all back: the handler's row, the key, the record.
    expect((await pool.query(`SELECT * FROM "${effects}"`)).rows).toEqual([]);
    expect(await store.peek(['aborted', RECORD])).toEqual([{ state: 'free' }, { state: 'free' }]);
    expect((await store.claim(requestFor('aborted'))).state).toBe('claimed');
  });
});

describe('postgresStore behind a receiver, over HTTP', () => {
  let server: Server;
  let url: string;
  let receiver: Receiver;

  async function listen(make: () => Receiver): Promise<void> {
    receiver = make();
    server = createServer(nodeListener(receiver));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  }

  async function close(): Promise<void> {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  /** One signed delivery per key, so a resend is byte-identical, as the platform's are. */
  const requests = new Map<string, ReturnType<typeof signedRequest>>();

  async function post(
    idempotencyKey: string,
  ): Promise<{ status: number; outcome: string; ms: number }> {
    let request = requests.get(idempotencyKey);
    if (request === undefined) {
      request = signedRequest({ event: 'UserSignedIn', idempotencyKey, data: {} });
      requests.set(idempotencyKey, request);
    }
    const startedAt = performance.now();
    const response = await fetch(url, {
      method: 'POST',
      headers: request.headers,
      body: request.body,
    });
    const { outcome } = (await response.json()) as { outcome: string };
    return { status: response.status, outcome, ms: performance.now() - startedAt };
  }

  it('leaves nothing of a failing handler: its writes are gone after the 500', async () => {
    const effects = await effectsTable();
    let fail = true;
    await listen(() =>
      createReceiver({ secret: SECRET, store: postgresStore({ pool, table: table() }) }).on(
        'UserSignedIn',
        async (event, ctx) => {
          await ctx.transaction!.query(`INSERT INTO "${effects}" VALUES ($1)`, [
            event.idempotencyKey,
          ]);
          if (fail) throw new Error('crm hiccup');
        },
      ),
    );
    try {
      const key = `fails-${randomUUID()}`;
      expect(await post(key)).toMatchObject({ status: 500, outcome: 'handler_failed' });
      expect((await pool.query(`SELECT * FROM "${effects}"`)).rows).toEqual([]);
      fail = false;
      expect(await post(key)).toMatchObject({ status: 200, outcome: 'processed' });
      expect(await post(key)).toMatchObject({ status: 200, outcome: 'duplicate' });
      expect((await pool.query(`SELECT key FROM "${effects}"`)).rows).toEqual([{ key }]);
    } finally {
      await close();
    }
  });

  it('answers 503, never 200, when a handler caught a failed statement, and runs the resend clean', async () => {
    const effects = await effectsTable();
    let swallow = true;
    await listen(() =>
      createReceiver({
        secret: SECRET,
        store: postgresStore({ pool, table: table() }),
        logger: false,
      }).on('UserSignedIn', async (event, ctx) => {
        await ctx.transaction!.query(`INSERT INTO "${effects}" VALUES ($1)`, [
          event.idempotencyKey,
        ]);
        // A statement that fails, its error caught: the transaction is aborted all the same.
        if (swallow) await ctx.transaction!.query('SELECT 1/0').catch(() => {});
      }),
    );
    try {
      const key = `caught-${randomUUID()}`;
      expect(await post(key)).toMatchObject({ status: 503, outcome: 'store_unavailable' });
      expect((await pool.query(`SELECT * FROM "${effects}"`)).rows).toEqual([]);
      swallow = false;
      expect(await post(key)).toMatchObject({ status: 200, outcome: 'processed' });
      expect(await post(key)).toMatchObject({ status: 200, outcome: 'duplicate' });
      expect((await pool.query(`SELECT key FROM "${effects}"`)).rows).toEqual([{ key }]);
    } finally {
      await close();
    }
  });

  it('runs two deliveries of one key once, and answers the second 409 in_flight at once', async () => {
    const effects = await effectsTable();
    let runs = 0;
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    await listen(() =>
      createReceiver({ secret: SECRET, store: postgresStore({ pool, table: table() }) }).on(
        'UserSignedIn',
        async (event, ctx) => {
          runs++;
          await ctx.transaction!.query(`INSERT INTO "${effects}" VALUES ($1)`, [
            event.idempotencyKey,
          ]);
          holding();
          await sleep(1500);
        },
      ),
    );
    try {
      const key = `twice-${randomUUID()}`;
      const first = post(key);
      await held;
      const second = await post(key);
      expect(second).toMatchObject({ status: 409, outcome: 'in_flight' });
      expect(second.ms).toBeLessThan(500);
      expect(await first).toMatchObject({ status: 200, outcome: 'processed' });
      expect(runs).toBe(1);
      expect((await pool.query(`SELECT key FROM "${effects}"`)).rows).toEqual([{ key }]);
    } finally {
      await close();
    }
  });

  it('answers 503 timeout, rolls back, and lets nothing the late handler writes commit', async () => {
    const effects = await effectsTable();
    const late: unknown[] = [];
    let slow = true;
    let lateWrite: Promise<void> | undefined;
    await listen(() =>
      createReceiver({
        secret: SECRET,
        store: postgresStore({ pool, table: table() }),
        handlerTimeoutMs: 200,
      }).on('UserSignedIn', async (event, ctx) => {
        const write = (): Promise<unknown> =>
          ctx.transaction!.query(`INSERT INTO "${effects}" VALUES ($1)`, [event.idempotencyKey]);
        await write();
        if (!slow) return;
        lateWrite = sleep(500).then(() =>
          write().then(
            () => void late.push('committed?'),
            (error: unknown) => void late.push(error),
          ),
        );
        await lateWrite;
      }),
    );
    try {
      const key = `timeout-${randomUUID()}`;
      expect(await post(key)).toMatchObject({ status: 503, outcome: 'timeout' });
      await eventually(async () => late.length === 1);
      expect(late[0]).toBeInstanceOf(Error);
      expect((await pool.query(`SELECT * FROM "${effects}"`)).rows).toEqual([]);
      slow = false;
      await eventually(async () => (await post(key)).outcome === 'processed');
      expect((await pool.query(`SELECT key FROM "${effects}"`)).rows).toEqual([{ key }]);
    } finally {
      await close();
    }
  });

  it('answers 503 store_unavailable within connectTimeoutMs when the database is unreachable', async () => {
    const port = await freePort();
    const dead = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/test` });
    dead.on('error', () => {});
    await listen(() =>
      createReceiver({
        secret: SECRET,
        store: postgresStore({ pool: dead, connectTimeoutMs: 500 }),
      }).on('UserSignedIn', () => {}),
    );
    try {
      const answer = await post(`down-${randomUUID()}`);
      expect(answer).toMatchObject({ status: 503, outcome: 'store_unavailable' });
      expect(answer.ms).toBeLessThan(500 + 1500);
    } finally {
      await close();
      await dead.end();
    }
  });

  it('answers 503 store_unavailable within connectTimeoutMs once the database is stopped, and recovers', async () => {
    // A cluster of this test's own: the shared server is never stopped.
    const cluster = await startPostgresCluster();
    const own = new pg.Pool({ connectionString: cluster.url, max: 5 });
    own.on('error', () => {});
    await own.query('CREATE TABLE effects (key text NOT NULL)');
    let stopping: (() => void) | undefined;
    let stopped: Promise<void> | undefined;
    await listen(() =>
      createReceiver({
        secret: SECRET,
        store: postgresStore({ pool: own, connectTimeoutMs: 500 }),
        logger: false,
      }).on('UserSignedIn', async (event, ctx) => {
        await ctx.transaction!.query('INSERT INTO effects VALUES ($1)', [event.idempotencyKey]);
        // Mid-delivery, the database goes away: the commit cannot happen.
        if (stopping !== undefined) {
          stopping();
          await stopped;
        }
      }),
    );
    try {
      const before = `before-${randomUUID()}`;
      expect(await post(before)).toMatchObject({ status: 200, outcome: 'processed' });

      // Stopped while a handler runs: its insert is lost with the commit, answered 503.
      const during = `during-${randomUUID()}`;
      stopped = new Promise<void>((resolve) => {
        stopping = () => void cluster.stop().then(resolve);
      });
      expect(await post(during)).toMatchObject({ status: 503, outcome: 'store_unavailable' });
      stopping = undefined;

      // Stopped: every delivery is 503 store_unavailable, each within connectTimeoutMs.
      for (const key of [during, `after-${randomUUID()}`]) {
        const answer = await post(key);
        expect(answer).toMatchObject({ status: 503, outcome: 'store_unavailable' });
        expect(answer.ms).toBeLessThan(500 + 500);
      }

      // Back: the resend runs once, what was committed before is still done.
      await cluster.start();
      await eventually(async () => (await post(during)).outcome === 'processed', 10_000);
      expect(await post(before)).toMatchObject({ status: 200, outcome: 'duplicate' });
      const { rows } = await own.query<{ key: string }>('SELECT key FROM effects ORDER BY key');
      expect(rows.map((row) => row.key)).toEqual([before, during]);
    } finally {
      await close();
      await own.end().catch(() => {});
      await cluster.close();
    }
  }, 60_000);

  it("runs an inbox worker's handlers in the transaction too, retrying a failed run clean", async () => {
    const effects = await effectsTable();
    const inbox = memoryInbox({ backoffMs: 10 });
    const receiver = createReceiver({
      secret: SECRET,
      store: postgresStore({ pool, table: table() }),
      inbox,
    });
    let runs = 0;
    receiver.on('UserSignedIn', async (event, ctx) => {
      await ctx.transaction!.query(`INSERT INTO "${effects}" VALUES ($1)`, [event.idempotencyKey]);
      if (++runs === 1) throw new Error('first run fails');
    });
    const worker = inbox.work(receiver);
    try {
      const request = signedRequest({ event: 'UserSignedIn', data: {} });
      expect((await receiver.handle(request)).outcome).toBe('queued');
      await inbox.idle();
      expect(runs).toBe(2);
      const { rows } = await pool.query(`SELECT key FROM "${effects}"`);
      expect(rows).toHaveLength(1);
    } finally {
      await worker.close();
      await inbox.close();
    }
  });

  it('gives ctx.transaction only with postgresStore', async () => {
    const seen: unknown[] = [];
    const memory = createReceiver({ secret: SECRET, store: memoryStore() });
    memory.on('UserSignedIn', (_event, ctx) => void seen.push(ctx.transaction));
    await memory.handle(signedRequest({ event: 'UserSignedIn', data: {} }));
    expect(seen).toEqual([undefined]);
  });
});

function transactionOf(claim: HeldClaim): pg.PoolClient {
  if (!claim.transaction) throw new Error('expected a transaction');
  return claim.transaction.client;
}

/** The backend pid of a claim's session. */
function pidOf(claim: HeldClaim): number {
  return (transactionOf(claim) as pg.PoolClient & { processID: number }).processID;
}

/** A table of effects (one text column, `key`) of this run's own. */
async function effectsTable(): Promise<string> {
  const effects = table('sh_effects');
  await pool.query(`CREATE TABLE "${effects}" (key text)`);
  return effects;
}

async function eventually(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('the condition never held');
    await sleep(25);
  }
}
