/**
 * The ordering guard over real HTTP (the node adapter on loopback ports, signed deliveries), on
 * memoryStore, redisStore and postgresStore, each behind two receivers that share it (on Redis
 * and Postgres, two stores of their own on one server, as two processes would be): an older
 * state of an entity than the newest processed is answered 200 superseded and runs nothing; two
 * deliveries of one entity never run at once; a state as old as the newest runs; other entities
 * and other tenants are never held back.
 */

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { nodeListener } from '../src/adapters/node.js';
import { createReceiver, type Receiver, type ReceiverOptions } from '../src/receiving/receiver.js';
import { memoryStore } from '../src/stores/memory.js';
import { postgresStore } from '../src/stores/postgres.js';
import { redisStore } from '../src/stores/redis.js';
import type { IdempotencyStore } from '../src/stores/types.js';
import { listen, post, type Answer } from './adapters/suite.js';
import { createTestDelivery, SECRET, type Delivery } from './helpers/deliveries.js';
import { deferred } from './helpers/signed.js';
import { dropTables, uniqueTable, useTestPostgres, type TestPostgres } from './helpers/postgres.js';
import { seededRandom } from './helpers/seeded-random.js';
import { keysMatching, useTestRedis, type TestRedis } from './helpers/redis.js';

let redis: TestRedis;
let clients: Redis[] = [];
let database: TestPostgres;
let pool: pg.Pool;
const tables: string[] = [];
const run = randomUUID();
/** What each test opened, closed after it whatever happened. */
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  redis = await useTestRedis();
  // Two clients: each receiver's store has its own connection, as in two processes.
  clients = [new Redis(redis.url), new Redis(redis.url)];
  database = await useTestPostgres();
  pool = new pg.Pool({ connectionString: database.url, max: 40 });
  pool.on('error', () => {});
}, 60_000);

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

afterAll(async () => {
  const [first] = clients;
  if (first) {
    const keys = await keysMatching(first, `ordering-http-${run}*`);
    if (keys.length > 0) await first.del(...keys);
  }
  for (const client of clients) client.disconnect();
  await redis?.close();
  if (pool) {
    await dropTables(pool, tables);
    await pool.end();
  }
  await database?.close();
});

/** Two stores on one backend, one per receiver: what two processes of one app would have. */
type StorePair = () => [IdempotencyStore, IdempotencyStore];

const memoryPair: StorePair = () => {
  const store = memoryStore();
  return [store, store];
};

const redisPair: StorePair = () => {
  const prefix = `ordering-http-${run}:${randomUUID()}:`;
  return [redisStore({ client: clients[0]!, prefix }), redisStore({ client: clients[1]!, prefix })];
};

const postgresPair: StorePair = () => {
  const table = uniqueTable('sh_order');
  tables.push(table);
  return [postgresStore({ pool, table }), postgresStore({ pool, table })];
};

/** What the handler saw: the states it applied, in order, and the most it ran at once. */
interface Applied {
  timestamps: string[];
  mostAtOnce: number;
}

/**
 * Two receivers behind the node adapter, on the two stores, each with one latestOnly handler of
 * CourseProgressChanged that takes `workMs` (so deliveries overlap) and records what it applied.
 * The route `/school/<tenant>` names a tenant when the secret is looked up per tenant.
 */
async function serve(
  stores: [IdempotencyStore, IdempotencyStore],
  {
    workMs = 0,
    gate,
    failing,
    options = {},
  }: {
    workMs?: number;
    gate?: Promise<void>;
    /** A state whose handler throws while this holds it. */
    failing?: Set<string>;
    options?: Partial<ReceiverOptions>;
  } = {},
): Promise<{ urls: [string, string]; applied: Applied; started: Promise<void> }> {
  const applied: Applied = { timestamps: [], mostAtOnce: 0 };
  const began = deferred();
  let running = 0;
  const urls: string[] = [];
  for (const store of stores) {
    const receiver: Receiver = createReceiver({ secret: SECRET, store, logger: false, ...options });
    receiver.on(
      'CourseProgressChanged',
      async (event) => {
        running++;
        applied.mostAtOnce = Math.max(applied.mostAtOnce, running);
        began.resolve();
        try {
          if (gate) await gate;
          if (workMs > 0) await new Promise((resolve) => setTimeout(resolve, workMs));
          if (failing?.has(event.timestamp)) throw new Error('crm hiccup');
          applied.timestamps.push(event.timestamp);
        } finally {
          running--;
        }
      },
      { latestOnly: true },
    );
    const tenant = (req: { url?: string | undefined }) => req.url?.split('/')[2];
    const listener = nodeListener(receiver, receiver.needsTenant ? { tenant } : {});
    const server = await listen(createServer(listener).listen(0, '127.0.0.1'), '');
    cleanups.push(() => server.close());
    urls.push(server.url);
  }
  return { urls: urls as [string, string], applied, started: began.promise };
}

const BASE = Date.now() - 60 * 60_000;

/** A CourseProgressChanged of one lesson (or another user's), stamped `offsetMs` after BASE. */
function progress(offsetMs: number, { user = 1937465, lessonId = 884213 } = {}): Delivery {
  const data = { user: { id: user }, course: { id: 73120 }, lessonId, status: 'OnTheory' };
  const timestamp = new Date(BASE + offsetMs).toISOString();
  return createTestDelivery('CourseProgressChanged', data, { timestamp });
}

const outcomeOf = (answer: Answer) => (answer.body as { outcome: string }).outcome;

describe.each([
  ['memoryStore', memoryPair],
  ['redisStore', redisPair],
  ['postgresStore', postgresPair],
])('%s: the ordering guard over HTTP, two receivers on one store', (_, pair) => {
  it('answers an older state than the newest processed 200 superseded, and runs nothing for it', async () => {
    const { urls, applied } = await serve(pair());
    const newer = progress(2_000);
    const older = progress(1_000);
    expect(await post(urls[0], newer)).toMatchObject({
      status: 200,
      body: { ok: true, outcome: 'processed' },
    });
    expect(await post(urls[1], older)).toMatchObject({
      status: 200,
      body: { ok: true, outcome: 'superseded', idempotencyKey: older.idempotencyKey },
    });
    // Its resend is a duplicate: the superseded delivery's key was completed.
    expect(outcomeOf(await post(urls[0], older))).toBe('duplicate');
    expect(applied.timestamps).toEqual([new Date(BASE + 2_000).toISOString()]);
  });

  it('never runs two deliveries of one entity at once: the second is 409 in_flight until the first is done', async () => {
    const gate = deferred();
    const { urls, applied, started } = await serve(pair(), { gate: gate.promise });
    const first = post(urls[0], progress(1_000));
    await started;
    const second = progress(2_000);
    expect(await post(urls[1], second)).toMatchObject({
      status: 409,
      body: { ok: false, outcome: 'in_flight' },
    });
    gate.resolve();
    expect(outcomeOf(await first)).toBe('processed');
    // The platform's retry of the second, now that the first is done: newer, so it runs.
    expect(outcomeOf(await post(urls[1], second))).toBe('processed');
    expect(applied.mostAtOnce).toBe(1);
    expect(applied.timestamps).toHaveLength(2);
  });

  it('records nothing for a state whose handler failed: an older one runs after it, and its retry runs', async () => {
    const newer = progress(2_000);
    const failing = new Set([new Date(BASE + 2_000).toISOString()]);
    const { urls, applied } = await serve(pair(), { failing });
    expect(await post(urls[0], newer)).toMatchObject({
      status: 500,
      body: { outcome: 'handler_failed' },
    });
    expect(outcomeOf(await post(urls[1], progress(1_000)))).toBe('processed');
    failing.clear();
    expect(outcomeOf(await post(urls[1], newer))).toBe('processed');
    expect(applied.timestamps.map((t) => Date.parse(t) - BASE)).toEqual([1_000, 2_000]);
  });

  it('runs a state as old as the newest processed (the same timestamp)', async () => {
    const { urls, applied } = await serve(pair());
    const [one, two] = [progress(1_000), progress(1_000)];
    expect(outcomeOf(await post(urls[0], one))).toBe('processed');
    expect(outcomeOf(await post(urls[1], two))).toBe('processed');
    expect(applied.timestamps).toHaveLength(2);
  });

  it('keeps other entities apart: never superseded, never held back by one in flight', async () => {
    const gate = deferred();
    const { urls, applied, started } = await serve(pair(), { gate: gate.promise });
    const held = post(urls[0], progress(5_000));
    await started;
    // Older than the delivery in flight, but of another lesson, course progress and user.
    const others = [
      progress(1_000, { lessonId: 1 }),
      progress(1_000, { user: 42 }),
      progress(1_000, { lessonId: 884214 }),
    ];
    const answers = others.map((delivery, i) => post(urls[i % 2]!, delivery));
    // All of them run while the first is held: each is in the handler at once with it.
    while (applied.mostAtOnce < 4) await new Promise((resolve) => setTimeout(resolve, 5));
    gate.resolve();
    expect((await Promise.all(answers)).map(outcomeOf)).toEqual(others.map(() => 'processed'));
    expect(outcomeOf(await held)).toBe('processed');
    expect(applied.timestamps).toHaveLength(4);
  });

  it('keeps the same entity under two tenants apart', async () => {
    const { urls, applied } = await serve(pair(), { options: { secret: () => SECRET } });
    const newer = progress(2_000);
    expect(outcomeOf(await post(`${urls[0]}/school/a`, newer))).toBe('processed');
    expect(outcomeOf(await post(`${urls[1]}/school/b`, progress(1_000)))).toBe('processed');
    expect(outcomeOf(await post(`${urls[1]}/school/a`, progress(1_500)))).toBe('superseded');
    expect(applied.timestamps).toHaveLength(2);
  });

  it('applies 24 states of one entity sent at once, shuffled, only forwards, ending on the newest', async () => {
    const { urls, applied } = await serve(pair(), { workMs: 5 });
    const states = Array.from({ length: 24 }, (_, i) => progress(i * 1_000));
    const random = seededRandom(36);
    const shuffled = [...states];
    for (let i = shuffled.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
    }
    // Every delivery at once, to either receiver; one answered 409 in_flight is sent again, as
    // the platform does, until it is answered 200.
    const outcomes = await Promise.all(
      shuffled.map(async (delivery, i) => {
        for (let attempt = 0; ; attempt++) {
          const answer = await post(urls[(i + attempt) % 2]!, delivery);
          if (answer.status !== 409 || attempt >= 200) return outcomeOf(answer);
          await new Promise((resolve) => setTimeout(resolve, 5 + random() * 20));
        }
      }),
    );
    expect(outcomes.filter((o) => o !== 'processed' && o !== 'superseded')).toEqual([]);
    expect(applied.mostAtOnce).toBe(1);
    const times = applied.timestamps.map((timestamp) => Date.parse(timestamp));
    // Only forwards: each state applied is newer than the one before it.
    expect(times.every((time, i) => i === 0 || time > times[i - 1]!)).toBe(true);
    expect(applied.timestamps.at(-1)).toBe(new Date(BASE + 23_000).toISOString());
    expect(outcomes.filter((o) => o === 'processed')).toHaveLength(applied.timestamps.length);
  });
});
