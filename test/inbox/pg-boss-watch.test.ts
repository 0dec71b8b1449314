/**
 * pgBossInbox's `watch` on real Postgres and real pg-boss: one job a tick on a `stately` queue
 * of its own (`<queueName>.watch`), stored under the tick's id by every process, with intervals
 * of a few hundred ms. Two inboxes on one queue stand for two processes (each makes a pg-boss
 * of its own); each test has a pg-boss schema of its own, dropped after it.
 */

import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import type { Logger } from '../../src/index.js';
import { pgBossInbox, type PgBossInbox } from '../../src/postgres.js';
import { uniqueTable, useTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { describeWatchContract, watchedReceiver } from './watch-contract.js';

let database: TestPostgres;
let pool: pg.Pool;
const cleanups: (() => Promise<unknown>)[] = [];
/** The schema of the inboxes made last. */
let schema = '';

beforeAll(async () => {
  database = await useTestPostgres();
  pool = new pg.Pool({ connectionString: database.url, max: 4 });
  pool.on('error', () => {});
}, 60_000);

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

afterAll(async () => {
  await pool?.end();
  await database?.close();
});

/** `count` inboxes on one queue of one schema, each with a pg-boss of its own. */
function inboxes(count: number, logger?: Logger): PgBossInbox[] {
  schema = uniqueTable('pgb');
  const queueName = `inbox-${randomUUID().slice(0, 8)}`;
  cleanups.push(() => pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
  return Array.from({ length: count }, () => {
    const inbox = pgBossInbox({
      connectionString: database.url,
      schema,
      queueName,
      ...(logger ? { logger } : {}),
    });
    cleanups.push(() => inbox.close());
    return inbox;
  });
}

describeWatchContract('pgBossInbox', { inboxes, processes: true, logs: true });

it('each check is a job of the watch queue that keeps the status and counts, never a key; a check that threw fails its job', async () => {
  const [inbox] = inboxes(1);
  const watched = watchedReceiver();
  watched.state.failing = true;
  const { idempotencyKey } = await watched.deliver();
  let calls = 0;
  const watchdog = {
    check: () =>
      ++calls === 2 ? Promise.reject(new Error('store down')) : watched.watchdog.check(),
  };
  const worker = inbox!.watch(watchdog, { every: 200, onAlert: () => {}, onError: () => {} });
  await vi.waitFor(() => expect(calls).toBeGreaterThanOrEqual(3), { timeout: 5000, interval: 20 });
  await worker.close();
  const { rows } = await pool.query<{ name: string; state: string; output: unknown }>(
    `SELECT name, state::text, output FROM "${schema}".job WHERE name LIKE '%.watch' ` +
      "AND state IN ('completed', 'failed') ORDER BY created_on",
  );
  expect(rows.slice(0, 2)).toEqual([
    {
      name: expect.stringMatching(/^inbox-.*\.watch$/),
      state: 'completed',
      output: {
        status: 'at_risk',
        atRisk: 1,
        silent: 0,
        alerted: true,
        lastAttemptAt: expect.any(String),
        failingSince: expect.any(String),
      },
    },
    { name: expect.stringMatching(/\.watch$/), state: 'failed', output: { reason: 'store down' } },
  ]);
  expect(JSON.stringify(rows)).not.toContain(idempotencyKey);
});

it("refuses a queueName whose '.watch' queue pg-boss would refuse", () => {
  schema = uniqueTable('pgb');
  const inbox = pgBossInbox({ connectionString: database.url, schema, queueName: 'q'.repeat(95) });
  cleanups.push(() => inbox.close());
  // pg-boss takes queue names of up to 100 characters; `.watch` adds 6.
  expect(() => inbox.watch(watchedReceiver().watchdog, { every: '5m', onAlert: () => {} })).toThrow(
    `pgBossInbox: watch's queue "<queueName>.watch" must be at most 100 characters`,
  );
});
