/**
 * Keys the platform can send that a server does not keep as they are, over real HTTP (the node
 * adapter on a loopback port, signed deliveries): idempotencyKeys that differ only by a lone
 * surrogate (`"\ud800"`, valid JSON and valid UTF-8 bytes) or by U+0000. On the Redis and the
 * Postgres store, and through the BullMQ and pg-boss inboxes, each event is processed exactly
 * once and its resend is a duplicate: none is merged with another (answered `conflict` and never
 * run), none is refused for ever (a 503 the platform retries until it gives up).
 */

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { nodeListener } from '../../adapters/node.js';
import { bullmqInbox } from '../../src/inbox/bullmq.js';
import { pgBossInbox } from '../../src/inbox/pg-boss.js';
import type { Inbox } from '../../src/inbox/types.js';
import { createReceiver, type Receiver } from '../../src/receiver.js';
import { postgresStore } from '../../src/stores/postgres.js';
import { redisStore } from '../../src/stores/redis.js';
import type { IdempotencyStore } from '../../src/stores/types.js';
import { listen, post, type AdapterServer } from '../adapters/suite.js';
import { createTestDelivery, SECRET, type Delivery } from '../helpers/deliveries.js';
import {
  dropTables,
  uniqueTable,
  useTestPostgres,
  type TestPostgres,
} from '../helpers/postgres.js';
import { useTestRedis, type TestRedis } from '../helpers/redis.js';

let redis: TestRedis;
let client: Redis;
let database: TestPostgres;
let pool: pg.Pool;
const tables: string[] = [];
const run = randomUUID();
/** What each test opened, closed after it whatever happened. */
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  redis = await useTestRedis();
  client = new Redis(redis.url);
  database = await useTestPostgres();
  pool = new pg.Pool({ connectionString: database.url, max: 10 });
  pool.on('error', () => {});
}, 60_000);

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

afterAll(async () => {
  if (client) {
    const keys = await client.keys(`keys-http-${run}*`);
    if (keys.length > 0) await client.del(...keys);
    client.disconnect();
  }
  await redis?.close();
  if (pool) {
    await dropTables(pool, tables);
    await pool.end();
  }
  await database?.close();
});

/**
 * Keys that differ only by a lone surrogate (three of them, and U+FFFD, which a client that
 * encodes them as UTF-8 puts in their place) or by U+0000.
 */
function awkwardKeys(): string[] {
  const base = `key-${randomUUID()}`;
  return [`${base}\ud800`, `${base}\udbff`, `${base}\udc00`, `${base}\ufffd`, base, `${base}\0`];
}

/** The receiver behind the node adapter, counting the runs of each idempotencyKey. */
async function serve(
  store: IdempotencyStore,
  inbox?: Inbox,
): Promise<{ server: AdapterServer; runs: Map<string, number>; receiver: Receiver }> {
  const runs = new Map<string, number>();
  const receiver = createReceiver({
    secret: SECRET,
    store,
    ...(inbox && { inbox }),
    logger: false,
  }).on('UserSignedIn', (event) => {
    runs.set(event.idempotencyKey, (runs.get(event.idempotencyKey) ?? 0) + 1);
  });
  const server = await listen(createServer(nodeListener(receiver)).listen(0, '127.0.0.1'), '/');
  cleanups.push(() => server.close());
  return { server, runs, receiver };
}

/** Each key's delivery, then each one's resend (the same signed body), as the platform sends. */
async function sendTwice(url: string, keys: readonly string[]) {
  const deliveries: Delivery[] = keys.map((idempotencyKey) =>
    createTestDelivery('UserSignedIn', { user: { id: 1 } }, { idempotencyKey }),
  );
  const first = [];
  for (const delivery of deliveries) first.push(await post(url, delivery));
  const resent = [];
  for (const delivery of deliveries) resent.push(await post(url, delivery));
  return { first, resent };
}

function redisStoreOfTest(): IdempotencyStore {
  return redisStore({ client, prefix: `keys-http-${run}:${randomUUID()}:` });
}

function postgresStoreOfTest(): IdempotencyStore {
  const table = uniqueTable('sh_keys');
  tables.push(table);
  return postgresStore({ pool, table });
}

describe.each([
  ['redisStore', redisStoreOfTest],
  ['postgresStore', postgresStoreOfTest],
])('%s over HTTP: keys that differ only by a lone surrogate or U+0000', (_name, makeStore) => {
  it('processes each event once and answers each resend duplicate', async () => {
    const { server, runs } = await serve(makeStore());
    const keys = awkwardKeys();
    const { first, resent } = await sendTwice(server.url, keys);
    // 200 processed stops the platform's retries of each; the answer names the key as sent.
    expect(first).toEqual(
      keys.map((idempotencyKey) =>
        expect.objectContaining({
          status: 200,
          body: expect.objectContaining({ outcome: 'processed', idempotencyKey }),
        }),
      ),
    );
    expect(resent).toEqual(
      keys.map(() =>
        expect.objectContaining({
          status: 200,
          body: expect.objectContaining({ outcome: 'duplicate' }),
        }),
      ),
    );
    expect([...runs.entries()].sort()).toEqual(keys.map((key) => [key, 1]).sort());
  });
});

describe('inboxes over HTTP: keys that differ only by a lone surrogate or U+0000', () => {
  /** Queued once each, resends duplicate, and every job run once by the inbox's worker. */
  async function queuesEachOnce(
    store: IdempotencyStore,
    inbox: Inbox & { work(receiver: Receiver): { close(): Promise<void> } },
  ): Promise<string[]> {
    const { server, runs, receiver } = await serve(store, inbox);
    const keys = awkwardKeys();
    const { first, resent } = await sendTwice(server.url, keys);
    // 202 queued stops the platform's retries: the job must be there, one per key.
    expect(
      first.map((answer) => [answer.status, (answer.body as { outcome: string }).outcome]),
    ).toEqual(keys.map(() => [202, 'queued']));
    expect(
      resent.map((answer) => [answer.status, (answer.body as { outcome: string }).outcome]),
    ).toEqual(keys.map(() => [200, 'duplicate']));
    const worker = inbox.work(receiver);
    cleanups.push(() => worker.close());
    await vi.waitFor(() => expect(runs.size).toBe(keys.length), { timeout: 15_000, interval: 50 });
    // Give a second run of any job the time to happen: none may.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect([...runs.entries()].sort()).toEqual(keys.map((key) => [key, 1]).sort());
    return keys;
  }

  it('bullmqInbox on redisStore: each queued once as a job of its own, and run once', async () => {
    const inbox = bullmqInbox({
      connection: client,
      queueName: `keys-${randomUUID()}`,
      prefix: `keys-http-${run}`,
      backoffMs: 10,
    });
    cleanups.push(async () => {
      await inbox.queue.obliterate({ force: true }).catch(() => {});
      await inbox.close();
    });
    const keys = await queuesEachOnce(redisStoreOfTest(), inbox);
    // Each job found by its key, holding that key as sent.
    for (const key of keys) expect((await inbox.getJob(key))?.idempotencyKey).toBe(key);
  }, 30_000);

  it('pgBossInbox on postgresStore: each queued once as a job of its own, and run once', async () => {
    const schema = uniqueTable('pgb_keys');
    cleanups.push(() => pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    const inbox = pgBossInbox({
      connectionString: database.url,
      schema,
      queueName: `keys-${randomUUID().slice(0, 8)}`,
      backoffMs: 10,
    });
    cleanups.push(() => inbox.close());
    const keys = await queuesEachOnce(postgresStoreOfTest(), inbox);
    // Each job found by its key, a job of its own (jsonb holds an awkward key's storageKey).
    const ids = await Promise.all(keys.map(async (key) => (await inbox.getJob(key))?.id));
    expect(new Set(ids).size).toBe(keys.length);
    expect(ids).not.toContain(undefined);
  }, 30_000);
});
