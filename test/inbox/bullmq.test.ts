/**
 * bullmqInbox on real Redis and real BullMQ, with deliveries over real HTTP (the node adapter on a
 * loopback server, and fetch). Every test has a queue name and prefixes of its own, so parallel
 * runs never meet.
 */

import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Backoffs, FlowProducer, Queue, Worker } from 'bullmq';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { nodeListener } from '../../src/adapters/node.js';
import {
  ConfigError,
  createReceiver,
  memoryStore,
  type Logger,
  type Receiver,
  type ReceiverOptions,
  type SchoolhooksError,
  type StoredDelivery,
} from '../../src/index.js';
import {
  BACKOFF_STRATEGY,
  bullmqInbox,
  inboxJobId,
  type BullmqInbox,
} from '../../src/inbox/bullmq.js';
import { redisStore } from '../../src/stores/redis.js';
import {
  createTestDelivery,
  deferred,
  SECRET,
  type Delivery,
  storedOf,
} from '../helpers/deliveries.js';
import {
  startRedisCluster,
  startRedisServer,
  useTestRedis,
  type TestRedis,
} from '../helpers/redis.js';
import { failureOf } from '../helpers/failure-of.js';
import { describeInboxContract } from './contract.js';

let redis: TestRedis;
let client: Redis;
const run = randomUUID().slice(0, 8);
/** What each test opened, closed after it whatever happened. */
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  redis = await useTestRedis();
  client = new Redis(redis.url);
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

afterAll(async () => {
  client?.disconnect();
  await redis?.close();
});

/** A queue of its own, and its keys removed afterwards. */
/** A client of `url` whose errors the test expects (Redis stopped), closed after the test. */
function quietConnection(url: string, options: RedisOptions = {}): Redis {
  const connection = new Redis(url, options);
  connection.on('error', () => {});
  cleanups.push(async () => connection.disconnect());
  return connection;
}

function newInbox(
  options: Partial<Parameters<typeof bullmqInbox>[0]> = {},
  connection: Parameters<typeof bullmqInbox>[0]['connection'] = client,
): BullmqInbox {
  const inbox = bullmqInbox({
    connection,
    queueName: `inbox-${randomUUID()}`,
    prefix: `test-bull-${run}`,
    backoffMs: 10,
    ...options,
  });
  cleanups.push(async () => {
    await inbox.queue.obliterate({ force: true }).catch(() => {});
    await inbox.close();
  });
  return inbox;
}

function newReceiver(inbox: BullmqInbox, options: Partial<ReceiverOptions> = {}) {
  const errors: SchoolhooksError[] = [];
  const receiver = createReceiver({
    secret: SECRET,
    store: redisStore({ client, prefix: `test-inbox-${run}:${randomUUID()}:` }),
    inbox,
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

/** A private Redis the test may pause (it stops answering), resumed before it is closed. */
async function pausableServer() {
  const server = await startRedisServer();
  cleanups.push(async () => {
    server.resume();
    await server.close();
  });
  return server;
}

/** A private Redis the test stops, started again before the inbox is closed. */
async function stoppableServer() {
  const server = await startRedisServer();
  cleanups.push(() => server.close());
  return {
    url: server.url,
    async stop() {
      await server.stop();
      // Cleanups run last first: this one before the inbox's and its workers'.
      cleanups.push(() => server.start());
    },
  };
}

/** Waits until `check` passes, polling: workers run in their own time. */
function eventually<T>(check: () => Promise<T> | T, timeout = 10_000): Promise<T> {
  return vi.waitFor(check, { timeout, interval: 25 });
}

describeInboxContract({
  factory: 'bullmqInbox',
  newInbox: (options) => newInbox(options),
  newStore: () => redisStore({ client, prefix: `test-inbox-${run}:${randomUUID()}:` }),
  jobId: inboxJobId,
  inspectable: true,
  // newInbox's own cleanups close each inbox and remove its queue.
  cleanup: async () => {},
});

describe('inboxJobId', () => {
  it('keeps an ordinary key, and escapes what BullMQ refuses in an id', () => {
    expect(inboxJobId('8b0c6a4e-3f0e-4c43-9d59-2b7d0f1c9e11')).toBe(
      '8b0c6a4e-3f0e-4c43-9d59-2b7d0f1c9e11',
    );
    expect(inboxJobId('order:42')).toBe('order%3A42');
    expect(inboxJobId('a:b:c')).toBe('a%3Ab%3Ac');
    expect(inboxJobId('42')).toBe('#42');
    expect(inboxJobId('-7')).toBe('#-7');
    expect(inboxJobId('042')).toBe('042');
  });

  it('never gives two keys one id, as Redis receives it (UTF-8)', () => {
    const keys = ['42', '#42', '%2342', '%', '%25', ':', '%3A', '#', '%23', 'a:b', 'a%3Ab'];
    // Lone surrogates have no UTF-8 form: sent as they are, all three would be 'k\ufffd'.
    keys.push('k\ud800', 'k\udbff', 'k\udc00', 'k\ufffd', 'k', 'k\0');
    const ids = keys.map(inboxJobId);
    expect(new Set(ids.map((id) => Buffer.from(id, 'utf8').toString('hex'))).size).toBe(
      keys.length,
    );
  });
});

describe('bullmqInbox options', () => {
  it('throws a ConfigError for options it cannot work with, before connecting', () => {
    const connection = { host: '127.0.0.1', port: 1, lazyConnect: true };
    expect(() => bullmqInbox({ connection, keepFailedMs: Number.POSITIVE_INFINITY })).toThrow(
      'bullmqInbox: keepFailedMs must be a number of ms, 0 or more',
    );
    expect(() => bullmqInbox({ connection, queueName: 'a:b' })).toThrow(ConfigError);
    expect(() => bullmqInbox({ connection, queueName: '' })).toThrow(
      new ConfigError('bullmqInbox: queueName must be a non-empty name without ":"'),
    );
    for (const enqueueTimeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => bullmqInbox({ connection, enqueueTimeoutMs }), String(enqueueTimeoutMs)).toThrow(
        new ConfigError('bullmqInbox: enqueueTimeoutMs must be a positive number of ms'),
      );
    }
  });

  it('refuses a lockDurationMs or stalledIntervalMs BullMQ cannot work with, before connecting a worker', async () => {
    const inbox = newInbox();
    const { receiver } = newReceiver(inbox);
    await inbox.jobs(); // connected
    // BullMQ itself refused 0 only after connecting (leaving the connections open), and ran
    // with NaN (a stalled check every millisecond), a negative lock or a fraction Redis refuses.
    for (const ms of [0, -5, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => inbox.work(receiver, { lockDurationMs: ms }), String(ms)).toThrow(
        new ConfigError('bullmqInbox: lockDurationMs must be a positive integer of ms'),
      );
      expect(() => inbox.work(receiver, { stalledIntervalMs: ms }), String(ms)).toThrow(
        new ConfigError('bullmqInbox: stalledIntervalMs must be a positive integer of ms'),
      );
    }
    expect(await inbox.queue.getWorkersCount()).toBe(0);
    // The smallest time it takes.
    const worker = inbox.work(receiver, { lockDurationMs: 1000, stalledIntervalMs: 1 });
    cleanups.push(() => worker.close());
    await eventually(async () => expect(await inbox.queue.getWorkersCount()).toBeGreaterThan(0));
  });
});

describe('bullmqInbox: the HTTP side', () => {
  it('stores each job with the inbox’s attempts, backoff and how long it is kept', async () => {
    const stored = (key: string): StoredDelivery => ({
      body: '{}',
      signature: 'v1=00',
      event: 'UserSignedIn',
      idempotencyKey: key,
      receivedAt: new Date().toISOString(),
    });
    const custom = newInbox({
      attempts: 3,
      backoffMs: 250,
      keepCompletedMs: 1500,
      keepFailedMs: 2_000_001,
    });
    await custom.enqueue(stored('custom:1'));
    expect((await custom.queue.getJob('custom%3A1'))?.opts).toMatchObject({
      jobId: 'custom%3A1',
      attempts: 3,
      backoff: { type: 'exponential', delay: 250 },
      // Seconds, rounded up: a job is never dropped before it was kept as long as asked.
      removeOnComplete: { age: 2 },
      removeOnFail: { age: 2001 },
    });
    // Every default (the queue name too: the prefix keeps it apart from other runs).
    const defaults = bullmqInbox({ connection: client, prefix: `test-bull-${run}` });
    cleanups.push(async () => {
      await defaults.queue.obliterate({ force: true }).catch(() => {});
      await defaults.close();
    });
    expect(defaults.queue.name).toBe('schoolhooks');
    await defaults.enqueue(stored('plain'));
    const job = await defaults.queue.getJob('plain');
    expect(job?.name).toBe('UserSignedIn');
    expect(job?.opts).toMatchObject({
      attempts: 10,
      backoff: { type: 'exponential', delay: 30_000 },
      removeOnComplete: { age: 86_400 },
      removeOnFail: { age: 30 * 86_400 },
    });
  });

  it('waits as docs/inbox.md says, by BullMQ’s own reckoning of the stored backoff: 30 s, 1 min, 2 min, … about 4 h 15 min', async () => {
    // The defaults of docs/inbox.md (this suite's inboxes otherwise retry after 10 ms).
    const inbox = newInbox({ attempts: 10, backoffMs: 30_000 });
    const delivery = createTestDelivery();
    await inbox.enqueue(storedOf(delivery));
    const job = (await inbox.queue.getJob(delivery.idempotencyKey))!;
    // What BullMQ computes when run n of the job fails (it passes attemptsMade + 1 = n), with no
    // custom strategy: a worker needs nothing registered.
    const backoff = job.opts.backoff;
    if (typeof backoff !== 'object') throw new Error(`a backoff BullMQ reads as fixed: ${backoff}`);
    const waits: number[] = [];
    for (let n = 1; n < job.opts.attempts!; n++) {
      waits.push((await Backoffs.calculate(backoff, n, new Error('down'), job))!);
    }
    expect(waits.slice(0, 3)).toEqual([30_000, 60_000, 120_000]);
    // 10 runs: 9 waits, each twice the one before.
    expect(waits).toHaveLength(9);
    for (const [i, wait] of waits.entries()) if (i > 0) expect(wait).toBe(2 * waits[i - 1]!);
    const total = waits.reduce((a, b) => a + b, 0);
    expect(total).toBe(15_330_000); // 4 h 15 min 30 s
  });

  it('lists every job, oldest first, however many pages they take', async () => {
    const inbox = newInbox();
    const count = 501;
    await inbox.queue.addBulk(
      Array.from({ length: count }, (_, i) => ({
        name: 'UserSignedIn',
        data: {
          body: '{}',
          signature: 'v1=00',
          event: 'UserSignedIn',
          idempotencyKey: `page-${i}`,
          receivedAt: new Date(1_700_000_000_000 + i).toISOString(),
        },
        opts: { jobId: `page-${i}` },
      })),
    );
    const jobs = await inbox.jobs({ state: 'waiting' });
    expect(jobs).toHaveLength(count);
    expect(jobs[0]?.id).toBe('page-0');
    expect(jobs[count - 1]?.id).toBe(`page-${count - 1}`);
  });
});

describe('bullmqInbox: when Redis fails', () => {
  it('answers 503 inbox_unavailable within seconds while Redis is stopped, and queues the retry once it is back', async () => {
    const server = await startRedisServer();
    cleanups.push(() => server.close());
    const connection = quietConnection(server.url, { retryStrategy: () => 50 });
    const inbox = newInbox({}, connection);
    // The store lives elsewhere: only the inbox loses its Redis here.
    const { receiver, errors } = newReceiver(inbox, { store: memoryStore() });
    const url = await serve(receiver);
    await inbox.jobs(); // connected

    await server.stop();
    const delivery = createTestDelivery();
    const startedAt = performance.now();
    const refused = await post(url, delivery);
    const elapsedMs = performance.now() - startedAt;
    expect(refused).toEqual({
      status: 503,
      body: { ok: false, outcome: 'inbox_unavailable', idempotencyKey: delivery.idempotencyKey },
    });
    expect(elapsedMs).toBeLessThan(5000);
    expect(errors.map((error) => error.code)).toEqual(['inbox_unavailable']);

    // The platform retries later; by then Redis is back (empty: nothing was acknowledged).
    await server.start();
    await eventually(() => expect(connection.status).toBe('ready'));
    expect(await inbox.jobs()).toEqual([]);
    expect((await post(url, delivery)).body).toMatchObject({ outcome: 'queued' });
    expect(await inbox.jobs()).toMatchObject([{ idempotencyKey: delivery.idempotencyKey }]);
  });

  it('answers 503 after enqueueTimeoutMs from a Redis that stops answering; the late add is the same job as the retry', async () => {
    const server = await pausableServer();
    const connection = quietConnection(server.url);
    const inbox = newInbox({ enqueueTimeoutMs: 300 }, connection);
    const { receiver } = newReceiver(inbox, { store: memoryStore() });
    const url = await serve(receiver);
    await inbox.jobs();

    server.pause();
    const delivery = createTestDelivery();
    const startedAt = performance.now();
    expect((await post(url, delivery)).body['outcome']).toBe('inbox_unavailable');
    const elapsedMs = performance.now() - startedAt;
    expect(elapsedMs).toBeGreaterThanOrEqual(290);
    expect(elapsedMs).toBeLessThan(3000);

    server.resume();
    // The add that timed out still reaches Redis once it answers again: one job...
    await eventually(async () => expect(await inbox.jobs()).toHaveLength(1));
    // ...which the platform's retry finds, instead of storing a second one.
    expect((await post(url, delivery)).body['outcome']).toBe('queued');
    expect(await inbox.jobs()).toMatchObject([{ idempotencyKey: delivery.idempotencyKey }]);
  });

  it('rejects enqueue at once while its client reconnects, however long enqueueTimeoutMs, naming the status', async () => {
    const server = await stoppableServer();
    const connection = quietConnection(server.url, { retryStrategy: () => 200 });
    const inbox = newInbox({ enqueueTimeoutMs: 60_000 }, connection);
    await inbox.jobs(); // connected
    await server.stop();
    await eventually(() => expect(connection.status).toBe('reconnecting'));
    // An add queued for the reconnection would wait the whole minute (past the test's timeout).
    const failure = await failureOf(inbox.enqueue(storedOf(createTestDelivery())));
    expect(failure.message).toBe(
      'the Redis client of the inbox is not ready (status: reconnecting)',
    );
  });

  it('rejects enqueue with how long it waited when Redis stops answering', async () => {
    const server = await pausableServer();
    const connection = quietConnection(server.url);
    const inbox = newInbox({ enqueueTimeoutMs: 300 }, connection);
    await inbox.jobs(); // connected
    server.pause();
    const failure = await failureOf(inbox.enqueue(storedOf(createTestDelivery())));
    expect(failure.message).toBe('Redis did not store the job within 300 ms');
    server.resume();
  });

  it('makes and closes its own client from a redis:// URL', async () => {
    const inbox = newInbox({}, redis.url);
    const delivery = createTestDelivery();
    await inbox.enqueue({
      body: delivery.body,
      signature: delivery.headers['signature']!,
      event: 'UserSignedIn',
      idempotencyKey: delivery.idempotencyKey,
      receivedAt: new Date().toISOString(),
    });
    expect(await inbox.jobs({ state: 'waiting' })).toHaveLength(1);
    await inbox.queue.obliterate({ force: true });
    // The client the inbox made, which BullMQ's queue shares.
    const own = inbox.queue.opts.connection as Redis;
    expect(own.status).toBe('ready');
    await inbox.close();
    await vi.waitFor(() => expect(own.status).toBe('end'));
  });
});

describe('bullmqInbox: jobs as BullMQ holds them', () => {
  it("keeps its jobs under BullMQ's default prefix 'bull' when none is given", async () => {
    const queueName = `inbox-${randomUUID()}`;
    const inbox = bullmqInbox({ connection: client, queueName });
    cleanups.push(async () => {
      await inbox.queue.obliterate({ force: true }).catch(() => {});
      await inbox.close();
    });
    const delivery = createTestDelivery();
    await inbox.enqueue(storedOf(delivery));
    expect(await client.exists(`bull:${queueName}:${delivery.idempotencyKey}`)).toBe(1);
  });

  it('shows no job that is in none of the states an inbox lists', async () => {
    const inbox = newInbox();
    const delivery = createTestDelivery();
    await inbox.enqueue(storedOf(delivery));
    // The job's hash is still there, but in no list (half removed, as by a crash mid-removal).
    const waitKey = `test-bull-${run}:${inbox.queue.name}:wait`;
    expect(await client.lrem(waitKey, 0, delivery.idempotencyKey)).toBe(1);
    expect(await inbox.queue.getJobState(delivery.idempotencyKey)).toBe('unknown');
    expect(await inbox.getJob(delivery.idempotencyKey)).toBeUndefined();
  });

  it('lists a job stored by another producer, without delivery data, by its name and timestamp', async () => {
    const inbox = newInbox();
    await inbox.queue.add('Foreign', null as unknown as StoredDelivery, { jobId: 'foreign-1' });
    const job = await inbox.queue.getJob('foreign-1');
    expect(job?.data).toBeNull();
    expect(await inbox.jobs()).toEqual([
      {
        id: 'foreign-1',
        event: 'Foreign',
        idempotencyKey: '',
        state: 'waiting',
        attemptsMade: 0,
        receivedAt: new Date(job!.timestamp).toISOString(),
      },
    ]);
  });
  it('skips a job id left in a list without its job, as a removal half done leaves it', async () => {
    const inbox = newInbox();
    const delivery = createTestDelivery();
    await inbox.enqueue(storedOf(delivery));
    await client.rpush(`test-bull-${run}:${inbox.queue.name}:wait`, 'ghost');
    expect((await inbox.jobs()).map((job) => job.id)).toEqual([delivery.idempotencyKey]);
  });

  it('shows a job waiting for children (a flow of another producer) as waiting', async () => {
    const inbox = newInbox();
    const childQueue = `${inbox.queue.name}-children`;
    const flows = new FlowProducer({ connection: client, prefix: `test-bull-${run}` });
    cleanups.push(async () => {
      const children = new Queue(childQueue, { connection: client, prefix: `test-bull-${run}` });
      await children.obliterate({ force: true }).catch(() => {});
      await children.close();
      await flows.close();
    });
    const delivery = createTestDelivery();
    await flows.add({
      name: 'UserSignedIn',
      queueName: inbox.queue.name,
      data: storedOf(delivery),
      opts: { jobId: delivery.idempotencyKey },
      children: [{ name: 'child', queueName: childQueue, data: {} }],
    });
    expect(await inbox.queue.getJobState(delivery.idempotencyKey)).toBe('waiting-children');
    expect(await inbox.getJob(delivery.idempotencyKey)).toMatchObject({ state: 'waiting' });
  });

  it('shows an outcome only for a job completed with one', async () => {
    const inbox = newInbox();
    const waiting = createTestDelivery();
    await inbox.enqueue(storedOf(waiting));
    expect(await inbox.getJob(waiting.idempotencyKey)).not.toHaveProperty('outcome');
    // Completed by another worker, with a return value that is no outcome.
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    cleanups.push(async () => connection.disconnect());
    const other = new Worker(inbox.queue.name, async () => ({ rows: 1 }), {
      connection,
      prefix: `test-bull-${run}`,
    });
    cleanups.push(() => other.close());
    await eventually(async () =>
      expect(await inbox.getJob(waiting.idempotencyKey)).toMatchObject({ state: 'completed' }),
    );
    expect(await inbox.getJob(waiting.idempotencyKey)).not.toHaveProperty('outcome');
  });
});

describe('bullmqInbox: dead letters and workers', () => {
  it('close() closes the workers still open: none of them is left connected to the queue', async () => {
    const inbox = newInbox();
    const { receiver } = newReceiver(inbox);
    inbox.work(receiver);
    inbox.work(receiver, { concurrency: 2 });
    // Another view of the same queue, to count its workers once the inbox is closed.
    const watcher = new Queue(inbox.queue.name, { connection: client, prefix: `test-bull-${run}` });
    cleanups.push(() => watcher.close());
    await eventually(async () => expect(await watcher.getWorkersCount()).toBeGreaterThanOrEqual(2));
    await inbox.close();
    await eventually(async () => expect(await watcher.getWorkersCount()).toBe(0));
  });

  it("a worker's close() closes its BullMQ worker, once however often it is called", async () => {
    const inbox = newInbox();
    const { receiver } = newReceiver(inbox);
    const worker = inbox.work(receiver);
    await eventually(async () => expect(await inbox.queue.getWorkersCount()).toBeGreaterThan(0));
    const closing = worker.close();
    expect(worker.close()).toBe(closing);
    await closing;
    await eventually(async () => expect(await inbox.queue.getWorkersCount()).toBe(0));
  });

  it("a worker's close() leaves none of its connections open", async () => {
    // A Redis of its own, so the connections counted are this test's only.
    const server = await startRedisServer();
    cleanups.push(() => server.close());
    const connection = new Redis(server.url);
    cleanups.push(async () => connection.disconnect());
    const connections = async () =>
      String(await connection.client('LIST'))
        .trim()
        .split('\n').length;
    const inbox = newInbox({}, connection);
    const { receiver } = newReceiver(inbox, { store: memoryStore() });
    await inbox.jobs(); // connected
    const before = await connections();
    const worker = inbox.work(receiver);
    await eventually(async () => expect(await connections()).toBeGreaterThan(before));
    await worker.close();
    await eventually(async () => expect(await connections()).toBe(before));
  });

  it('stops the client it made from reconnecting when QUIT cannot be sent', async () => {
    const server = await startRedisServer();
    cleanups.push(() => server.close());
    // Without an offline queue, QUIT to a Redis that is gone fails at once.
    const options = { port: server.port, enableOfflineQueue: false, retryStrategy: () => 20 };
    const inbox = bullmqInbox({ connection: options, queueName: `inbox-${randomUUID()}` });
    const own = inbox.queue.opts.connection as Redis;
    let attempts = 0;
    own.on('reconnecting', () => attempts++);
    await inbox.jobs(); // connected
    await server.stop();
    await eventually(() => expect(attempts).toBeGreaterThan(1));
    await inbox.close();
    const attemptsAtClose = attempts;
    // Every 20 ms before; none once closed (a client left reconnecting would go on for ever).
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(attempts).toBe(attemptsAtClose);
  });

  it('holds a running job’s lock for lockDurationMs, not BullMQ’s 30 s', async () => {
    const inbox = newInbox();
    const { receiver } = newReceiver(inbox);
    const lockTtls: number[] = [];
    const lockKey = (id: string) => `test-bull-${run}:${inbox.queue.name}:${id}:lock`;
    receiver.on('UserSignedIn', async (event) => {
      lockTtls.push(await client.pttl(lockKey(event.idempotencyKey)));
    });
    const worker = inbox.work(receiver, { lockDurationMs: 4000 });
    cleanups.push(() => worker.close());
    await inbox.enqueue(storedOf(createTestDelivery()));
    await eventually(() => expect(lockTtls).toHaveLength(1));
    expect(lockTtls[0]).toBeGreaterThan(0);
    expect(lockTtls[0]).toBeLessThanOrEqual(4000);
  });

  it('runs again, within stalledIntervalMs, a job whose worker died holding it', async () => {
    const inbox = newInbox();
    const { receiver } = newReceiver(inbox);
    const effects: string[] = [];
    receiver.on('UserSignedIn', (event) => {
      effects.push(event.idempotencyKey);
    });
    const delivery = createTestDelivery();
    await inbox.enqueue(storedOf(delivery));
    // A worker that takes the job and dies with it: its lock, 2 s long, is never renewed.
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    cleanups.push(async () => connection.disconnect());
    const taken = deferred();
    const dying = new Worker(
      inbox.queue.name,
      () => {
        taken.resolve();
        return new Promise<never>(() => {});
      },
      { connection, prefix: `test-bull-${run}`, lockDuration: 2000, stalledInterval: 50 },
    );
    await taken.promise;
    await dying.close(true);
    expect(await inbox.jobs({ state: 'active' })).toHaveLength(1);

    // BullMQ's 30 s between stalled checks would leave it active far longer than this waits.
    const worker = inbox.work(receiver, { stalledIntervalMs: 200 });
    cleanups.push(() => worker.close());
    await eventually(() => expect(effects).toEqual([delivery.idempotencyKey]), 15_000);
  });
  it.each([
    ['with its delay', { type: BACKOFF_STRATEGY, delay: 60_000 }, 10],
    [
      'without a delay: the backoffMs of the inbox that runs it',
      { type: BACKOFF_STRATEGY },
      60_000,
    ],
  ])(
    'retries a job an earlier version stored with its own backoff type, %s',
    async (_, backoff, backoffMs) => {
      const inbox = newInbox({ backoffMs });
      const { receiver } = newReceiver(inbox);
      receiver.on('UserSignedIn', () => {
        throw new Error('CRM is down');
      });
      const delivery = createTestDelivery();
      // As earlier versions stored it: the custom type 'schoolhooks', which no worker registers now.
      await inbox.queue.add('UserSignedIn', storedOf(delivery), {
        jobId: delivery.idempotencyKey,
        attempts: 3,
        backoff,
      });
      const failedAt = Date.now();
      const worker = inbox.work(receiver);
      cleanups.push(() => worker.close());
      await eventually(async () => expect(await inbox.jobs({ state: 'delayed' })).toHaveLength(1));
      const job = await inbox.queue.getJob(delivery.idempotencyKey);
      expect(job?.delay).toBe(60_000);
      // Its next run is a minute away, not now (a delay BullMQ could not read runs it at once).
      const score = Number(
        await client.zscore(
          `test-bull-${run}:${inbox.queue.name}:delayed`,
          delivery.idempotencyKey,
        ),
      );
      expect(Math.floor(score / 0x1000)).toBeGreaterThanOrEqual(failedAt + 59_000);
    },
  );

  it('retryJob is false for a job that is no dead letter, and for no job', async () => {
    const inbox = newInbox();
    const delivery = createTestDelivery();
    await inbox.enqueue(storedOf(delivery));
    expect(await inbox.retryJob(delivery.idempotencyKey)).toBe(false);
    expect(await inbox.retryJob('no-such-key')).toBe(false);
    expect(await inbox.jobs()).toMatchObject([{ state: 'waiting' }]);
  });

  it('retries a job after the backoff it was stored with, whichever inbox’s worker runs it', async () => {
    const queueName = `inbox-${randomUUID()}`;
    // The web process's inbox stores it with a minute; the worker's inbox says 10 ms.
    const web = newInbox({ queueName, backoffMs: 60_000 });
    const workers = newInbox({ queueName, backoffMs: 10 });
    const { receiver } = newReceiver(workers);
    receiver.on('UserSignedIn', () => {
      throw new Error('CRM is down');
    });
    const delivery = createTestDelivery();
    await web.enqueue(storedOf(delivery));
    const worker = workers.work(receiver);
    cleanups.push(() => worker.close());
    await eventually(async () => expect(await web.jobs({ state: 'delayed' })).toHaveLength(1));
    expect((await web.queue.getJob(delivery.idempotencyKey))?.delay).toBe(60_000);
  });
});

describe('bullmqInbox: finding a job by its key, and the runs a job was stored with', () => {
  it("getJob with { tenant } finds the tenant's job, never the untenanted job of the same key", async () => {
    const inbox = newInbox();
    const delivery = createTestDelivery();
    const key = delivery.idempotencyKey;
    // The untenanted job first: a lookup by the bare key would find it.
    await inbox.enqueue(storedOf(delivery));
    await inbox.enqueue({ ...storedOf(delivery), tenant: 'school-a' });
    expect(await inbox.getJob(key, { tenant: 'school-a' })).toMatchObject({
      idempotencyKey: key,
      tenant: 'school-a',
    });
    expect(await inbox.getJob(key)).not.toHaveProperty('tenant');
    expect(await inbox.getJob(key, { tenant: 'school-b' })).toBeUndefined();
  });

  it('never finds by a key with a lone surrogate the job of the key Redis would receive instead (U+FFFD)', async () => {
    const inbox = newInbox();
    const delivery = createTestDelivery();
    await inbox.enqueue({ ...storedOf(delivery), idempotencyKey: '\uFFFD' });
    expect(await inbox.getJob('\uFFFD')).toMatchObject({ idempotencyKey: '\uFFFD' });
    // ioredis sends a lone surrogate as U+FFFD: looked up as sent, it would find that job.
    expect(await inbox.getJob('\uD800')).toBeUndefined();
    expect(await inbox.retryJob('\uD800')).toBe(false);
  });

  it('runs a job as many times as the inbox that stored it says, whichever inbox’s worker runs it', async () => {
    const queueName = `inbox-${randomUUID()}`;
    // The web process's inbox stores it with 3 runs; the worker's inbox would give 1.
    const web = newInbox({ queueName, attempts: 3, backoffMs: 10 });
    const workers = newInbox({ queueName, attempts: 1, backoffMs: 10 });
    const { receiver } = newReceiver(workers);
    let runs = 0;
    receiver.on('UserSignedIn', () => {
      runs++;
      throw new Error('CRM is down');
    });
    const delivery = createTestDelivery();
    await web.enqueue(storedOf(delivery));
    const worker = workers.work(receiver);
    cleanups.push(() => worker.close());
    const [dead] = await eventually(async () => {
      const failed = await web.jobs({ state: 'failed' });
      expect(failed).toHaveLength(1);
      return failed;
    });
    expect(dead).toMatchObject({ idempotencyKey: delivery.idempotencyKey, attemptsMade: 3 });
    expect(runs).toBe(3);
  });
});

describe('bullmqInbox: the logger of connection errors', () => {
  /** A logger that keeps its warnings. */
  function warningsLogger() {
    const warnings: { obj: Record<string, unknown>; msg: string | undefined }[] = [];
    const logger: Logger = {
      debug: () => {},
      info: () => {},
      warn: (obj, msg) => warnings.push({ obj, msg }),
      error: () => {},
    };
    return { logger, warnings };
  }

  // The inbox listens to the client it made, and to the queue on a client it was given.
  it.each([
    ['the client it made', (url: string) => url],
    [
      'the queue on a client it was given',
      (url: string) => quietConnection(url, { retryStrategy: () => 50 }),
    ],
  ])('logs the errors of %s, with the queue’s name', async (_, connectionTo) => {
    const server = await stoppableServer();
    const { logger, warnings } = warningsLogger();
    const inbox = newInbox({ logger }, connectionTo(server.url));
    await inbox.jobs(); // connected
    expect(warnings).toEqual([]);
    await server.stop();
    await eventually(() => expect(warnings.length).toBeGreaterThan(0));
    expect(warnings[0]).toEqual({
      obj: { err: expect.stringMatching(/\S/), queue: inbox.queue.name },
      msg: 'inbox connection error',
    });
  });

  it('logs the errors of its workers', async () => {
    const { logger, warnings } = warningsLogger();
    const inbox = newInbox({ logger });
    const { receiver } = newReceiver(inbox);
    // The job's lock lost while it runs (as when Redis dropped it): BullMQ's worker cannot
    // complete the job, and says so as an error of the worker (not of the queue).
    receiver.on('UserSignedIn', async (event) => {
      await client.del(`test-bull-${run}:${inbox.queue.name}:${event.idempotencyKey}:lock`);
    });
    const delivery = createTestDelivery();
    await inbox.enqueue(storedOf(delivery));
    const worker = inbox.work(receiver);
    cleanups.push(() => worker.close());
    await eventually(() => expect(warnings.length).toBeGreaterThan(0));
    expect(warnings[0]).toEqual({
      obj: {
        err: expect.stringContaining(`Missing lock for job ${delivery.idempotencyKey}`),
        queue: inbox.queue.name,
      },
      msg: 'inbox connection error',
    });
  });

  it('without a logger, a connection error reaches the queue’s other listeners, nothing thrown', async () => {
    const server = await stoppableServer();
    const connection = quietConnection(server.url, { retryStrategy: () => 50 });
    const inbox = newInbox({}, connection);
    // Listening after the inbox: a listener of the inbox's that threw would stop the emit first.
    let queueErrors = 0;
    inbox.queue.on('error', () => queueErrors++);
    await inbox.jobs(); // connected
    await server.stop();
    await eventually(() => expect(queueErrors).toBeGreaterThan(0));
  });
});

describe('bullmqInbox on a Redis Cluster', () => {
  it('runs its jobs with workers on connections copied from the Cluster, its redisOptions kept', async () => {
    const cluster = await startRedisCluster();
    cleanups.push(() => cluster.stop());
    // Every node asks for a password: a worker connection that lost the Cluster's
    // redisOptions could not even read the queue.
    const password = `test-${randomUUID()}`;
    for (const { host, port } of cluster.nodes) {
      const node = new Redis(port, host);
      await node.config('SET', 'requirepass', password);
      node.disconnect();
    }
    // A client for commands may keep any ioredis option; the workers' copies are made blocking.
    const connection = new Cluster([...cluster.nodes], {
      redisOptions: { password, maxRetriesPerRequest: 1 },
    });
    connection.on('error', () => {});
    cleanups.push(async () => connection.disconnect());
    // On a Cluster, BullMQ's keys of one queue share a slot through a hash tag.
    const inbox = bullmqInbox({ connection, queueName: 'cluster-inbox', prefix: '{bull}' });
    cleanups.push(() => inbox.close());
    const { receiver } = newReceiver(inbox, { store: memoryStore() });
    const effects: string[] = [];
    receiver.on('UserSignedIn', (event) => {
      effects.push(event.idempotencyKey);
    });
    const delivery = createTestDelivery();
    await inbox.enqueue(storedOf(delivery));
    const worker = inbox.work(receiver);
    cleanups.push(() => worker.close());
    await eventually(() => expect(effects).toEqual([delivery.idempotencyKey]), 15_000);
    await eventually(async () =>
      expect(await inbox.getJob(delivery.idempotencyKey)).toMatchObject({ state: 'completed' }),
    );
  });
});
