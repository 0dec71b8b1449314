/**
 * pgBossInbox on real Postgres and real pg-boss (10, the version Node 20 runs; pg-boss 12 is run
 * on Node 22 by test/runtimes/pg-boss12.mjs), with deliveries over real HTTP (the node adapter on
 * a loopback server, and fetch). Every test has a pg-boss schema of its own, dropped after it.
 */

import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { describe, expect, it, vi } from 'vitest';
import { nodeListener } from '../../src/adapters/node.js';
import {
  ConfigError,
  createReceiver,
  memoryStore,
  type Receiver,
  type ReceiverOptions,
  type SchoolhooksError,
} from '../../src/index.js';
import {
  pgBossInbox,
  pgBossJobId,
  postgresStore,
  type PgBossInbox,
  type PgBossLike,
} from '../../src/postgres.js';
import { createTestDelivery, SECRET, type Delivery, storedOf } from '../helpers/deliveries.js';
import { dropTables, startPostgresCluster, uniqueTable } from '../helpers/postgres.js';
import { failureOf } from '../helpers/failure-of.js';
import { usePgBossTests } from './pg-boss-tests.js';
import { describeInboxContract } from './contract.js';

const pgBoss = usePgBossTests({ poolMax: 20 });
const { cleanups } = pgBoss;

/** A pg-boss schema of this test's own, dropped after it. */
function newSchema(url = pgBoss.database.url): string {
  const schema = uniqueTable('pgb');
  cleanups.push(async () => {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => admin.end());
  });
  return schema;
}

/** An inbox that makes its own pg-boss in a schema of its own, closed after the test. */
function newInbox(options: Partial<Parameters<typeof pgBossInbox>[0]> = {}): PgBossInbox {
  const inbox = pgBossInbox({
    connectionString: pgBoss.database.url,
    schema: newSchema(),
    queueName: `inbox-${randomUUID().slice(0, 8)}`,
    backoffMs: 10,
    ...options,
  });
  cleanups.push(() => inbox.close());
  return inbox;
}

function newReceiver(inbox: PgBossInbox, options: Partial<ReceiverOptions> = {}) {
  const errors: SchoolhooksError[] = [];
  const receiver = createReceiver({
    secret: SECRET,
    store: memoryStore(),
    inbox,
    logger: false,
    ...options,
  });
  receiver.onError((error) => {
    errors.push(error);
  });
  return { receiver, errors };
}

/** The receiver behind node:http on a loopback port; resolves to its URL. */
async function serve(receiver: Receiver): Promise<string> {
  const server: Server = createServer(nodeListener(receiver));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

async function post(url: string, delivery: Delivery) {
  const response = await fetch(url, {
    method: 'POST',
    headers: delivery.headers,
    body: delivery.body,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Waits until `check` passes, polling: workers run in their own time. */
function eventually<T>(check: () => Promise<T> | T, timeout = 10_000): Promise<T> {
  return vi.waitFor(check, { timeout, interval: 25 });
}

describeInboxContract({
  factory: 'pgBossInbox',
  newInbox: (options) => newInbox(options),
  newStore: () => memoryStore(),
  jobId: pgBossJobId,
  workOptions: { pollIntervalMs: 20 },
  inspectable: true,
  // newInbox's own cleanups close each inbox and drop its schema.
  cleanup: async () => {},
});

describe('pgBossJobId', () => {
  it('derives one UUID per key, the same every time, and two keys never share one', () => {
    const id = pgBossJobId('8b0c6a4e-3f0e-4c43-9d59-2b7d0f1c9e11');
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(pgBossJobId('8b0c6a4e-3f0e-4c43-9d59-2b7d0f1c9e11')).toBe(id);
    const keys = ['a', 'b', 'order:42', '42', '', 'ключ', id];
    // Keys whose UTF-8 is one (a lone surrogate has none: U+FFFD stands in) are still two.
    keys.push('k\ud800', 'k\udbff', 'k\udc00', 'k\ufffd', 'k\0', 'k');
    expect(new Set(keys.map(pgBossJobId)).size).toBe(keys.length);
  });
});

describe('pgBossInbox options', () => {
  it('throws a ConfigError for options it cannot work with, before connecting', () => {
    const connectionString = 'postgres://postgres@127.0.0.1:1/none';
    expect(() => pgBossInbox({ connectionString, keepFailedMs: Infinity })).toThrow(/keepFailedMs/);
    expect(() => pgBossInbox({ connectionString, enqueueTimeoutMs: 0 })).toThrow(
      /enqueueTimeoutMs/,
    );
    expect(() => pgBossInbox({ connectionString, queueName: 'a b' })).toThrow(ConfigError);
    expect(() => pgBossInbox({})).toThrow('pgBossInbox: pass either boss or connectionString');
    expect(() => pgBossInbox({ connectionString: 'redis://127.0.0.1' })).toThrow(ConfigError);
  });

  it('refuses at start-up a schema where pg-boss is not, and a pg-boss version it does not know', async () => {
    const schema = newSchema();
    const boss = new PgBoss({ connectionString: pgBoss.database.url, schema });
    boss.on('error', () => {});
    cleanups.push(() => boss.stop({ graceful: false, wait: true }));
    await boss.start();
    // A boss of another schema than the inbox was told.
    const elsewhere = pgBossInbox({ boss, schema: 'pgboss_elsewhere' }).start();
    await expect(elsewhere).rejects.toBeInstanceOf(ConfigError);
    await expect(elsewhere).rejects.toMatchObject({
      code: 'config',
      message: expect.stringContaining('no pg-boss job table in the schema "pgboss_elsewhere"'),
    });
    // pg-boss 9's tables (schema version 20) and a future major's that changed the job table.
    const db = boss.getDb();
    await db.executeSql(`UPDATE "${schema}".version SET version = 20`, []);
    const error = await pgBossInbox({ boss, schema })
      .start()
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(
      'pgBossInbox: pg-boss schema version 20 is older than pg-boss 10, 11 and 12 (schema versions 21–46)',
    );
    await db.executeSql(`UPDATE "${schema}".version SET version = 99`, []);
    const newer = pgBossInbox({ boss, schema }).start();
    await expect(newer).rejects.toBeInstanceOf(ConfigError);
    await expect(newer).rejects.toMatchObject({
      code: 'config',
      message: expect.stringMatching(
        /schema version 99 is newer than 46 and its job table has no deletion_seconds/,
      ),
    });
  });
});

describe('pgBossInbox: the worker side', () => {
  it('with postgresStore, each run is one transaction: a failed run’s writes are gone, the successful run’s kept', async () => {
    const grants = uniqueTable('pgb_grants');
    const keys = uniqueTable('pgb_keys');
    await pgBoss.pool.query(`CREATE TABLE "${grants}" (key text NOT NULL, attempt int NOT NULL)`);
    cleanups.push(() => dropTables(pgBoss.pool, [grants, keys]));
    const inbox = newInbox({ backoffMs: 20 });
    const { receiver } = newReceiver(inbox, {
      store: postgresStore({ pool: pgBoss.pool, table: keys }),
    });
    receiver.on('UserSignedIn', async (event, ctx) => {
      await ctx.transaction!.query(`INSERT INTO "${grants}" (key, attempt) VALUES ($1, $2)`, [
        event.idempotencyKey,
        ctx.attempt,
      ]);
      if (ctx.attempt < 2) throw new Error('after the insert');
    });
    const url = await serve(receiver);
    const delivery = createTestDelivery();
    expect((await post(url, delivery)).status).toBe(202);
    const worker = inbox.work(receiver, { pollIntervalMs: 20 });
    cleanups.push(() => worker.close());
    await eventually(async () => expect(await inbox.jobs({ state: 'completed' })).toHaveLength(1));
    const { rows } = await pgBoss.pool.query(`SELECT key, attempt FROM "${grants}"`);
    expect(rows).toEqual([{ key: delivery.idempotencyKey, attempt: 2 }]);
  });

  it('hands out again, after expireInMs, a job whose worker died mid-run, counting that run', async () => {
    const schema = newSchema();
    const queueName = `crash-${randomUUID().slice(0, 8)}`;
    const inbox = newInbox({ schema, queueName, expireInMs: 1000 });
    const { receiver } = newReceiver(inbox);
    const attempts: number[] = [];
    receiver.on('UserSignedIn', (_event, ctx) => {
      attempts.push(ctx.attempt);
    });
    const stored = storedOf(createTestDelivery());
    await inbox.enqueue(stored);
    // A worker that takes the job and dies: another pg-boss on the same tables fetches it and
    // never settles it.
    const dying = new PgBoss({ connectionString: pgBoss.database.url, schema, supervise: false });
    dying.on('error', () => {});
    await dying.start();
    expect(await dying.fetch(queueName)).toHaveLength(1);
    await dying.stop({ graceful: false, wait: true });
    expect(await inbox.getJob(stored.idempotencyKey)).toMatchObject({ state: 'active' });

    const worker = inbox.work(receiver, { pollIntervalMs: 50 });
    cleanups.push(() => worker.close());
    const startedAt = performance.now();
    await eventually(
      async () =>
        expect(await inbox.getJob(stored.idempotencyKey)).toMatchObject({ state: 'completed' }),
      10_000,
    );
    expect(performance.now() - startedAt).toBeGreaterThan(500);
    expect(attempts).toEqual([2]);
    expect(await inbox.getJob(stored.idempotencyKey)).toMatchObject({ attemptsMade: 2 });
  });
});

describe('pgBossInbox: when Postgres fails', () => {
  it('answers 503 inbox_unavailable within the bound while the database is stopped, and queues the retry once it is back', async () => {
    const cluster = await startPostgresCluster();
    cleanups.push(() => cluster.close());
    const inbox = pgBossInbox({
      connectionString: cluster.url,
      queueName: 'down',
      enqueueTimeoutMs: 1000,
    });
    cleanups.push(() => inbox.close());
    const { receiver, errors } = newReceiver(inbox);
    const url = await serve(receiver);
    await inbox.start();

    await cluster.stop();
    const delivery = createTestDelivery();
    const startedAt = performance.now();
    const refused = await post(url, delivery);
    const elapsedMs = performance.now() - startedAt;
    expect(refused).toEqual({
      status: 503,
      body: { ok: false, outcome: 'inbox_unavailable', idempotencyKey: delivery.idempotencyKey },
    });
    expect(elapsedMs).toBeLessThan(1500);
    expect(errors.map((error) => error.code)).toEqual(['inbox_unavailable']);
    // An inbox whose pg-boss could not start yet: it starts a new one once the database is back.
    const late = pgBossInbox({ connectionString: cluster.url, queueName: 'late' });
    cleanups.push(() => late.close());
    await expect(late.start()).rejects.toThrow();

    await cluster.start();
    await eventually(() => late.start());
    await late.enqueue(storedOf(createTestDelivery()));
    expect(await late.jobs()).toHaveLength(1);
    await eventually(async () =>
      expect((await post(url, delivery)).body['outcome']).toBe('queued'),
    );
    expect(await inbox.jobs()).toMatchObject([{ idempotencyKey: delivery.idempotencyKey }]);
  }, 60_000);

  it('answers 503 after enqueueTimeoutMs from a database that does not answer; the late insert is the same job as the retry', async () => {
    const schema = newSchema();
    const inbox = newInbox({ schema, enqueueTimeoutMs: 300 });
    const { receiver } = newReceiver(inbox);
    const url = await serve(receiver);
    await inbox.start();
    // Another session holds pg-boss's job table: inserts wait for it.
    const locker = await pgBoss.pool.connect();
    await locker.query('BEGIN');
    await locker.query(`LOCK TABLE "${schema}".job IN ACCESS EXCLUSIVE MODE`);
    let unlocked = false;
    cleanups.push(async () => {
      if (!unlocked) await locker.query('ROLLBACK');
      locker.release();
    });

    const delivery = createTestDelivery();
    const startedAt = performance.now();
    expect((await post(url, delivery)).body['outcome']).toBe('inbox_unavailable');
    const elapsedMs = performance.now() - startedAt;
    expect(elapsedMs).toBeGreaterThanOrEqual(290);
    expect(elapsedMs).toBeLessThan(2000);

    await locker.query('ROLLBACK');
    unlocked = true;
    // The insert that timed out still commits once the table is free: one job...
    await eventually(async () => expect(await inbox.jobs()).toHaveLength(1));
    // ...which the platform's retry finds, instead of storing a second one.
    expect((await post(url, delivery)).body['outcome']).toBe('queued');
    expect(await inbox.jobs()).toMatchObject([{ idempotencyKey: delivery.idempotencyKey }]);
  });

  it('uses a boss it is given, and never stops it', async () => {
    const schema = newSchema();
    const boss = new PgBoss({ connectionString: pgBoss.database.url, schema });
    boss.on('error', () => {});
    cleanups.push(() => boss.stop({ graceful: false, wait: true }));
    await boss.start();
    const inbox = pgBossInbox({ boss, schema, queueName: 'given' });
    await inbox.enqueue(storedOf(createTestDelivery()));
    await inbox.close();
    // Still running: its owner can use it.
    expect(await boss.getQueueSize('given')).toBe(1);
  });
});

// The rules below were written for the survivors of the inbox's mutation run
// (docs/maintainers/mutation-testing.md), each against its near miss.

/** A promise the test lets through when it decides. */
function gate(): { passed: Promise<void>; open: () => void } {
  let open!: () => void;
  const passed = new Promise<void>((resolve) => (open = resolve));
  return { passed, open };
}

/** A logger that keeps what it is told. */
function recordingLogger() {
  const logs: { level: string; obj: Record<string, unknown>; msg: string | undefined }[] = [];
  const at =
    (level: string) =>
    (obj: Record<string, unknown>, msg?: string): void =>
      void logs.push({ level, obj, msg });
  return {
    logs,
    logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
  };
}

/** A real pg-boss of a schema of the test's own, stopped after it. */
function givenBoss(schema = newSchema()): PgBoss {
  const boss = new PgBoss({ connectionString: pgBoss.database.url, schema });
  boss.on('error', () => {});
  cleanups.push(() => boss.stop({ graceful: false, wait: true }));
  return boss;
}

/** `boss` as the inbox sees it, with some of its methods replaced (to delay or fail them). */
function wrap(boss: PgBoss, replaced: Partial<PgBossLike> = {}): PgBossLike {
  const like: PgBossLike = {
    start: () => boss.start(),
    stop: (options) => boss.stop(options),
    send: (name, data, options) => boss.send(name, data, options),
    fetch: (name, options) =>
      boss.fetch(name, options) as unknown as ReturnType<PgBossLike['fetch']>,
    complete: (name, id, data) => boss.complete(name, id, data),
    createQueue: (name) => boss.createQueue(name),
    schemaVersion: () => boss.schemaVersion(),
    getDb: () => boss.getDb() as unknown as ReturnType<PgBossLike['getDb']>,
    on: (event, listener) => boss.on(event, listener),
    off: (event, listener) => boss.off(event, listener),
  };
  return { ...like, ...replaced };
}

/** How many sessions pg-boss (application_name 'pgboss') holds on the test database now. */
async function pgBossSessions(): Promise<number> {
  const { rows } = await pgBoss.pool.query<{ n: string }>(
    "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'pgboss'",
  );
  return Number(rows[0]!.n);
}

describe('pgBossInbox option rules', () => {
  it('names each option it refuses, and takes the URL forms and queue names it allows', async () => {
    const connectionString = 'postgres://postgres@127.0.0.1:1/none';
    const messageOf = (make: () => unknown): string => {
      try {
        make();
      } catch (error) {
        if (error instanceof ConfigError) return error.message;
      }
      return 'no ConfigError';
    };
    expect(messageOf(() => pgBossInbox({ connectionString, boss: {} as PgBossLike }))).toBe(
      'pgBossInbox: pass either boss or connectionString',
    );
    for (const url of ['xpostgres://h/db', 'mysql://h/db', 'http://postgres://h']) {
      expect(
        messageOf(() => pgBossInbox({ connectionString: url })),
        url,
      ).toBe('pgBossInbox: connectionString must be a postgres:// URL');
    }
    expect(() => pgBossInbox({ connectionString: 'postgresql://h/db' })).not.toThrow();
    for (const queueName of ['', 'a b', 'a/b', 'q'.repeat(101)]) {
      expect(
        messageOf(() => pgBossInbox({ connectionString, queueName })),
        queueName,
      ).toBe('pgBossInbox: queueName must be letters, digits, "_", "-" or "."');
    }
    expect(() =>
      pgBossInbox({ connectionString, queueName: `A.b-c_9${'q'.repeat(93)}` }),
    ).not.toThrow();
    for (const expireInMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(
        messageOf(() => pgBossInbox({ connectionString, expireInMs })),
        String(expireInMs),
      ).toBe('pgBossInbox: expireInMs must be a positive number of ms');
    }

    const inbox = newInbox();
    const { receiver } = newReceiver(inbox);
    for (const pollIntervalMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(
        messageOf(() => inbox.work(receiver, { pollIntervalMs })),
        String(pollIntervalMs),
      ).toBe('pgBossInbox: pollIntervalMs must be a positive number of ms');
    }
    await inbox.close();
  });

  it('stores each job with the inbox’s retry settings: no retry of pg-boss’s own but a dead worker’s, 15 minutes to run by default', async () => {
    const schema = newSchema();
    const inbox = newInbox({ schema, attempts: 4 });
    const stored = storedOf(createTestDelivery());
    await inbox.enqueue(stored);
    const { rows } = await pgBoss.pool.query(
      `SELECT retry_limit, retry_delay, retry_backoff, extract(epoch FROM expire_in)::int AS expire_in FROM "${schema}".job WHERE id = $1`,
      [pgBossJobId(stored.idempotencyKey)],
    );
    expect(rows).toEqual([
      { retry_limit: 3, retry_delay: 0, retry_backoff: false, expire_in: 900 },
    ]);
  });
});

describe('pgBossInbox own pg-boss', () => {
  it('makes its pg-boss without a scheduler: the schema holds only the inbox’s queue', async () => {
    const schema = newSchema();
    const inbox = newInbox({ schema, queueName: 'only' });
    await inbox.start();
    const { rows } = await pgBoss.pool.query<{ name: string }>(
      `SELECT name FROM "${schema}".queue`,
    );
    // With pg-boss's cron on, its timekeeper would add its own queue, __pgboss__send-it.
    expect(rows.map((row) => row.name)).toEqual(['only']);
  });
});

describe('pgBossInbox retention per layout', () => {
  it('asks pg-boss 11/12 (not 10) to delete each job after keepCompletedMs, and sets a dead letter’s and a replay’s deletion_seconds', async () => {
    const schema = newSchema();
    const boss = givenBoss(schema);
    await boss.start();
    const sent: object[] = [];
    const recorded = wrap(boss, {
      send: (name, data, options) => {
        sent.push(options);
        return boss.send(name, data, options);
      },
    });
    const settings = { attempts: 1, keepCompletedMs: 2 * 86_400_000 + 1, keepFailedMs: 3_000_000 };
    const first = storedOf(createTestDelivery());
    // pg-boss 10's tables (schema version 24): no deleteAfterSeconds.
    await pgBossInbox({ boss: recorded, schema, queueName: 'v24', ...settings }).enqueue(first);
    const common = { retryLimit: 0, retryDelay: 0, retryBackoff: false, expireInSeconds: 900 };
    expect(sent).toEqual([{ id: pgBossJobId(first.idempotencyKey), ...common }]);

    // The same tables with pg-boss 11/12's deletion_seconds, at schema version 25.
    await pgBoss.pool.query(`ALTER TABLE "${schema}".job ADD COLUMN deletion_seconds int`);
    await pgBoss.pool.query(`UPDATE "${schema}".version SET version = 25`);
    const inbox = pgBossInbox({ boss: recorded, schema, queueName: 'v25', ...settings });
    const { receiver } = newReceiver(inbox);
    receiver.on('UserSignedIn', () => {
      throw new Error('CRM is down');
    });
    const stored = storedOf(createTestDelivery());
    const id = pgBossJobId(stored.idempotencyKey);
    await inbox.enqueue(stored);
    expect(sent[1]).toEqual({ id, ...common, deleteAfterSeconds: 172_801 });
    const deletion = async () =>
      (
        await pgBoss.pool.query<{ deletion_seconds: number }>(
          `SELECT deletion_seconds FROM "${schema}".job WHERE id = $1`,
          [id],
        )
      ).rows[0]!.deletion_seconds;
    const worker = inbox.work(receiver, { pollIntervalMs: 20 });
    await eventually(async () => expect(await inbox.jobs({ state: 'failed' })).toHaveLength(1));
    await worker.close();
    expect(await deletion()).toBe(3000);
    expect(await inbox.retryJob(stored.idempotencyKey)).toBe(true);
    expect(await deletion()).toBe(172_801);
    await pgBoss.pool.query(
      `UPDATE "${schema}".job SET state = 'failed', deletion_seconds = 1 WHERE id = $1`,
      [id],
    );
    expect(await inbox.retryFailed()).toBe(1);
    expect(await deletion()).toBe(172_801);
  });
});

describe('pgBossInbox enqueue rules', () => {
  it('rejects after enqueueTimeoutMs naming the bound, and sends nothing once its caller was told', async () => {
    const schema = newSchema();
    const boss = givenBoss(schema);
    const starting = gate();
    const sent: string[] = [];
    const slow = wrap(boss, {
      start: async () => {
        await starting.passed;
        return boss.start();
      },
      send: (name, data, options) => {
        sent.push(name);
        return boss.send(name, data, options);
      },
    });
    const inbox = pgBossInbox({ boss: slow, schema, queueName: 'bound', enqueueTimeoutMs: 200 });
    cleanups.push(() => inbox.close());
    const failure = await failureOf(inbox.enqueue(storedOf(createTestDelivery())));
    expect(failure.message).toBe('Postgres did not store the job within 200 ms');
    starting.open();
    await inbox.start();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(sent).toEqual([]);
  });

  it('rejects with the database’s own error when the insert fails', async () => {
    const schema = newSchema();
    const inbox = newInbox({ schema });
    await inbox.start();
    await pgBoss.pool.query(`DROP TABLE "${schema}".job CASCADE`);
    const failure = await failureOf(inbox.enqueue(storedOf(createTestDelivery())));
    expect(failure.message).toMatch(/relation .*job.* does not exist/);
  });
});

describe('pgBossInbox worker rules', () => {
  it('runs a job enqueued in this process at once, without waiting for the next poll', async () => {
    const inbox = newInbox();
    const { receiver } = newReceiver(inbox);
    const runs: string[] = [];
    receiver.on('UserSignedIn', (event) => void runs.push(event.idempotencyKey));
    const worker = inbox.work(receiver, { pollIntervalMs: 600_000 });
    cleanups.push(() => worker.close());
    // The worker's first fetch finds nothing; then it sleeps for ten minutes unless woken.
    await eventually(async () => expect(await pgBossSessions()).toBeGreaterThan(0));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const stored = storedOf(createTestDelivery());
    await inbox.enqueue(stored);
    await eventually(() => expect(runs).toEqual([stored.idempotencyKey]));
  });

  it('asks once per poll when there is nothing to run', async () => {
    const schema = newSchema();
    const boss = givenBoss(schema);
    let fetches = 0;
    const counted = wrap(boss, {
      fetch: (name, options) => {
        fetches++;
        return boss.fetch(name, options) as unknown as ReturnType<PgBossLike['fetch']>;
      },
    });
    const inbox = pgBossInbox({ boss: counted, schema, queueName: 'idle' });
    cleanups.push(() => inbox.close());
    const { receiver } = newReceiver(inbox);
    const worker = inbox.work(receiver, { pollIntervalMs: 600_000 });
    cleanups.push(() => worker.close());
    await eventually(() => expect(fetches).toBe(1));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(fetches).toBe(1);
  });

  it('asks again at once when woken while a fetch is in flight', async () => {
    const schema = newSchema();
    const boss = givenBoss(schema);
    const fetched = gate();
    let fetches = 0;
    const held = wrap(boss, {
      fetch: async (name, options) => {
        const jobs = await boss.fetch(name, options);
        // The first fetch answers (empty) only once the test lets it.
        if (++fetches === 1) await fetched.passed;
        return jobs as unknown as Awaited<ReturnType<PgBossLike['fetch']>>;
      },
    });
    const inbox = pgBossInbox({ boss: held, schema, queueName: 'woken' });
    cleanups.push(() => inbox.close());
    const { receiver } = newReceiver(inbox);
    const runs: string[] = [];
    receiver.on('UserSignedIn', (event) => void runs.push(event.idempotencyKey));
    const worker = inbox.work(receiver, { pollIntervalMs: 600_000 });
    cleanups.push(() => worker.close());
    await eventually(() => expect(fetches).toBe(1));
    const stored = storedOf(createTestDelivery());
    await inbox.enqueue(stored);
    fetched.open();
    await eventually(() => expect(runs).toEqual([stored.idempotencyKey]));
  });

  it('hears a wake during a fetch that follows a poll which ran its full time', async () => {
    const schema = newSchema();
    const boss = givenBoss(schema);
    const second = gate();
    const fetchedAt: number[] = [];
    const held = wrap(boss, {
      fetch: async (name, options) => {
        fetchedAt.push(performance.now());
        const jobs = await boss.fetch(name, options);
        // The second fetch (after the first poll's full wait) answers only once the test lets it.
        if (fetchedAt.length === 2) await second.passed;
        return jobs as unknown as Awaited<ReturnType<PgBossLike['fetch']>>;
      },
    });
    const inbox = pgBossInbox({ boss: held, schema, queueName: 'polled' });
    cleanups.push(() => inbox.close());
    const { receiver } = newReceiver(inbox);
    const runs: string[] = [];
    receiver.on('UserSignedIn', (event) => void runs.push(event.idempotencyKey));
    const worker = inbox.work(receiver, { pollIntervalMs: 2000 });
    cleanups.push(() => worker.close());
    await eventually(() => expect(fetchedAt).toHaveLength(2));
    const stored = storedOf(createTestDelivery());
    await inbox.enqueue(stored);
    const openedAt = performance.now();
    second.open();
    await eventually(() => expect(runs).toEqual([stored.idempotencyKey]));
    // Asked again at once, not after another 2 s poll.
    expect(fetchedAt[2]! - openedAt).toBeLessThan(1000);
  });

  it('puts back only the dead letter retryJob names, and wakes the worker for it', async () => {
    const inbox = newInbox({ attempts: 1 });
    const { receiver } = newReceiver(inbox);
    const runs: string[] = [];
    receiver.on('UserSignedIn', (event) => {
      runs.push(event.idempotencyKey);
      throw new Error('CRM is down');
    });
    const one = storedOf(createTestDelivery());
    const two = storedOf(createTestDelivery());
    await inbox.enqueue(one);
    await inbox.enqueue(two);
    const worker = inbox.work(receiver, { pollIntervalMs: 600_000, concurrency: 2 });
    cleanups.push(() => worker.close());
    await eventually(async () => expect(await inbox.jobs({ state: 'failed' })).toHaveLength(2));
    const before = runs.length;
    expect(await inbox.retryJob(one.idempotencyKey)).toBe(true);
    await eventually(() => expect(runs.length).toBeGreaterThan(before));
    expect(runs.slice(before).every((key) => key === one.idempotencyKey)).toBe(true);
    expect(await inbox.getJob(two.idempotencyKey)).toMatchObject({ state: 'failed' });
  });

  it('never fetches with a batch of 0 while every slot runs a job', async () => {
    const { logs, logger } = recordingLogger();
    const inbox = newInbox({ logger });
    const { receiver } = newReceiver(inbox);
    const release = gate();
    let started = 0;
    receiver.on('UserSignedIn', async () => {
      started++;
      await release.passed;
    });
    await inbox.enqueue(storedOf(createTestDelivery()));
    const worker = inbox.work(receiver, { pollIntervalMs: 10 });
    cleanups.push(() => worker.close());
    await eventually(() => expect(started).toBe(1));
    // Many polls go by with the one slot taken.
    await new Promise((resolve) => setTimeout(resolve, 300));
    release.open();
    await eventually(async () => expect(await inbox.jobs({ state: 'completed' })).toHaveLength(1));
    expect(logs).toEqual([]);
  });

  it('logs a failed fetch and a failed job update with the queue, and keeps going', async () => {
    const schema = newSchema();
    const flaky = failingOnce(givenBoss(schema));
    const { logs, logger } = recordingLogger();
    const inbox = pgBossInbox({
      boss: flaky,
      schema,
      queueName: 'logged',
      logger,
      expireInMs: 1000,
    });
    cleanups.push(() => inbox.close());
    const { receiver } = newReceiver(inbox);
    receiver.on('UserSignedIn', () => {});
    const stored = storedOf(createTestDelivery());
    await inbox.enqueue(stored);
    const worker = inbox.work(receiver, { pollIntervalMs: 20 });
    cleanups.push(() => worker.close());
    await eventually(() =>
      expect(logs).toContainEqual({
        level: 'warn',
        obj: { err: 'complete refused', queue: 'logged', job: pgBossJobId(stored.idempotencyKey) },
        msg: 'inbox job update failed',
      }),
    );
    expect(logs[0]).toEqual({
      level: 'warn',
      obj: { err: 'fetch refused', queue: 'logged' },
      msg: 'inbox fetch failed',
    });
  });

  it('keeps going after a failed fetch and a failed job update without a logger', async () => {
    const schema = newSchema();
    const flaky = failingOnce(givenBoss(schema));
    const inbox = pgBossInbox({ boss: flaky, schema, queueName: 'unlogged', expireInMs: 1000 });
    cleanups.push(() => inbox.close());
    const { receiver } = newReceiver(inbox);
    let runs = 0;
    receiver.on('UserSignedIn', () => void runs++);
    const stored = storedOf(createTestDelivery());
    await inbox.enqueue(stored);
    const worker = inbox.work(receiver, { pollIntervalMs: 20 });
    // The run whose completion failed stays active (pg-boss hands it out again once it expires);
    // the worker goes on with the next job.
    await eventually(() => expect(runs).toBe(1));
    const next = storedOf(createTestDelivery());
    await inbox.enqueue(next);
    await eventually(async () =>
      expect(await inbox.getJob(next.idempotencyKey)).toMatchObject({ state: 'completed' }),
    );
    expect(await inbox.getJob(stored.idempotencyKey)).toMatchObject({ state: 'active' });
    await worker.close();
  });

  it('stops a worker whose inbox cannot start, saying why with the queue', async () => {
    const schema = newSchema();
    const boss = givenBoss(schema);
    const { logs, logger } = recordingLogger();
    const inbox = pgBossInbox({ boss, schema: 'pgboss_elsewhere', queueName: 'misset', logger });
    cleanups.push(() => inbox.close());
    const { receiver } = newReceiver(inbox);
    const worker = inbox.work(receiver, { pollIntervalMs: 20 });
    await (worker as unknown as { closed: Promise<void> }).closed;
    expect(logs).toEqual([
      {
        level: 'error',
        obj: {
          err: 'pgBossInbox: no pg-boss job table in the schema "pgboss_elsewhere": pass the schema your boss was made with',
          queue: 'misset',
        },
        msg: 'inbox worker stopped',
      },
    ]);
  });

  it('closes its workers when it closes', async () => {
    const inbox = newInbox();
    const { receiver } = newReceiver(inbox);
    const worker = inbox.work(receiver, { pollIntervalMs: 600_000 });
    await inbox.start();
    await inbox.close();
    const state = await Promise.race([
      (worker as unknown as { closed: Promise<void> }).closed.then(() => 'closed'),
      new Promise((resolve) => setTimeout(() => resolve('still running'), 50)),
    ]);
    expect(state).toBe('closed');
  });
});

describe('pgBossInbox start and stop rules', () => {
  it('keeps a setup mistake for every later caller, even once the tables are fixed', async () => {
    const schema = newSchema();
    const boss = givenBoss(schema);
    await boss.start();
    await boss.getDb().executeSql(`UPDATE "${schema}".version SET version = 20`, []);
    const inbox = pgBossInbox({ boss, schema, queueName: 'kept' });
    expect(await failureOf(inbox.start())).toBeInstanceOf(ConfigError);
    await boss.getDb().executeSql(`UPDATE "${schema}".version SET version = 24`, []);
    expect((await failureOf(inbox.start())).message).toMatch(/schema version 20 is older/);
  });

  it('tries a given boss again after a failed start, never stopping it, with one error listener', async () => {
    const schema = newSchema();
    const boss = givenBoss(schema);
    let starts = 0;
    const stops: unknown[] = [];
    const once = wrap(boss, {
      start: () =>
        ++starts === 1 ? Promise.reject(new Error('the database is starting up')) : boss.start(),
      stop: (options) => {
        stops.push(options);
        return boss.stop(options);
      },
    });
    const { logs, logger } = recordingLogger();
    const inbox = pgBossInbox({ boss: once, schema, queueName: 'again', logger });
    const listeners = boss.listenerCount('error');
    expect((await failureOf(inbox.start())).message).toBe('the database is starting up');
    await inbox.start();
    expect(boss.listenerCount('error')).toBe(listeners + 1);
    boss.emit('error', new Error('connection lost'));
    expect(logs).toEqual([
      {
        level: 'warn',
        obj: { err: 'connection lost', queue: 'again' },
        msg: 'inbox database error',
      },
    ]);
    await inbox.close();
    expect(stops).toEqual([]);
    expect(boss.listenerCount('error')).toBe(listeners);
  });

  it('logs the database errors of the pg-boss it makes again after a failed start', async () => {
    const cluster = await startPostgresCluster();
    cleanups.push(() => cluster.close());
    await cluster.stop();
    const { logs, logger } = recordingLogger();
    const inbox = pgBossInbox({ connectionString: cluster.url, queueName: 'relog', logger });
    cleanups.push(() => inbox.close());
    await failureOf(inbox.start());
    await cluster.start();
    await eventually(() => inbox.start());
    await inbox.enqueue(storedOf(createTestDelivery()));
    logs.length = 0;
    // The server goes away under pg-boss's idle connections: its pool reports each one.
    await cluster.stop();
    await eventually(() =>
      expect(logs).toContainEqual({
        level: 'warn',
        obj: { err: expect.any(String), queue: 'relog' },
        msg: 'inbox database error',
      }),
    );
  }, 60_000);

  it('rejects with pg-boss’s own error when it cannot make its pg-boss', async () => {
    const inbox = pgBossInbox({
      connectionString: pgBoss.database.url,
      schema: 'not a-schema',
      queueName: 'q',
    });
    cleanups.push(() => inbox.close());
    const failure = await failureOf(inbox.start());
    expect(failure).not.toBeInstanceOf(TypeError);
    // pg-boss refuses the schema name in its constructor, before the inbox has a pg-boss to stop.
    expect(failure.message).toMatch(/^Name can only contain alphanumeric characters/);
  });

  it('closes without having started, and stops its own pg-boss with its sessions when close resolves', async () => {
    await newInbox().close();
    const before = await pgBossSessions();
    const inbox = newInbox();
    await inbox.start();
    expect(await pgBossSessions()).toBeGreaterThan(before);
    await inbox.close();
    // A session the client has ended leaves pg_stat_activity when its backend process exits,
    // a moment later on a busy host (seen once in a full run): a short wait for that. A pg-boss
    // that close left running would keep its sessions for good.
    await eventually(async () => expect(await pgBossSessions()).toBe(before), 300);
  });

  it('never stops a boss it was given', async () => {
    const schema = newSchema();
    const boss = givenBoss(schema);
    await boss.start();
    let stopped = false;
    boss.on('stopped', () => (stopped = true));
    const inbox = pgBossInbox({ boss, schema, queueName: 'owned' });
    await inbox.start();
    await inbox.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(stopped).toBe(false);
  });
});

describe('pgBossInbox tables rules', () => {
  /** A started pg-boss of a schema of the test's own, and its db. */
  async function startedBoss() {
    const schema = newSchema();
    const boss = givenBoss(schema);
    await boss.start();
    const sql = (text: string) => boss.getDb().executeSql(text, []);
    return { schema, boss, sql };
  }

  it('refuses a schema name Postgres would not take unquoted, and a schema whose version row is gone', async () => {
    const { schema, boss, sql } = await startedBoss();
    const bad = await failureOf(pgBossInbox({ boss, schema: 'a-b', queueName: 'q' }).start());
    expect(bad.message).toBe('pgBossInbox: schema must be a name of letters, digits and "_"');
    await sql(`DELETE FROM "${schema}".version`);
    const missing = await failureOf(pgBossInbox({ boss, schema, queueName: 'q' }).start());
    expect(missing).toBeInstanceOf(ConfigError);
    expect(missing.message).toBe(`pgBossInbox: pg-boss is not installed in the schema "${schema}"`);
  });

  it('takes schema version 21 as pg-boss 10, and a newer version whose job table has every column', async () => {
    const { schema, boss, sql } = await startedBoss();
    await sql(`UPDATE "${schema}".version SET version = 21`);
    await pgBossInbox({ boss, schema, queueName: 'v21' }).start();
    await sql(`ALTER TABLE "${schema}".job ADD COLUMN deletion_seconds int`);
    await sql(`UPDATE "${schema}".version SET version = 47`);
    await pgBossInbox({ boss, schema, queueName: 'v47' }).start();
    await sql(`ALTER TABLE "${schema}".job DROP COLUMN deletion_seconds, DROP COLUMN output`);
    expect((await failureOf(pgBossInbox({ boss, schema, queueName: 'v48' }).start())).message).toBe(
      'pgBossInbox: pg-boss schema version 47 is newer than 46 and its job table has no output, ' +
        'deletion_seconds: this schoolhooks knows pg-boss 10, 11 and 12 (schema versions 21–46)',
    );
  });

  it('lists every state oldest first, and tells waiting from delayed', async () => {
    const schema = newSchema();
    const inbox = newInbox({ schema, attempts: 2, backoffMs: 600_000 });
    const { receiver } = newReceiver(inbox);
    receiver.on('UserSignedIn', (event) => {
      if (event.idempotencyKey === failing.idempotencyKey) throw new Error('CRM is down');
    });
    const done = storedOf(createTestDelivery());
    const failing = storedOf(createTestDelivery());
    await inbox.enqueue(done);
    await inbox.enqueue(failing);
    const worker = inbox.work(receiver, { pollIntervalMs: 20, concurrency: 2 });
    await eventually(async () => {
      expect(await inbox.jobs({ state: 'completed' })).toHaveLength(1);
      expect(await inbox.jobs({ state: 'delayed' })).toHaveLength(1);
    });
    await worker.close();
    const dead = storedOf(createTestDelivery());
    await inbox.enqueue(dead);
    await pgBoss.pool.query(
      `UPDATE "${schema}".job SET state = 'failed', completed_on = now() WHERE id = $1`,
      [pgBossJobId(dead.idempotencyKey)],
    );
    const waiting = storedOf(createTestDelivery());
    await inbox.enqueue(waiting);
    // The first job stored is made the newest: the listing follows created_on, not the heap.
    await pgBoss.pool.query(
      `UPDATE "${schema}".job SET created_on = now() + interval '1 hour' WHERE id = $1`,
      [pgBossJobId(done.idempotencyKey)],
    );
    const listed = await inbox.jobs();
    expect(listed.map((job) => [job.idempotencyKey, job.state])).toEqual([
      [failing.idempotencyKey, 'delayed'],
      [dead.idempotencyKey, 'failed'],
      [waiting.idempotencyKey, 'waiting'],
      [done.idempotencyKey, 'completed'],
    ]);
    expect((await inbox.jobs({ state: 'waiting' })).map((job) => job.idempotencyKey)).toEqual([
      waiting.idempotencyKey,
    ]);
    expect((await inbox.jobs({ state: 'delayed' })).map((job) => job.idempotencyKey)).toEqual([
      failing.idempotencyKey,
    ]);
  });

  it('shows a job exactly: no reason, outcome or finish time it does not have; the run in progress not counted', async () => {
    const inbox = newInbox();
    const { receiver } = newReceiver(inbox);
    const running = gate();
    const release = gate();
    receiver.on('UserSignedIn', async () => {
      running.open();
      await release.passed;
    });
    const stored = storedOf(createTestDelivery());
    await inbox.enqueue(stored);
    const shown = {
      id: pgBossJobId(stored.idempotencyKey),
      event: 'UserSignedIn',
      idempotencyKey: stored.idempotencyKey,
      receivedAt: stored.receivedAt,
    };
    expect(await inbox.getJob(stored.idempotencyKey)).toEqual({
      ...shown,
      state: 'waiting',
      attemptsMade: 0,
    });
    const worker = inbox.work(receiver, { pollIntervalMs: 20 });
    cleanups.push(() => worker.close());
    await running.passed;
    expect(await inbox.getJob(stored.idempotencyKey)).toEqual({
      ...shown,
      state: 'active',
      attemptsMade: 0,
    });
    expect(await inbox.jobs()).toEqual([{ ...shown, state: 'active', attemptsMade: 0 }]);
    release.open();
    await eventually(async () =>
      expect(await inbox.getJob(stored.idempotencyKey)).toMatchObject({ state: 'completed' }),
    );
    expect(await inbox.getJob(stored.idempotencyKey)).toEqual({
      ...shown,
      state: 'completed',
      attemptsMade: 1,
      outcome: 'processed',
      finishedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(await inbox.jobs({ state: 'completed' })).toEqual([
      { ...shown, state: 'completed', attemptsMade: 1 },
    ]);
  });

  it('shows a job someone else sent to the queue without our data, with its creation time', async () => {
    const schema = newSchema();
    const boss = givenBoss(schema);
    await boss.start();
    const inbox = pgBossInbox({ boss, schema, queueName: 'foreign' });
    await inbox.start();
    const id = await boss.send('foreign', { something: 'else' });
    const { rows } = await pgBoss.pool.query<{ created_on: Date }>(
      `SELECT created_on FROM "${schema}".job WHERE id = $1`,
      [id],
    );
    expect(await inbox.getJob(id!)).toEqual({
      id,
      event: '',
      idempotencyKey: '',
      state: 'waiting',
      attemptsMade: 0,
      receivedAt: rows[0]!.created_on.toISOString(),
    });
    // Completed by its own worker with an output of its own: no outcome, and no reason either.
    expect(await boss.fetch('foreign')).toHaveLength(1);
    await boss.complete('foreign', id!, { message: 'handled elsewhere' });
    expect(await inbox.getJob(id!)).toEqual({
      id,
      event: '',
      idempotencyKey: '',
      state: 'completed',
      attemptsMade: 1,
      receivedAt: rows[0]!.created_on.toISOString(),
      finishedAt: expect.stringMatching(/^\d{4}-/),
    });
  });

  it('puts a dead letter back as new: no reason, no finish time, waiting', async () => {
    const inbox = newInbox({ attempts: 1 });
    const { receiver } = newReceiver(inbox);
    receiver.on('UserSignedIn', () => {
      throw new Error('CRM is down');
    });
    // A key that is not a UUID: found by the job id derived from it alone.
    const stored = { ...storedOf(createTestDelivery()), idempotencyKey: `order:${randomUUID()}` };
    await inbox.enqueue(stored);
    const worker = inbox.work(receiver, { pollIntervalMs: 20 });
    await eventually(async () => expect(await inbox.jobs({ state: 'failed' })).toHaveLength(1));
    await worker.close();
    expect(await inbox.retryJob(stored.idempotencyKey)).toBe(true);
    expect(await inbox.getJob(stored.idempotencyKey)).toEqual({
      id: pgBossJobId(stored.idempotencyKey),
      event: 'UserSignedIn',
      idempotencyKey: stored.idempotencyKey,
      receivedAt: stored.receivedAt,
      state: 'waiting',
      attemptsMade: 0,
    });
  });
});

/** `boss` with its first fetch and its first job update refused, and the rest passed through. */
function failingOnce(boss: PgBoss): PgBossLike {
  let failFetch = true;
  let failComplete = true;
  return wrap(boss, {
    fetch: (name, options) =>
      failFetch
        ? ((failFetch = false), Promise.reject(new Error('fetch refused')))
        : (boss.fetch(name, options) as unknown as ReturnType<PgBossLike['fetch']>),
    complete: (name, id, data) =>
      failComplete
        ? ((failComplete = false), Promise.reject(new Error('complete refused')))
        : boss.complete(name, id, data),
  });
}
