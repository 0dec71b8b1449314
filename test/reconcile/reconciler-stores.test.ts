/**
 * Reconcilers on real Redis and real PostgreSQL: two runs at once over the same 300 paid invoices
 * recover each exactly once between them; on Postgres a handler writes through ctx.transaction,
 * its writes commit with the record, and a failure or a timeout rolls them back.
 */

import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SchoolApi } from '../../src/api/index.js';
import { createReconciler } from '../../src/reconcile/index.js';
import { postgresStore } from '../../src/stores/postgres.js';
import { redisStore } from '../../src/stores/redis.js';
import type { IdempotencyStore } from '../../src/stores/types.js';
import type { MockSchoolApi } from '../../src/testing/mock-school-api.js';
import {
  dropTables,
  uniqueTable,
  useTestPostgres,
  type TestPostgres,
} from '../helpers/postgres.js';
import { useTestRedis, type TestRedis } from '../helpers/redis.js';
import { counter, invoice, now, recordWebhook, startApi } from './helpers.js';

const INVOICES = Array.from({ length: 300 }, (_, index) => invoice(index + 1));

let mock: MockSchoolApi;
let api: SchoolApi;
let redis: TestRedis;
let client: Redis;
let database: TestPostgres;
let pool: pg.Pool;
const tables: string[] = [];

beforeAll(async () => {
  ({ mock, api } = await startApi({ invoices: INVOICES }));
  redis = await useTestRedis();
  client = new Redis(redis.url);
  database = await useTestPostgres();
  pool = new pg.Pool({ connectionString: database.url, max: 20 });
  pool.on('error', () => {});
}, 60_000);

afterAll(async () => {
  await mock?.close();
  client?.disconnect();
  await redis?.close();
  if (pool) {
    await dropTables(pool, tables);
    await pool.end();
  }
  await database?.close();
});

function table(prefix: string): string {
  const name = uniqueTable(prefix);
  tables.push(name);
  return name;
}

/** Two reconcilers on `store` running at once, each handler taking a turn of the event loop. */
async function twoAtOnce(store: () => IdempotencyStore): Promise<void> {
  await recordWebhook(store(), 'invoice:7');
  const handled = counter();
  const reconciler = () =>
    createReconciler({ api, store: store(), now }).on('invoice', async (item) => {
      handled.count(String(item.invoiceId));
      await new Promise((resolve) => setImmediate(resolve));
    });
  const [a, b] = await Promise.all([
    reconciler().run({ since: '1d' }),
    reconciler().run({ since: '1d' }),
  ]);
  expect(a.failed).toEqual([]);
  expect(b.failed).toEqual([]);
  expect(a.recovered + b.recovered).toBe(299);
  // They ran side by side: each took some.
  expect(Math.min(a.recovered, b.recovered)).toBeGreaterThan(0);
  expect(a.recovered + a.handled).toBe(300);
  expect(b.recovered + b.handled).toBe(300);
  expect(handled.calls.size).toBe(299);
  expect([...handled.calls.values()].every((calls) => calls === 1)).toBe(true);
  expect(handled.calls.has('7')).toBe(false);
  // And a third run finds nothing left.
  expect(await reconciler().run({ since: '1d' })).toMatchObject({ handled: 300, recovered: 0 });
}

describe('on redisStore', () => {
  it('two reconcilers at once recover each of 300 invoices exactly once', async () => {
    const prefix = `sh-reconcile-${randomUUID()}:`;
    await twoAtOnce(() => redisStore({ client, prefix }));
  }, 60_000);
});

describe('on postgresStore', () => {
  it('two reconcilers at once recover each of 300 invoices exactly once', async () => {
    const name = table('sh_reconcile');
    await twoAtOnce(() => postgresStore({ pool, table: name }));
  }, 60_000);

  it("commits a handler's writes through ctx.transaction with the record, and rolls back a failure's", async () => {
    const name = table('sh_reconcile');
    const effects = table('sh_effects');
    await pool.query(`CREATE TABLE "${effects}" (invoice int)`);
    const store = postgresStore({ pool, table: name });
    let broken = true;
    const reconciler = createReconciler({ api, store, now }).on('invoice', async (item, ctx) => {
      if (item.invoiceId > 3) return;
      await ctx.transaction!.query(`INSERT INTO "${effects}" VALUES ($1)`, [item.invoiceId]);
      if (broken && item.invoiceId === 2) throw new Error('crm hiccup');
    });
    const first = await reconciler.run({ since: '1d' });
    expect(first.failed.map(({ id, error }) => [id, error.code])).toEqual([
      ['2', 'handler_failed'],
    ]);
    const written = async () =>
      (
        await pool.query<{ invoice: number }>(`SELECT invoice FROM "${effects}" ORDER BY 1`)
      ).rows.map((row) => row.invoice);
    expect(await written()).toEqual([1, 3]);
    broken = false;
    expect(await reconciler.run({ since: '1d' })).toMatchObject({ recovered: 1, handled: 299 });
    expect(await written()).toEqual([1, 2, 3]);
  }, 60_000);

  it("abandons a timed-out handler's transaction: what it writes does not commit, and the next run recovers it", async () => {
    const name = table('sh_reconcile');
    const effects = table('sh_effects');
    await pool.query(`CREATE TABLE "${effects}" (invoice int)`);
    const store = postgresStore({ pool, table: name });
    let slow = true;
    const reconciler = createReconciler({ api, store, now, handlerTimeoutMs: 100 }).on(
      'invoice',
      async (item, ctx) => {
        if (item.invoiceId !== 5) return;
        await ctx.transaction!.query(`INSERT INTO "${effects}" VALUES ($1)`, [item.invoiceId]);
        if (slow) await new Promise((resolve) => setTimeout(resolve, 300));
      },
    );
    const first = await reconciler.run({ since: '1d' });
    expect(first.failed.map(({ id, error }) => [id, error.code])).toEqual([['5', 'timeout']]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await pool.query(`SELECT invoice FROM "${effects}"`)).rows).toEqual([]);
    slow = false;
    expect(await reconciler.run({ since: '1d' })).toMatchObject({ recovered: 1, handled: 299 });
    expect((await pool.query(`SELECT invoice FROM "${effects}"`)).rows).toEqual([{ invoice: 5 }]);
  }, 60_000);
});
