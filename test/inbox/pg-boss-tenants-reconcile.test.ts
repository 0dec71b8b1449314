/**
 * A reconciler of 50 schools on one pgBossInbox (real PostgreSQL and pg-boss, a postgresStore),
 * scheduled by two worker processes: one job per tick, runs that never overlap, one school at a
 * time across both processes, each school's missing invoices recovered once
 * (test/inbox/tenants-reconcile.ts), and each run's job keeps the summed counts and how many
 * schools it read.
 */

import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { postgresStore } from '../../src/stores/postgres.js';
import { uniqueTable, usePostgresPool } from '../helpers/postgres.js';
import { runTenantsScenario, SCHOOLS } from './tenants-reconcile.js';

const database = usePostgresPool('sh_tenants', 4);

it(`runs a reconciler of ${SCHOOLS} schools on one pgBossInbox in two processes: one job a tick, one school at a time`, async () => {
  const { pool } = database;
  const table = database.table();
  const schema = uniqueTable('pgb_tenants');
  const queue = `tenants-${randomUUID().slice(0, 8)}`;
  try {
    const store = postgresStore({ pool, table });
    const scenario = await runTenantsScenario(store, {
      INBOX: 'pg-boss',
      DATABASE_URL: database.url,
      SCHEMA: schema,
      TABLE: table,
      QUEUE: queue,
    });

    // Each run is one job of the reconcile queue (one a tick), completed with the counts over
    // every school.
    const { rows } = await pool.query<{ data: { tick: number }; output: Record<string, unknown> }>(
      `SELECT data, output FROM "${schema}".job WHERE name = $1 AND state = 'completed' ORDER BY created_on`,
      [`${queue}.reconcile`],
    );
    const ended = scenario.runs.filter((run) => run.summary !== undefined);
    expect(rows).toHaveLength(ended.length);
    expect(new Set(rows.map((row) => row.data.tick)).size).toBe(rows.length);
    for (const { output } of rows) {
      expect(output).toMatchObject({
        checked: { invoice: 4 * SCHOOLS, access: 0, certificate: 0, user: 0 },
        missing: 0,
        failed: 0,
        complete: true,
        tenants: SCHOOLS,
        tenantsFailed: 0,
      });
    }
    expect(rows.map((row) => row.output['recovered'])).toEqual(
      ended.map((run) => run.summary!['recovered']),
    );
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  }
}, 120_000);
