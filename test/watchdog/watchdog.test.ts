/**
 * The watchdog over real HTTP (the node adapter on a loopback port), fed by the platform simulator
 * on its virtual clock: a delivery whose handler fails is `at_risk` after each attempt with the
 * attempts seen and when the platform gives it up (its first attempt and 11 + 33 + 77 + 165
 * minutes), `ok` again once a retry succeeds, `failing` after `failingAfterMs` without a 2xx
 * answer, and `disablesAt` is the last success and 14 days; the same on every store.
 */

import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { nodeListener } from '../../src/adapters/node.js';
import { createReceiver, type IdempotencyStore } from '../../src/index.js';
import { memoryStore } from '../../src/stores/memory.js';
import { postgresStore, postgresStoreSql } from '../../src/stores/postgres.js';
import { redisStore } from '../../src/stores/redis.js';
import { createPlatformSimulator, createVirtualClock, fixtures } from '../../src/testing/index.js';
import { createWatchdog } from '../../src/watchdog/index.js';
import {
  dropTables,
  uniqueTable,
  useTestPostgres,
  type TestPostgres,
} from '../helpers/postgres.js';
import { useTestRedis, type TestRedis, keysMatching } from '../helpers/redis.js';

const SECRET = 'whsec_watchdog_test_0123456789abcdef0123';
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const START = Date.parse('2026-11-20T09:00:00.000Z');
const iso = (time: number) => new Date(time).toISOString();

// One prefix and fresh tables per run, so parallel runs against a shared server never meet.
const PREFIX = `schoolhooks-test:${randomUUID()}:`;
let redis: TestRedis;
let client: Redis;
let database: TestPostgres;
let pool: pg.Pool;
const tables: string[] = [];

beforeAll(async () => {
  redis = await useTestRedis();
  client = new Redis(redis.url);
  database = await useTestPostgres();
  pool = new pg.Pool({ connectionString: database.url, max: 10 });
  pool.on('error', () => {});
}, 60_000);

afterAll(async () => {
  if (client) {
    const keys = await keysMatching(client, `${PREFIX}*`);
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
 * Each store, fresh for every test (a prefix, a table of its own, made beforehand: the clock waits
 * for the first delivery, not for a CREATE TABLE).
 */
const STORES: readonly (readonly [string, () => Promise<IdempotencyStore>])[] = [
  ['memoryStore', async () => memoryStore()],
  ['redisStore', async () => redisStore({ client, prefix: `${PREFIX}${randomUUID()}:` })],
  [
    'postgresStore',
    async () => {
      const table = uniqueTable('sh_watchdog');
      tables.push(table);
      await pool.query(postgresStoreSql({ table }));
      return postgresStore({ pool, table });
    },
  ],
];

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((r) => server.close(r))));
});

/** A receiver on `store` behind the node adapter, on the clock; its handler fails while `failing` holds an invoice. */
async function setup(store: IdempotencyStore) {
  // A delivery's round trips to Redis or Postgres may take longer than the clock's default wait
  // for real work (20 ms) on a busy machine.
  const clock = createVirtualClock({ start: START, settleMs: 1000 });
  const failing = new Set<number>();
  const receiver = createReceiver({ secret: SECRET, store, logger: false, now: () => clock.now() });
  receiver.on('PaymentCompleted', (event) => {
    if (failing.has(event.data.payment.invoice.id)) throw new Error('crm hiccup');
  });
  receiver.onError(() => {});
  const server = createServer(nodeListener(receiver));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const platform = createPlatformSimulator({
    clock,
    endpoints: [{ url, secret: SECRET, events: ['PaymentCompleted'] }],
  });
  const watchdog = createWatchdog({ receiver, now: () => clock.now() });
  const pay = (invoiceId: number) =>
    platform.send(
      'PaymentCompleted',
      fixtures.PaymentCompleted({ payment: { invoice: { id: invoiceId } } }),
    );
  return { clock, platform, watchdog, failing, pay };
}

describe.each(STORES)('the watchdog on %s', (_name, makeStore) => {
  it('says at_risk after each failed attempt, with the attempts seen and when the platform gives up', async () => {
    const { clock, watchdog, failing, pay } = await setup(await makeStore());
    expect((await watchdog.check()).status).toBe('ok');
    failing.add(877051);
    const sent = pay(877051);
    await clock.advance(0);
    let health = await watchdog.check();
    expect(health.status).toBe('at_risk');
    // The platform's last attempt comes 11 + 33 + 77 + 165 minutes after the first.
    const givesUpAt = iso(START + (11 + 33 + 77 + 165) * MINUTE);
    expect(health.atRisk).toEqual([
      {
        idempotencyKey: sent.idempotencyKey,
        event: 'PaymentCompleted',
        firstAttemptAt: iso(START),
        attemptsSeen: 1,
        givesUpAt,
      },
    ]);
    await clock.advance(11 * MINUTE);
    health = await watchdog.check();
    expect(health.atRisk).toMatchObject([
      { attemptsSeen: 2, givesUpAt, firstAttemptAt: iso(START) },
    ]);
    // Fixed before the third attempt: the retry succeeds, and nothing is at risk any more.
    failing.clear();
    await clock.advance(33 * MINUTE);
    health = await watchdog.check();
    expect(health).toMatchObject({
      status: 'ok',
      atRisk: [],
      lastSuccessAt: iso(START + 44 * MINUTE),
      disablesAt: iso(START + 44 * MINUTE + 14 * DAY),
    });
  });

  it('says failing once no answer was 2xx for failingAfterMs while attempts come in, and ok after a success', async () => {
    const { clock, watchdog, failing, pay } = await setup(await makeStore());
    pay(1);
    await clock.advance(0);
    const lastSuccessAt = iso(START);
    for (let n = 2; n <= 7; n++) {
      failing.add(n);
      pay(n);
      await clock.advance(6 * MINUTE);
    }
    // 36 minutes of failures: failing (30 min by default), the deliveries at risk listed too.
    const health = await watchdog.check();
    expect(health.status).toBe('failing');
    expect(health.lastSuccessAt).toBe(lastSuccessAt);
    expect(health.disablesAt).toBe(iso(START + 14 * DAY));
    expect(health.atRisk.length).toBeGreaterThanOrEqual(6);
    failing.clear();
    pay(100);
    await clock.advance(0);
    expect((await watchdog.check()).status).not.toBe('failing');
  });

  it('forgets a delivery whose retries are over: lost, no longer at risk', async () => {
    const { clock, watchdog, failing, pay } = await setup(await makeStore());
    failing.add(5);
    pay(5);
    await clock.runAll();
    const health = await watchdog.check();
    expect(health.atRisk).toEqual([]);
  });
});
