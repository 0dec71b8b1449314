/**
 * pgBossInbox's `watch` on real Postgres and real pg-boss: one job a tick on a `stately` queue
 * of its own (`<queueName>.watch`), stored under the tick's id by every process, with intervals
 * of a few hundred ms. Two inboxes on one queue stand for two processes (each makes a pg-boss
 * of its own); each test has a pg-boss schema of its own, dropped after it.
 */

import { expect, it, vi } from 'vitest';
import { pgBossInbox } from '../../src/postgres.js';
import { uniqueTable } from '../helpers/postgres.js';
import { usePgBossTests } from './pg-boss-tests.js';
import { describeWatchContract, watchedReceiver } from './watch-contract.js';

const scheduled = usePgBossTests();
const { cleanups, inboxes } = scheduled;

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
  const { rows } = await scheduled.pool.query<{ name: string; state: string; output: unknown }>(
    `SELECT name, state::text, output FROM "${scheduled.schema}".job WHERE name LIKE '%.watch' ` +
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
  const schema = uniqueTable('pgb');
  const inbox = pgBossInbox({
    connectionString: scheduled.database.url,
    schema,
    queueName: 'q'.repeat(95),
  });
  cleanups.push(() => inbox.close());
  // pg-boss takes queue names of up to 100 characters; `.watch` adds 6.
  expect(() => inbox.watch(watchedReceiver().watchdog, { every: '5m', onAlert: () => {} })).toThrow(
    `pgBossInbox: watch's queue "<queueName>.watch" must be at most 100 characters`,
  );
});
