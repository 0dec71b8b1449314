/**
 * `schoolhooks reconcile --dry-run` (the built bin, spawned as a cron job would) over 10 000 paid
 * invoices that no delivery recorded, on a Postgres table, beside a recovery run of the library
 * over the same list and table: the dry run reads a page at a time (one `peek` a page), so it
 * should take no longer than a real run, which also handles and records each invoice.
 *
 * Run: `npm run build && npx tsx bench/reconcile-cli-dry-run.ts` (`DATABASE_URL`, default
 * postgres://postgres@127.0.0.1:5432/test).
 * @module
 */

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { createSchoolApi } from '../src/api/index.js';
import { createReconciler } from '../src/reconcile/index.js';
import { postgresStore, postgresStoreSql } from '../src/stores/postgres.js';
import { createMockSchoolApi } from '../src/testing/mock-school-api.js';
import { paidInvoicesOverADay } from './paid-invoices.js';

const INVOICES = 10_000;
const NOW = Date.now();
const API_KEY = 'sk_bench_cli_dry_run';
const DATABASE_URL = process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

const mock = await createMockSchoolApi({
  apiKey: API_KEY,
  sellerId: 1,
  schoolId: 1,
  lists: {
    invoices: paidInvoicesOverADay(INVOICES, NOW),
  },
});
const table = `bench_cli_dry_run_${Math.random().toString(36).slice(2, 8)}`;
const pool = new pg.Pool({ connectionString: DATABASE_URL });
await pool.query(postgresStoreSql({ table }));

try {
  const started = performance.now();
  const args = ['reconcile', '--dry-run', '--store', DATABASE_URL, '--table', table];
  const run = await promisify(execFile)(
    process.execPath,
    [
      'dist/cli.js',
      ...args,
      '--api-url',
      mock.url,
      '--since',
      '48h',
      '--kinds',
      'invoice',
      '--json',
    ],
    {
      env: { ...process.env, SCHOOL_API_KEY: API_KEY, SCHOOL_SELLER_ID: '1', SCHOOL_ID: '1' },
      maxBuffer: 1 << 30,
    },
  ).catch((error: { stdout: string; code: number }) => error);
  const seconds = (performance.now() - started) / 1000;
  const { missing } = JSON.parse(run.stdout) as { missing: unknown[] };
  console.log(`cli dry run: ${missing.length} missing in ${seconds.toFixed(2)} s`);

  const api = createSchoolApi({ baseUrl: mock.url, apiKey: API_KEY, sellerId: 1, schoolId: 1 });
  const reconciler = createReconciler({ api, store: postgresStore({ pool, table }) });
  reconciler.on('invoice', async () => {});
  const recovery = performance.now();
  const report = await reconciler.run({ since: '48h', kinds: ['invoice'] });
  const recoverySeconds = (performance.now() - recovery) / 1000;
  console.log(
    `library recovery run: ${report.recovered} recovered in ${recoverySeconds.toFixed(2)} s`,
  );
  console.log(`dry run / recovery run: ${(seconds / recoverySeconds).toFixed(2)} (goal at most 2)`);
} finally {
  await pool.query(`DROP TABLE IF EXISTS ${table}, ${table}_entities, ${table}_watch`);
  await pool.end();
  await mock.close();
}
