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
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { nodeListener } from '../../adapters/node.js';
import {
  ConfigError,
  createReceiver,
  memoryStore,
  paymentCompletedDataSchema,
  type Receiver,
  type ReceiverOptions,
  type SchoolhooksError,
  type StoredDelivery,
} from '../../src/index.js';
import { pgBossInbox, pgBossJobId, postgresStore, type PgBossInbox } from '../../src/postgres.js';
import {
  createTestDelivery,
  fixtureDelivery,
  SECRET,
  type Delivery,
} from '../helpers/deliveries.js';
import {
  dropTables,
  startPostgresCluster,
  uniqueTable,
  useTestPostgres,
  type TestPostgres,
} from '../helpers/postgres.js';

let database: TestPostgres;
let pool: pg.Pool;
/** What each test opened, closed after it whatever happened. */
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  database = await useTestPostgres();
  pool = new pg.Pool({ connectionString: database.url, max: 20 });
  pool.on('error', () => {});
}, 60_000);

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

afterAll(async () => {
  await pool?.end();
  await database?.close();
});

/** A pg-boss schema of this test's own, dropped after it. */
function newSchema(url = database.url): string {
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
    connectionString: database.url,
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

function storedOf(delivery: Delivery, event = 'UserSignedIn'): StoredDelivery {
  return {
    body: delivery.body,
    signature: delivery.headers['signature']!,
    event,
    idempotencyKey: delivery.idempotencyKey,
    receivedAt: new Date().toISOString(),
  };
}

/** Waits until `check` passes, polling: workers run in their own time. */
function eventually<T>(check: () => Promise<T> | T, timeout = 10_000): Promise<T> {
  return vi.waitFor(check, { timeout, interval: 25 });
}

describe('pgBossJobId', () => {
  it('derives one UUID per key, the same every time, and two keys never share one', () => {
    const id = pgBossJobId('8b0c6a4e-3f0e-4c43-9d59-2b7d0f1c9e11');
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(pgBossJobId('8b0c6a4e-3f0e-4c43-9d59-2b7d0f1c9e11')).toBe(id);
    const keys = ['a', 'b', 'order:42', '42', '', 'ключ', id];
    expect(new Set(keys.map(pgBossJobId)).size).toBe(keys.length);
  });
});

describe('pgBossInbox options', () => {
  it('throws a ConfigError for options it cannot work with, before connecting', () => {
    const connectionString = 'postgres://postgres@127.0.0.1:1/none';
    expect(() => pgBossInbox({ connectionString, attempts: 0 })).toThrow(
      new ConfigError('pgBossInbox: attempts must be a positive integer'),
    );
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
    const boss = new PgBoss({ connectionString: database.url, schema });
    boss.on('error', () => {});
    cleanups.push(() => boss.stop({ graceful: false, wait: true }));
    await boss.start();
    // A boss of another schema than the inbox was told.
    await expect(pgBossInbox({ boss, schema: 'pgboss_elsewhere' }).start()).rejects.toThrow(
      'no pg-boss job table in the schema "pgboss_elsewhere"',
    );
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
    await expect(pgBossInbox({ boss, schema }).start()).rejects.toThrow(
      /schema version 99 is newer than 46 and its job table has no deletion_seconds/,
    );
  });
});

describe('pgBossInbox: the HTTP side', () => {
  it('answers 202 once the row is committed, a worker started later processes it once, a repeat is 200 duplicate', async () => {
    const inbox = newInbox();
    const { receiver } = newReceiver(inbox);
    const effects: string[] = [];
    receiver.on('UserSignedIn', (event, ctx) => {
      effects.push(`${event.idempotencyKey}@${ctx.attempt}`);
    });
    const url = await serve(receiver);
    const delivery = createTestDelivery('UserSignedIn', { user: { id: 1 } });
    const key = delivery.idempotencyKey;

    expect(await post(url, delivery)).toEqual({
      status: 202,
      body: { ok: true, outcome: 'queued', idempotencyKey: key },
    });
    expect(await inbox.getJob(key)).toMatchObject({
      id: pgBossJobId(key),
      state: 'waiting',
      attemptsMade: 0,
    });
    expect(await inbox.jobs()).toMatchObject([
      { id: pgBossJobId(key), event: 'UserSignedIn', idempotencyKey: key, state: 'waiting' },
    ]);
    expect(await post(url, delivery)).toMatchObject({
      status: 200,
      body: { outcome: 'duplicate' },
    });
    expect(effects).toEqual([]);

    const worker = inbox.work(receiver, { concurrency: 2, pollIntervalMs: 50 });
    cleanups.push(() => worker.close());
    await eventually(async () => expect(await inbox.jobs({ state: 'completed' })).toHaveLength(1));
    expect(effects).toEqual([`${key}@1`]);
    expect(await inbox.getJob(key)).toMatchObject({
      id: pgBossJobId(key),
      state: 'completed',
      outcome: 'processed',
      attemptsMade: 1,
      finishedAt: expect.stringMatching(/^\d{4}-/),
    });
    expect((await post(url, delivery)).body['outcome']).toBe('duplicate');
    expect(await inbox.jobs()).toHaveLength(1);
    expect(effects).toHaveLength(1);
  });

  it('keeps one job for one key however often it is enqueued, and never lists the body or signature', async () => {
    const inbox = newInbox();
    const stored = { ...storedOf(createTestDelivery()), idempotencyKey: `order:${randomUUID()}` };
    await Promise.all([inbox.enqueue(stored), inbox.enqueue(stored), inbox.enqueue(stored)]);
    await inbox.enqueue(stored);
    const jobs = await inbox.jobs();
    expect(jobs.map((job) => job.id)).toEqual([pgBossJobId(stored.idempotencyKey)]);
    expect(await inbox.getJob(stored.idempotencyKey)).toMatchObject({ state: 'waiting' });
    expect(await inbox.getJob(jobs[0]!.id)).toMatchObject({ state: 'waiting' });
    const shown = JSON.stringify([jobs, await inbox.getJob(jobs[0]!.id)]);
    expect(shown).not.toContain(stored.signature);
    expect(shown).not.toContain('"body"');
    expect(await inbox.getJob('no-such-key')).toBeUndefined();
    expect(await inbox.getJob(randomUUID())).toBeUndefined();
  });

  it('rejects enqueue once closed', async () => {
    const inbox = newInbox();
    await inbox.start();
    await inbox.close();
    await expect(inbox.enqueue(storedOf(createTestDelivery()))).rejects.toThrow('closed');
  });
});

describe('pgBossInbox: the worker side', () => {
  it('verifies each job again: a stored body changed after it was signed is a dead letter, never run', async () => {
    const inbox = newInbox();
    const { receiver, errors } = newReceiver(inbox);
    const handler = vi.fn();
    receiver.on('UserSignedIn', handler);
    const delivery = createTestDelivery('UserSignedIn', { user: { id: 7 } });
    const stored = storedOf(delivery);
    await inbox.enqueue({ ...stored, body: stored.body.replace('"id":7', '"id":8') });
    const worker = inbox.work(receiver, { pollIntervalMs: 50 });
    cleanups.push(() => worker.close());
    const [dead] = await eventually(async () => {
      const failed = await inbox.jobs({ state: 'failed' });
      expect(failed).toHaveLength(1);
      return failed;
    });
    expect(dead).toMatchObject({
      attemptsMade: 1,
      reason: expect.stringMatching(/^invalid_signature: /),
    });
    expect(handler).not.toHaveBeenCalled();
    expect(errors.map((error) => error.code)).toContain('invalid_signature');
  });

  it('dead-letters an invalid payload at once, never running a handler, and replays it with retryFailed', async () => {
    const inbox = newInbox();
    const { receiver, errors } = newReceiver(inbox);
    const effects: string[] = [];
    receiver.on('PaymentCompleted', (event) => {
      effects.push(event.idempotencyKey);
    });
    const url = await serve(receiver);
    const delivery = fixtureDelivery('PaymentCompleted', (data) => {
      const payment = data['payment'] as { invoice: Record<string, unknown> };
      payment.invoice['totalAmount'] = '4990.00';
    });
    expect((await post(url, delivery)).status).toBe(202);
    const worker = inbox.work(receiver, { pollIntervalMs: 50 });
    cleanups.push(() => worker.close());
    const [dead] = await eventually(async () => {
      const failed = await inbox.jobs({ state: 'failed' });
      expect(failed).toHaveLength(1);
      return failed;
    });
    expect(dead).toMatchObject({ idempotencyKey: delivery.idempotencyKey, attemptsMade: 1 });
    expect(dead?.reason).toBe(
      'invalid_payload: PaymentCompleted payload failed validation at data.payment.invoice.totalAmount: Invalid input: expected number, received string',
    );
    expect(effects).toEqual([]);
    expect(errors.map((error) => error.code)).toContain('invalid_payload');
    await worker.close();

    // The fix: a receiver that reads this payload (as an upgrade would), then the replay.
    const lenient = paymentCompletedDataSchema.extend({
      payment: paymentCompletedDataSchema.shape.payment.extend({
        invoice: paymentCompletedDataSchema.shape.payment.shape.invoice.extend({
          totalAmount: z.union([z.number(), z.string()]),
        }),
      }),
    });
    const { receiver: fixed } = newReceiver(inbox, { schemas: { PaymentCompleted: lenient } });
    fixed.on('PaymentCompleted', (event) => {
      effects.push(event.idempotencyKey);
    });
    const fixedWorker = inbox.work(fixed, { pollIntervalMs: 50 });
    cleanups.push(() => fixedWorker.close());
    expect(await inbox.retryFailed({ event: 'UserSignedIn' })).toBe(0);
    expect(await inbox.retryFailed({ event: 'PaymentCompleted' })).toBe(1);
    await eventually(async () => expect(await inbox.jobs({ state: 'completed' })).toHaveLength(1));
    expect(effects).toEqual([delivery.idempotencyKey]);
    expect(await inbox.getJob(delivery.idempotencyKey)).toMatchObject({ attemptsMade: 1 });
    expect(await inbox.retryFailed()).toBe(0);
  });

  it('retries a failing handler with the policy’s backoff: it succeeds on attempt 3, its effect once', async () => {
    const inbox = newInbox({ backoffMs: 300 });
    const { receiver, errors } = newReceiver(inbox);
    const effects: string[] = [];
    const runs: { attempt: number; at: number }[] = [];
    receiver.on('UserSignedIn', (event, ctx) => {
      runs.push({ attempt: ctx.attempt, at: performance.now() });
      if (ctx.attempt < 3) throw new Error(`CRM is down (attempt ${ctx.attempt})`);
      effects.push(event.idempotencyKey);
    });
    const url = await serve(receiver);
    const delivery = createTestDelivery();
    expect((await post(url, delivery)).status).toBe(202);
    const worker = inbox.work(receiver, { pollIntervalMs: 20 });
    cleanups.push(() => worker.close());
    await eventually(async () => expect(await inbox.jobs({ state: 'completed' })).toHaveLength(1));
    expect(runs.map((run) => run.attempt)).toEqual([1, 2, 3]);
    // 300 ms after the first failure, 600 ms after the second (exponentialDelay).
    expect(runs[1]!.at - runs[0]!.at).toBeGreaterThanOrEqual(290);
    expect(runs[2]!.at - runs[1]!.at).toBeGreaterThanOrEqual(590);
    expect(effects).toEqual([delivery.idempotencyKey]);
    expect(errors.filter((error) => error.code === 'handler_failed')).toHaveLength(2);
  });

  it('shows a retried job as delayed with its reason, dead-letters it after `attempts`, and retries it by id', async () => {
    const inbox = newInbox({ attempts: 3, backoffMs: 200 });
    const { receiver } = newReceiver(inbox);
    let runs = 0;
    receiver.on('UserSignedIn', () => {
      runs++;
      throw new Error('CRM is down');
    });
    const url = await serve(receiver);
    const delivery = createTestDelivery();
    await post(url, delivery);
    const worker = inbox.work(receiver, { pollIntervalMs: 20 });
    cleanups.push(() => worker.close());
    const [delayed] = await eventually(async () => {
      const list = await inbox.jobs({ state: 'delayed' });
      expect(list).toHaveLength(1);
      return list;
    });
    expect(delayed).toMatchObject({ attemptsMade: 1, reason: 'handler_failed: CRM is down' });
    const [dead] = await eventually(async () => {
      const list = await inbox.jobs({ state: 'failed' });
      expect(list).toHaveLength(1);
      return list;
    });
    expect(dead).toMatchObject({
      idempotencyKey: delivery.idempotencyKey,
      attemptsMade: 3,
      reason: 'handler_failed: CRM is down',
    });
    expect(runs).toBe(3);
    expect(await inbox.jobs({ state: 'waiting' })).toEqual([]);
    expect(await inbox.retryJob(delivery.idempotencyKey)).toBe(true);
    expect(await inbox.retryJob(delivery.idempotencyKey)).toBe(false);
    await eventually(() => expect(runs).toBe(6));
    await eventually(async () => expect(await inbox.jobs({ state: 'failed' })).toHaveLength(1));
  });

  it('with postgresStore, each run is one transaction: a failed run’s writes are gone, the successful run’s kept', async () => {
    const grants = uniqueTable('pgb_grants');
    const keys = uniqueTable('pgb_keys');
    await pool.query(`CREATE TABLE "${grants}" (key text NOT NULL, attempt int NOT NULL)`);
    cleanups.push(() => dropTables(pool, [grants, keys]));
    const inbox = newInbox({ backoffMs: 20 });
    const { receiver } = newReceiver(inbox, { store: postgresStore({ pool, table: keys }) });
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
    const { rows } = await pool.query(`SELECT key, attempt FROM "${grants}"`);
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
    const dying = new PgBoss({ connectionString: database.url, schema, supervise: false });
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

  it('closes a worker gracefully: the run in progress finishes and completes, nothing new starts', async () => {
    const inbox = newInbox();
    const { receiver } = newReceiver(inbox);
    let release!: () => void;
    const started: string[] = [];
    const finished: string[] = [];
    receiver.on('UserSignedIn', async (event) => {
      started.push(event.idempotencyKey);
      await new Promise<void>((resolve) => (release = resolve));
      finished.push(event.idempotencyKey);
    });
    const first = storedOf(createTestDelivery());
    await inbox.enqueue(first);
    const worker = inbox.work(receiver, { pollIntervalMs: 20 });
    await eventually(() => expect(started).toHaveLength(1));
    await inbox.enqueue(storedOf(createTestDelivery()));
    const closing = worker.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    release();
    await closing;
    expect(finished).toEqual([first.idempotencyKey]);
    expect(started).toHaveLength(1);
    expect(await inbox.getJob(first.idempotencyKey)).toMatchObject({ state: 'completed' });
    expect(await inbox.jobs({ state: 'waiting' })).toHaveLength(1);
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

    await cluster.start();
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
    const locker = await pool.connect();
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
    const boss = new PgBoss({ connectionString: database.url, schema });
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
