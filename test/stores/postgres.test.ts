import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeListener } from '../../adapters/node.js';
import { ConfigError, StoreUnavailableError } from '../../src/errors.js';
import { createReceiver, type Receiver } from '../../src/receiver.js';
import { memoryInbox } from '../../src/inbox/memory.js';
import { memoryStore } from '../../src/stores/memory.js';
import { postgresStore, postgresStoreSql } from '../../src/stores/postgres.js';
import type { ClaimResult } from '../../src/stores/types.js';
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
import { describeStoreContract } from './contract.js';

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
}));

describe('postgresStore', () => {
  it('creates its table on first use, with the DDL postgresStoreSql gives', async () => {
    const name = table();
    const store = postgresStore({ pool, table: name });
    const claim = await store.claim('k', 10_000);
    if (claim.state !== 'claimed') throw new Error('expected a claim');
    await store.complete('k', claim.token, 60_000, 'fp');
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
    const effects = table('sh_effects');
    await pool.query(`CREATE TABLE "${effects}" (key text)`);
    const store = postgresStore({ pool, table: name });
    const claim = await store.claim('together', 10_000);
    const client = transactionOf(claim);
    await client.query(`INSERT INTO "${effects}" VALUES ('together')`);
    // Not visible outside before the commit.
    expect((await pool.query(`SELECT * FROM "${effects}"`)).rows).toEqual([]);
    await store.complete('together', tokenOf(claim), 60_000, 'fp');
    expect((await pool.query(`SELECT key FROM "${effects}"`)).rows).toEqual([{ key: 'together' }]);
    expect(await store.claim('together', 10_000)).toEqual({ state: 'done', fingerprint: 'fp' });
  });

  it("writes an entity's version in the claim's transaction: it commits with the key, or not at all", async () => {
    const name = table();
    const store = postgresStore({ pool, table: name });
    const entity = '~["entity",null,"progress:1:2:3"]';
    /** A delivery's claim of its key and of the entity, the entity completed at `versionMs`. */
    const processed = async (key: string, versionMs: number) => {
      const claim = await store.claim(key, 10_000);
      const held = { key, token: tokenOf(claim) };
      const taken = await store.claimEntity!(entity, versionMs, 10_000, held);
      if (taken.state !== 'claimed') throw new Error(`expected the entity, got ${taken.state}`);
      await store.completeEntity!(entity, taken.token, versionMs, 60_000);
      return held;
    };
    const versions = () => pool.query(`SELECT key, version_ms FROM "${name}_entities"`);
    // Rolled back with the key (the handlers' writes failed to commit): nothing recorded.
    const rolled = await processed('rolled-back', 2_000);
    expect((await versions()).rows).toEqual([]);
    await store.release(rolled.key, rolled.token);
    expect((await versions()).rows).toEqual([]);
    // Committed with the key.
    const done = await processed('committed', 1_000);
    expect((await versions()).rows).toEqual([]);
    await store.complete(done.key, done.token, 60_000, 'fp');
    expect((await versions()).rows).toEqual([{ key: entity, version_ms: 1_000 }]);
  });

  it('rolls the handlers writes back with the release, and frees the key at once', async () => {
    const name = table();
    const effects = table('sh_effects');
    await pool.query(`CREATE TABLE "${effects}" (key text)`);
    const store = postgresStore({ pool, table: name });
    const claim = await store.claim('rolled', 10_000);
    await transactionOf(claim).query(`INSERT INTO "${effects}" VALUES ('rolled')`);
    await store.release('rolled', tokenOf(claim));
    expect((await pool.query(`SELECT * FROM "${effects}"`)).rows).toEqual([]);
    expect((await store.claim('rolled', 10_000)).state).toBe('claimed');
  });

  it('lets the key go when the connection of its claim drops, with no lease to wait out', async () => {
    const name = table();
    const store = postgresStore({ pool, table: name });
    const claim = await store.claim('dropped', 60_000);
    const pid = (transactionOf(claim) as pg.PoolClient & { processID: number }).processID;
    await pool.query('SELECT pg_terminate_backend($1, 5000)', [pid]);
    const next = await store.claim('dropped', 60_000);
    expect(next.state).toBe('claimed');
    // The dead claim's completion does not pretend to have committed...
    const failure = await failureOf(store.complete('dropped', tokenOf(claim), 60_000, 'fp'));
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect((failure as StoreUnavailableError).code).toBe('store_unavailable');
    // ...nor does it record the key anywhere: once the next claim lets go, the key is free, not
    // done (a completion written outside the claim's transaction would run no resend again).
    expect((await pool.query(`SELECT key FROM "${name}"`)).rows).toEqual([]);
    await store.release('dropped', tokenOf(next));
    expect((await store.claim('dropped', 60_000)).state).toBe('claimed');
  });

  it('abandons a claim: later writes through its client fail and nothing commits', async () => {
    const name = table();
    const effects = table('sh_effects');
    await pool.query(`CREATE TABLE "${effects}" (key text)`);
    const store = postgresStore({ pool, table: name });
    const claim = await store.claim('abandoned', 60_000);
    if (claim.state !== 'claimed' || !claim.transaction) throw new Error('expected a transaction');
    await claim.transaction.client.query(`INSERT INTO "${effects}" VALUES ('before')`);
    claim.transaction.abandon();
    await expect(
      claim.transaction.client.query(`INSERT INTO "${effects}" VALUES ('after')`),
    ).rejects.toThrow();
    await store.complete('abandoned', claim.token, 60_000, 'fp');
    expect((await pool.query(`SELECT * FROM "${effects}"`)).rows).toEqual([]);
    // The key is free again as soon as Postgres has seen the connection go.
    await eventually(async () => (await store.claim('abandoned', 60_000)).state === 'claimed');
  });

  it('deletes expired keys in the background', async () => {
    const name = table();
    const store = postgresStore({ pool, table: name });
    for (const key of ['old-1', 'old-2']) {
      const claim = await store.claim(key, 10_000);
      await store.complete(key, tokenOf(claim), 1, 'fp');
    }
    // A new store sweeps on its first claim (the first store already swept this minute).
    await sleep(20);
    await postgresStore({ pool, table: name }).claim('fresh', 10_000);
    await eventually(async () => (await pool.query(`SELECT key FROM "${name}"`)).rows.length === 0);
  });

  it('fails within connectTimeoutMs when nothing answers, never hangs', async () => {
    const port = await freePort();
    const dead = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/test` });
    dead.on('error', () => {});
    const store = postgresStore({ pool: dead, table: table(), connectTimeoutMs: 300 });
    const startedAt = Date.now();
    await expect(store.claim('k', 10_000)).rejects.toThrow(StoreUnavailableError);
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
    const claiming = store.claim('k', 10_000);
    await expect(claiming).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(claiming).rejects.toMatchObject({
      code: 'store_unavailable',
      message: expect.stringMatching(/within 300 ms/),
    });
    expect(Date.now() - startedAt).toBeLessThan(2000);
    for (const socket of sockets) socket.destroy();
    silent.close();
    void dead.end().catch(() => {});
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
    const effects = table('sh_effects');
    await pool.query(`CREATE TABLE "${effects}" (key text)`);
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

  it('runs two deliveries of one key once, and answers the second 409 in_flight at once', async () => {
    const effects = table('sh_effects');
    await pool.query(`CREATE TABLE "${effects}" (key text)`);
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
    const effects = table('sh_effects');
    await pool.query(`CREATE TABLE "${effects}" (key text)`);
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
    const effects = table('sh_effects');
    await pool.query(`CREATE TABLE "${effects}" (key text)`);
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

function tokenOf(result: ClaimResult): string {
  if (result.state !== 'claimed') throw new Error(`expected a claim, got ${result.state}`);
  return result.token;
}

function transactionOf(result: ClaimResult): pg.PoolClient {
  if (result.state !== 'claimed' || !result.transaction) throw new Error('expected a transaction');
  return result.transaction.client;
}

async function eventually(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('the condition never held');
    await sleep(25);
  }
}
