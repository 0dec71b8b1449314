/**
 * Reconcile runs over 10 000 paid invoices served by `createMockSchoolApi` over loopback HTTP, on
 * memoryStore, redisStore (`REDIS_URL`, default redis://127.0.0.1:6379) and postgresStore
 * (`DATABASE_URL`, default postgres://postgres@127.0.0.1:5432/test; left out with a note when
 * neither answers): for each store a dry run, a run that recovers all of them (every invoice
 * missing: its handler grants, on Postgres through `ctx.transaction`), and a second run that finds
 * every one handled. Entities per second, this process's CPU per entity (the mock API's serving
 * included: it runs here), and the peak of the process's heap and RSS.
 *
 * Beside them, in the same process, the same recovery written by hand on Postgres, the loop a
 * seller writes without the library: the list read page by page with fetch (by `skip`, 1 000 a
 * page), then for each invoice `INSERT … ON CONFLICT DO NOTHING` into a table of its own and, when
 * the row is new, the grant. Two forms: as one transaction per invoice (BEGIN, insert, grant,
 * COMMIT: a crash never leaves a recorded invoice ungranted, what the library's recovery
 * guarantees too), and without a transaction (fewer round trips; a crash between the two leaves
 * the invoice recorded and never granted).
 *
 * `RECONCILE_BENCH_ROUNDS=3` measures the library's Postgres runs and the hand-written loop with
 * a transaction per invoice 3 times each, on fresh tables, taking turns (the order flips every
 * round), and prints the ratio of their recovery rates in each round and its median: on a shared
 * host whose speed drifts within a minute, a ratio of two figures taken seconds apart says more
 * than two figures taken a minute apart. `RECONCILE_BENCH_STORES=postgres` leaves out
 * memoryStore and redisStore.
 *
 * Run: `node --expose-gc --import tsx bench/reconcile-run.ts`
 * @module
 */

import process from 'node:process';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createSchoolApi } from '../src/api/index.js';
import { createReconciler, type ReconcileRunOptions } from '../src/reconcile/index.js';
import { memoryStore } from '../src/stores/memory.js';
import { postgresStore } from '../src/stores/postgres.js';
import { redisStore } from '../src/stores/redis.js';
import type { IdempotencyStore } from '../src/stores/types.js';
import { createMockSchoolApi } from '../src/testing/mock-school-api.js';
import { randomTag } from './bodies.js';
import { paidInvoicePages, paidInvoicesOverADay } from './paid-invoices.js';

const INVOICES = 10_000;
const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const API_KEY = 'sk_bench_reconcile';
const ROUNDS = Math.max(1, Number(process.env.RECONCILE_BENCH_ROUNDS ?? 1) || 1);
const STORES = (process.env.RECONCILE_BENCH_STORES ?? 'memory,redis,postgres').split(',');

/** The peak of the heap and the RSS since the last reset, sampled every 20 ms. */
class PeakMemory {
  heap = 0;
  rss = 0;
  readonly #timer = setInterval(() => this.sample(), 20);

  sample(): void {
    const { heapUsed, rss } = process.memoryUsage();
    this.heap = Math.max(this.heap, heapUsed);
    this.rss = Math.max(this.rss, rss);
  }

  reset(): void {
    (globalThis as { gc?: () => void }).gc?.();
    this.heap = 0;
    this.rss = 0;
    this.sample();
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

const peak = new PeakMemory();
const mib = (bytes: number) => `${(bytes / 1_048_576).toFixed(0)} MiB`;

// 10 000 invoices issued over a day, 30 hours to 6 hours before NOW: all inside a run's window.
const mock = await createMockSchoolApi({
  apiKey: API_KEY,
  lists: {
    invoices: paidInvoicesOverADay(INVOICES, NOW),
  },
});
const api = createSchoolApi({ baseUrl: mock.url, apiKey: API_KEY, sellerId: 1, schoolId: 1 });

/** One timed line: entities per second and the peaks; resolves to the entities per second. */
async function timed(label: string, work: () => Promise<string>): Promise<number> {
  const requestsBefore = mock.requests.length;
  peak.reset();
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const detail = await work();
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  peak.sample();
  const requests = mock.requests.length - requestsBefore;
  console.log(
    `  ${label}: ${INVOICES} invoices in ${seconds.toFixed(2)} s, ${Math.round(INVOICES / seconds)}/s, ` +
      `${Math.round((cpu.user + cpu.system) / INVOICES)} µs of this process's CPU each (the mock ` +
      `API's included), ${requests} list requests; ${detail}; peak heap ${mib(peak.heap)}, ` +
      `RSS ${mib(peak.rss)}`,
  );
  return INVOICES / seconds;
}

/**
 * The three runs of the library on `store`; `grant` is what the invoice handler does. Resolves
 * to the recovery's entities per second.
 */
async function library(
  name: string,
  store: IdempotencyStore,
  grant: (invoiceId: number, ctx: { transaction: unknown }) => Promise<unknown> | void,
): Promise<number> {
  let granted = 0;
  const reconciler = createReconciler({ api, store, now: () => NOW }).on(
    'invoice',
    async (invoice, ctx) => {
      granted++;
      await grant(invoice.invoiceId, ctx);
    },
  );
  const run = (options: Partial<ReconcileRunOptions>) => async () => {
    const report = await reconciler.run({ since: '48h', kinds: ['invoice'], ...options });
    if (!report.complete) throw new Error(`${name}: a run left ${JSON.stringify(report)}`);
    return `recovered ${report.recovered}, handled ${report.handled}, missing ${report.missing.length}`;
  };
  console.log(`${name}:`);
  await timed('dry run (every invoice missing)', run({ dryRun: true }));
  const rate = await timed('recovery (every invoice missing)', run({}));
  await timed('second run (every invoice handled)', run({}));
  if (granted !== INVOICES) throw new Error(`${name}: the handler ran ${granted} times`);
  return rate;
}

/** The recovery written by hand on Postgres: `transactions` per invoice, or none. */
async function byHand(pool: pg.Pool, records: string, grants: string, transactions: boolean) {
  let granted = 0;
  const client = await pool.connect();
  try {
    for await (const items of paidInvoicePages(mock.url, API_KEY, NOW)) {
      for (const { invoiceId } of items) {
        if (transactions) await client.query('BEGIN');
        const inserted = await client.query(
          `INSERT INTO ${records} (invoice) VALUES ($1) ON CONFLICT DO NOTHING`,
          [invoiceId],
        );
        if (inserted.rowCount === 1) {
          granted++;
          await client.query(`INSERT INTO ${grants} (invoice) VALUES ($1)`, [invoiceId]);
        }
        if (transactions) await client.query('COMMIT');
      }
    }
  } finally {
    client.release();
  }
  return granted;
}

async function onPostgres(): Promise<void> {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pool.on('error', () => {});
  try {
    await pool.query('SELECT 1');
  } catch {
    console.log(`postgresStore: left out, nothing answers at ${url.replace(/\/\/[^@]*@/, '//')}`);
    await pool.end();
    return;
  }
  const created: string[] = [];
  /** The library's three runs on fresh tables; its recovery's entities per second. */
  const libraryRound = async () => {
    const tag = randomTag().slice(0, 8);
    const tables = [`bench_rc_${tag}`, `bench_rc_${tag}_entities`, `bench_rc_${tag}_watch`];
    const grants = `bench_grants_${tag}`;
    created.push(...tables, grants);
    await pool.query(`CREATE TABLE ${grants} (invoice int)`);
    return library('postgresStore', postgresStore({ pool, table: tables[0]! }), (id, ctx) =>
      (ctx.transaction as pg.PoolClient).query(`INSERT INTO ${grants} (invoice) VALUES ($1)`, [id]),
    );
  };
  /** The hand-written loop's two runs on fresh tables; its recovery's entities per second. */
  const handRound = async (transactions: boolean) => {
    const tag = randomTag().slice(0, 8);
    const hand = [`bench_hand_${tag}`, `bench_hand_grants_${tag}`];
    created.push(...hand);
    await pool.query(`CREATE TABLE ${hand[0]} (invoice int PRIMARY KEY)`);
    await pool.query(`CREATE TABLE ${hand[1]} (invoice int)`);
    const label = transactions
      ? 'by hand, a transaction per invoice'
      : 'by hand, no transaction (a crash between insert and grant loses the grant)';
    console.log(`${label}:`);
    const rate = await timed('recovery (every invoice missing)', async () => {
      const granted = await byHand(pool, hand[0]!, hand[1]!, transactions);
      return `granted ${granted}`;
    });
    await timed('second run (every invoice handled)', async () => {
      const granted = await byHand(pool, hand[0]!, hand[1]!, transactions);
      return `granted ${granted}`;
    });
    return rate;
  };
  try {
    const ratios: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      if (ROUNDS > 1) console.log(`round ${round} of ${ROUNDS}:`);
      let libraryRate: number;
      let handRate: number;
      if (round % 2 === 1) {
        libraryRate = await libraryRound();
        handRate = await handRound(true);
      } else {
        handRate = await handRound(true);
        libraryRate = await libraryRound();
      }
      ratios.push(libraryRate / handRate);
      console.log(
        `  recovery, library / by hand with a transaction per invoice: ` +
          `${Math.round(libraryRate)} / ${Math.round(handRate)} = ${(libraryRate / handRate).toFixed(2)}`,
      );
    }
    if (ROUNDS > 1) {
      const sorted = [...ratios].sort((a, b) => a - b);
      console.log(
        `recovery on Postgres, library / by hand: median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)} ` +
          `(${sorted[0]!.toFixed(2)}–${sorted[sorted.length - 1]!.toFixed(2)}) over ${ROUNDS} rounds`,
      );
    }
    await handRound(false);
  } finally {
    await pool.query(`DROP TABLE IF EXISTS ${created.join(', ')}`).catch(() => {});
    await pool.end();
  }
}

async function onRedis(): Promise<void> {
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch {
    console.log(`redisStore: left out, nothing answers at ${url}`);
    client.disconnect();
    return;
  }
  const prefix = `schoolhooks-bench-reconcile:${randomTag()}:`;
  try {
    await library('redisStore', redisStore({ client, prefix }), () => {});
  } finally {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await client.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    client.disconnect();
  }
}

if (STORES.includes('memory')) await library('memoryStore', memoryStore(), () => {});
if (STORES.includes('redis')) await onRedis();
if (STORES.includes('postgres')) await onPostgres();
peak.stop();
await mock.close();
