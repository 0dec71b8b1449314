/**
 * pgBossInbox's `reconcile` on real Postgres and real pg-boss (no cron: one job a tick, stored
 * under the tick's id by every process, on a `stately` queue), with a fake `{ run }` and
 * intervals of a few hundred ms. Two inboxes on one queue stand for two processes (each makes a
 * pg-boss of its own); each test has a pg-boss schema of its own, dropped after it.
 */

import { randomUUID } from 'node:crypto';
import PgBoss from 'pg-boss';
import { expect, it, vi } from 'vitest';
import type { InboxWorker } from '../../src/index.js';
import { pgBossInbox, type PgBossInbox, type PgBossLike } from '../../src/postgres.js';
import { usePgBossTests } from './pg-boss-tests.js';
import { describeReconcileContract } from './reconcile-contract.js';
import { fakeReconciler, recordingLogger, reportOf } from './reconcile-fake.js';

const scheduled = usePgBossTests();
const { cleanups, inboxes } = scheduled;

describeReconcileContract('pgBossInbox', { inboxes, processes: true, logs: true });

it('each run is a job of the reconcile queue that keeps the counts; a failed one is failed', async () => {
  const [inbox] = inboxes(1);
  const reconciler = fakeReconciler({ fails: (call) => call === 2 });
  const worker = inbox!.reconcile(reconciler, {
    every: 200,
    since: '48h',
    onError: () => {},
  });
  await vi.waitFor(() => expect(reconciler.calls.length).toBeGreaterThanOrEqual(3), {
    timeout: 5000,
    interval: 20,
  });
  await worker.close();
  const { rows } = await scheduled.pool.query<{
    name: string;
    state: string;
    output: unknown;
    data: { tick: number };
    created: number;
  }>(
    `SELECT name, state::text, output, data, extract(epoch FROM created_on) * 1000 AS created ` +
      `FROM "${scheduled.schema}".job WHERE name LIKE '%.reconcile' ` +
      "AND state IN ('completed', 'failed') ORDER BY created_on",
  );
  expect(rows.slice(0, 2)).toEqual([
    {
      name: expect.stringMatching(/^inbox-.*\.reconcile$/),
      state: 'completed',
      output: expect.objectContaining({ handled: 1, missing: 0, failed: 0 }),
      data: { tick: expect.any(Number) },
      created: expect.anything(),
    },
    {
      name: expect.stringMatching(/\.reconcile$/),
      state: 'failed',
      output: { reason: 'run 2 failed' },
      data: { tick: expect.any(Number) },
      created: expect.anything(),
    },
  ]);
  // Each job names its tick (a whole multiple of `every` since the epoch), for whoever reads the
  // table: the tick it was stored in.
  for (const { data, created } of rows) {
    expect(Number(created) - data.tick * 200).toBeGreaterThanOrEqual(0);
    expect(Number(created) - data.tick * 200).toBeLessThan(200 + 50);
  }
});

it("refuses a queueName whose '.reconcile' queue pg-boss would refuse, and takes the longest it allows", async () => {
  const schema = scheduled.freshSchema();
  const make = (queueName: string) => {
    const inbox = pgBossInbox({ connectionString: scheduled.database.url, schema, queueName });
    cleanups.push(() => inbox.close());
    return inbox;
  };
  // pg-boss takes queue names of up to 100 characters; `.reconcile` adds 10.
  expect(() =>
    make('q'.repeat(91)).reconcile(fakeReconciler(), { every: '1h', since: '48h' }),
  ).toThrow(
    `pgBossInbox: reconcile's queue "<queueName>.reconcile" must be at most 100 characters`,
  );
  const worker = make('q'.repeat(90)).reconcile(fakeReconciler(), { every: '1h', since: '48h' });
  await worker.close();
});

/** An inbox of a schema of its own, with `options`. */
function inboxWith(options: Partial<Parameters<typeof pgBossInbox>[0]>): PgBossInbox {
  const schema = scheduled.freshSchema();
  const inbox = pgBossInbox({
    connectionString: scheduled.database.url,
    schema,
    queueName: `inbox-${randomUUID().slice(0, 8)}`,
    ...options,
  });
  cleanups.push(() => inbox.close());
  return inbox;
}

it('stops a run that outlasts expireInMs, and keeps its job failed with the reason', async () => {
  const logger = recordingLogger();
  const inbox = inboxWith({ expireInMs: 1_000, logger });
  const reconciler = fakeReconciler({ holdMs: 60_000 });
  const worker = inbox.reconcile(reconciler, { every: '1h', since: '48h' });
  const reason = 'the reconcile run took longer than 1000 ms (expireInMs)';
  const jobs = async () =>
    (
      await scheduled.pool.query<{ state: string; retry_limit: number; output: unknown }>(
        `SELECT state::text, retry_limit, output FROM "${scheduled.schema}".job WHERE name LIKE '%.reconcile'`,
      )
    ).rows;
  await vi.waitFor(async () => expect(await jobs()).toMatchObject([{ state: 'failed' }]), {
    timeout: 5_000,
    interval: 50,
  });
  await worker.close();
  // Run once (the next tick runs anew), stopped after expireInMs, with why.
  expect(await jobs()).toEqual([{ state: 'failed', retry_limit: 0, output: { reason } }]);
  expect(logger.lines).toContainEqual(
    expect.objectContaining({
      level: 'warn',
      msg: 'reconcile run stopped',
      obj: expect.objectContaining({ err: reason }),
    }),
  );
});

it('logs a tick that cannot reach Postgres, and tries again at the next tick', async () => {
  const logger = recordingLogger();
  const inbox = pgBossInbox({
    connectionString: 'postgres://postgres@127.0.0.1:1/none',
    queueName: `inbox-${randomUUID().slice(0, 8)}`,
    logger,
  });
  cleanups.push(() => inbox.close());
  const reconciler = fakeReconciler();
  const worker = inbox.reconcile(reconciler, { every: 200, since: '48h' });
  const ticks = () =>
    logger.lines.filter(
      (line) =>
        line.level === 'warn' && line.msg === 'reconcile tick failed; the next tick tries again',
    );
  await vi.waitFor(() => expect(ticks().length).toBeGreaterThanOrEqual(2), {
    timeout: 5_000,
    interval: 20,
  });
  await worker.close();
  expect(ticks()[0]!.obj).toMatchObject({ queue: expect.stringMatching(/\.reconcile$/) });
  expect(String(ticks()[0]!.obj['err'])).toMatch(/ECONNREFUSED/);
  expect(reconciler.calls).toEqual([]);
  // Closed: no tick says anything more.
  const said = logger.lines.length;
  await new Promise((resolve) => setTimeout(resolve, 400));
  expect(logger.lines.length).toBe(said);
});

/** A started pg-boss of a schema of its own, as the inbox sees it, with `replaced` methods. */
async function givenBoss(replaced: (boss: PgBoss) => Partial<PgBossLike> = () => ({})) {
  const schema = scheduled.freshSchema();
  const boss = new PgBoss({ connectionString: scheduled.database.url, schema });
  boss.on('error', () => {});
  cleanups.push(() => boss.stop({ graceful: false, wait: true }));
  await boss.start();
  // Every method bound to pg-boss itself (its private fields need it as `this`).
  const like = Object.fromEntries(
    (
      [
        'start',
        'stop',
        'send',
        'fetch',
        'complete',
        'createQueue',
        'schemaVersion',
        'getDb',
        'on',
        'off',
      ] as const
    ).map((name) => [name, (boss[name] as (...args: unknown[]) => unknown).bind(boss)]),
  ) as unknown as PgBossLike;
  return { ...like, ...replaced(boss) };
}

it('asks pg-boss 11/12 (not 10) to delete each run after keepCompletedMs', async () => {
  const sent: Record<string, unknown>[] = [];
  const boss = await givenBoss((real) => ({
    send: (name, data, options) => {
      if (name.endsWith('.reconcile')) sent.push(options as Record<string, unknown>);
      return real.send(name, data, options);
    },
  }));
  const runOnce = async (queueName: string) => {
    const inbox = pgBossInbox({
      boss,
      schema: scheduled.schema,
      queueName,
      keepCompletedMs: 2 * 86_400_000 + 1,
    });
    cleanups.push(() => inbox.close());
    const reconciler = fakeReconciler();
    const worker = inbox.reconcile(reconciler, { every: '1h', since: '48h' });
    await vi.waitFor(() => expect(reconciler.calls).toHaveLength(1), { timeout: 5_000 });
    await worker.close();
  };
  // pg-boss 10's tables (schema version 24).
  await runOnce('v24');
  expect(sent).toEqual([{ id: expect.any(String), retryLimit: 0, expireInSeconds: 900 }]);
  // The same tables with pg-boss 11/12's deletion_seconds, at schema version 25.
  await scheduled.pool.query(
    `ALTER TABLE "${scheduled.schema}".job ADD COLUMN deletion_seconds int`,
  );
  await scheduled.pool.query(`UPDATE "${scheduled.schema}".version SET version = 25`);
  await runOnce('v25');
  expect(sent[1]).toEqual({
    id: expect.any(String),
    retryLimit: 0,
    expireInSeconds: 900,
    deleteAfterSeconds: 172_801,
  });
});

it('logs a run whose job pg-boss did not take as done', async () => {
  const logger = recordingLogger();
  const boss = await givenBoss(() => ({
    complete: () => Promise.reject(new Error('connection terminated')),
  }));
  const inbox = pgBossInbox({ boss, schema: scheduled.schema, queueName: 'update-fails', logger });
  cleanups.push(() => inbox.close());
  const reconciler = fakeReconciler();
  const worker = inbox.reconcile(reconciler, { every: '1h', since: '48h' });
  await vi.waitFor(
    () =>
      expect(logger.lines).toContainEqual({
        level: 'warn',
        obj: { err: 'connection terminated', queue: 'update-fails.reconcile' },
        msg: 'inbox job update failed',
      }),
    { timeout: 5_000 },
  );
  await worker.close();
});

it('runs a tick once even when a second process starts it after the first finished it', async () => {
  const [first, second] = inboxes(2);
  const reconciler = fakeReconciler();
  const every = 4_000;
  // Start just after a tick begins, so both starts fall in that one tick.
  await new Promise((resolve) => setTimeout(resolve, every - (Date.now() % every) + 50));
  const a = first!.reconcile(reconciler, { every, since: '48h' });
  cleanups.push(() => a.close());
  await vi.waitFor(() => expect(reconciler.running()).toBe(0), { timeout: 2_000, interval: 10 });
  await vi.waitFor(() => expect(reconciler.calls).toHaveLength(1), { timeout: 2_000 });
  const b = second!.reconcile(reconciler, { every, since: '48h' });
  cleanups.push(() => b.close());
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect(Date.now() % every).toBeGreaterThan(1_000);
  expect(reconciler.calls).toHaveLength(1);
});

it("closed between a tick's fetch and its run: the run starts aborted, and its job is failed", async () => {
  let closing: Promise<void> | undefined;
  const boss = await givenBoss((real) => ({
    fetch: async (name, options) => {
      const jobs = await real.fetch(name, options);
      if (jobs.length > 0) closing ??= worker.close();
      return jobs;
    },
  }));
  const inbox = pgBossInbox({ boss, schema: scheduled.schema, queueName: 'closed-at-fetch' });
  cleanups.push(() => inbox.close());
  const abortedAtStart: (boolean | undefined)[] = [];
  // Read by the fetch above, which runs once the tick has started, after this line.
  const worker: InboxWorker = inbox.reconcile(
    {
      run: async (options) => {
        abortedAtStart.push(options.signal?.aborted);
        if (options.signal?.aborted) throw options.signal.reason as Error;
        return reportOf(1);
      },
    },
    { every: '1h', since: '48h' },
  );
  await vi.waitFor(() => expect(closing).toBeDefined(), { timeout: 5_000 });
  await closing;
  expect(abortedAtStart).toEqual([true]);
  const { rows } = await scheduled.pool.query<{ state: string }>(
    `SELECT state::text FROM "${scheduled.schema}".job WHERE name = 'closed-at-fetch.reconcile'`,
  );
  // Failed, not left active until pg-boss expires it (which would hold back the next ticks).
  expect(rows).toEqual([{ state: 'failed' }]);
});

it('says nothing of a tick that fails because the worker is closing', async () => {
  const logger = recordingLogger();
  let closing: Promise<void> | undefined;
  const boss = await givenBoss(() => ({
    fetch: () => {
      closing ??= worker.close();
      return Promise.reject(new Error('pg-boss is stopping'));
    },
  }));
  const inbox = pgBossInbox({
    boss,
    schema: scheduled.schema,
    queueName: 'closed-in-tick',
    logger,
  });
  cleanups.push(() => inbox.close());
  const reconciler = fakeReconciler();
  // Read by the fetch above, which runs once the tick has started, after this line.
  const worker: InboxWorker = inbox.reconcile(reconciler, { every: '1h', since: '48h' });
  await vi.waitFor(() => expect(closing).toBeDefined(), { timeout: 5_000 });
  await closing;
  expect(reconciler.calls).toEqual([]);
  expect(logger.lines.filter((line) => line.level !== 'debug')).toEqual([]);
});

it('leaves the signal of a run that ended alone: neither expireInMs nor close() aborts it later', async () => {
  const inbox = inboxWith({ expireInMs: 1_000 });
  const signals: AbortSignal[] = [];
  const worker = inbox.reconcile(
    {
      run: async (options) => {
        signals.push(options.signal!);
        return reportOf(1);
      },
    },
    { every: '1h', since: '48h' },
  );
  await vi.waitFor(() => expect(signals).toHaveLength(1), { timeout: 5_000 });
  await new Promise((resolve) => setTimeout(resolve, 1_300));
  expect(signals[0]!.aborted).toBe(false);
  await worker.close();
  expect(signals[0]!.aborted).toBe(false);
});
