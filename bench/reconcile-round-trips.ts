/**
 * What one recovered invoice costs on Postgres, the library's recovery against the loop written by
 * hand (as in bench/reconcile-run.ts: `BEGIN`, `INSERT … ON CONFLICT DO NOTHING`, the grant,
 * `COMMIT`, on one client): per invoice, the queries sent to Postgres by kind (each one round
 * trip), this process's CPU (the in-process mock API's included) and, when the server runs on this
 * machine, the CPU of every `postgres` process (read from /proc: other sessions on the same server
 * count too). CPU per invoice holds still on a shared host where the rates do not.
 *
 * Run: `node --import tsx bench/reconcile-round-trips.ts` (`INVOICES=5000` by default; `DATABASE_URL`
 * as in reconcile-run.ts).
 * @module
 */

import process from 'node:process';
import pg from 'pg';
import { createSchoolApi } from '../src/api/index.js';
import { createReconciler } from '../src/reconcile/index.js';
import { postgresStore } from '../src/stores/postgres.js';
import { createMockSchoolApi } from '../src/testing/mock-school-api.js';
import { randomTag } from './bodies.js';
import { postgresCpuMs } from './measure.js';
import { paidInvoicePages, paidInvoicesOverADay } from './paid-invoices.js';

const INVOICES = Number(process.env.INVOICES ?? 5000);
const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const API_KEY = 'sk_bench_round_trips';
/** A query's kind: its first words, or `claim` for the store's claim (it opens with BEGIN ISOLATION). */
function kindOf(text: string): string {
  if (text.startsWith('BEGIN ISOLATION')) return 'claim (BEGIN; locks; state)';
  return text
    .split(/\s+/)
    .slice(0, 3)
    .join(' ')
    .replace(/bench_\w+/, '<table>');
}

const mock = await createMockSchoolApi({
  apiKey: API_KEY,
  lists: {
    invoices: paidInvoicesOverADay(INVOICES, NOW),
  },
});
const api = createSchoolApi({ baseUrl: mock.url, apiKey: API_KEY, sellerId: 1, schoolId: 1 });
const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const pool = new pg.Pool({ connectionString: url, max: 4 });
pool.on('error', () => {});
const queries = new Map<string, number>();
// Every client's queries counted by kind (the pool's own go through a client too).
pool.on('connect', (client) => {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args) => {
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text: string }).text;
    const kind = kindOf(text);
    queries.set(kind, (queries.get(kind) ?? 0) + 1);
    return query(...args);
  };
});

/** `work`'s cost per invoice, printed under `label`. */
async function measure(label: string, work: () => Promise<void>): Promise<void> {
  queries.clear();
  const postgresBefore = postgresCpuMs();
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const postgres = postgresCpuMs() - postgresBefore;
  const each = (n: number) => (n / INVOICES).toFixed(2);
  console.log(
    `${label}: ${Math.round(INVOICES / seconds)}/s; per invoice: this process ` +
      `${Math.round((cpu.user + cpu.system) / INVOICES)} µs of CPU, Postgres ` +
      `${Math.round((postgres * 1000) / INVOICES)} µs; queries:`,
  );
  const total = [...queries.values()].reduce((sum, n) => sum + n, 0);
  for (const [kind, n] of [...queries].sort((a, b) => b[1] - a[1])) {
    if (n >= INVOICES / 10) console.log(`  ${each(n)}  ${kind}`);
  }
  console.log(`  ${each(total)}  in all (each a round trip)`);
}

const tag = randomTag().slice(0, 8);
const tables = {
  store: `bench_rt_${tag}`,
  grants: `bench_rt_grants_${tag}`,
  hand: `bench_rt_hand_${tag}`,
  handGrants: `bench_rt_hand_grants_${tag}`,
};
try {
  await pool.query(`CREATE TABLE ${tables.grants} (invoice int)`);
  await pool.query(`CREATE TABLE ${tables.hand} (invoice int PRIMARY KEY)`);
  await pool.query(`CREATE TABLE ${tables.handGrants} (invoice int)`);
  const reconciler = createReconciler({
    api,
    store: postgresStore({ pool, table: tables.store }),
    now: () => NOW,
  }).on('invoice', async (invoice, ctx) => {
    await (ctx.transaction as pg.PoolClient).query(
      `INSERT INTO ${tables.grants} (invoice) VALUES ($1)`,
      [invoice.invoiceId],
    );
  });
  // The dry run makes the store's tables, so the recovery below is measured alone.
  await reconciler.run({ since: '48h', kinds: ['invoice'], dryRun: true });
  await measure('library', async () => {
    const report = await reconciler.run({ since: '48h', kinds: ['invoice'] });
    if (report.recovered !== INVOICES) throw new Error(`recovered ${report.recovered}`);
  });
  await measure('by hand, a transaction per invoice', async () => {
    const client = await pool.connect();
    try {
      for await (const items of paidInvoicePages(mock.url, API_KEY, NOW)) {
        for (const { invoiceId } of items) {
          await client.query('BEGIN');
          const inserted = await client.query(
            `INSERT INTO ${tables.hand} (invoice) VALUES ($1) ON CONFLICT DO NOTHING`,
            [invoiceId],
          );
          if (inserted.rowCount === 1) {
            await client.query(`INSERT INTO ${tables.handGrants} (invoice) VALUES ($1)`, [
              invoiceId,
            ]);
          }
          await client.query('COMMIT');
        }
      }
    } finally {
      client.release();
    }
  });
} finally {
  const all = [...Object.values(tables), `${tables.store}_entities`, `${tables.store}_watch`];
  await pool.query(`DROP TABLE IF EXISTS ${all.join(', ')}`).catch(() => {});
  await pool.end();
  await mock.close();
}
