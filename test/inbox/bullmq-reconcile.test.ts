/**
 * bullmqInbox's `reconcile`: a reconciler run as a BullMQ job scheduler on real Redis, with a
 * fake `{ run }` and intervals of a few hundred ms. Two inboxes on one queue stand for two
 * processes (each has a Redis connection of its own).
 */

import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { expect, it, vi } from 'vitest';
import { useScheduledBullmq } from './bullmq-scheduled.js';
import { describeReconcileContract } from './reconcile-contract.js';
import { fakeReconciler, recordingLogger } from './reconcile-fake.js';

const { inboxes, taskQueue: reconcileQueue, cleanups } = useScheduledBullmq('reconcile');

describeReconcileContract('bullmqInbox', { inboxes, processes: true, logs: true });

it('each run is a job of the reconcile queue, beside the deliveries, that keeps the counts', async () => {
  const [inbox] = inboxes(1);
  const reconciler = fakeReconciler();
  const worker = inbox!.reconcile(reconciler, { every: 200, since: '48h' });
  await vi.waitFor(() => expect(reconciler.calls.length).toBeGreaterThanOrEqual(2), {
    timeout: 4000,
    interval: 20,
  });
  await worker.close();
  const queue = reconcileQueue(inbox!.queue.name);
  const [done] = await queue.getJobs(['completed'], 0, 0, true);
  expect(done?.returnvalue).toEqual({
    window: { from: '2026-11-24T00:00:00.000Z', to: '2026-11-26T00:00:00.000Z' },
    checked: { invoice: 1, access: 0, certificate: 0, user: 0 },
    handled: 1,
    recovered: 0,
    missing: 0,
    failed: 0,
    inFlight: 0,
    unrecorded: 0,
    complete: true,
  });
  expect(await queue.getGlobalConcurrency()).toBe(1);
  // The scheduler stays for the other processes.
  expect(await queue.getJobSchedulersCount()).toBe(1);
});

it("schedules one 'reconcile' job every `every`, kept as long as the inbox keeps its jobs", async () => {
  const [inbox] = inboxes(1);
  const worker = inbox!.reconcile(fakeReconciler(), { every: '1h', since: '48h' });
  const queue = reconcileQueue(inbox!.queue.name);
  const [scheduler] = await vi.waitFor(
    async () => {
      const found = await queue.getJobSchedulers();
      expect(found).toHaveLength(1);
      return found;
    },
    { timeout: 4000, interval: 20 },
  );
  await worker.close();
  // Its id is the one docs/inbox.md tells to remove it by.
  expect(scheduler).toMatchObject({
    key: 'schoolhooks-reconcile',
    name: 'reconcile',
    every: 3_600_000,
  });
  // The inbox's defaults: completed jobs a day, dead letters 30 days (BullMQ counts seconds).
  expect(scheduler!.template?.opts).toMatchObject({
    removeOnComplete: { age: 86_400, count: 100 },
    removeOnFail: { age: 30 * 86_400, count: 100 },
  });
});

it("fails a run's job with the run's error, and the next tick runs again", async () => {
  const [inbox] = inboxes(1);
  const reconciler = fakeReconciler({ fails: (call) => call === 1 });
  const worker = inbox!.reconcile(reconciler, { every: 200, since: '48h', onError: () => {} });
  await vi.waitFor(() => expect(reconciler.calls.length).toBeGreaterThanOrEqual(2), {
    timeout: 4000,
    interval: 20,
  });
  await worker.close();
  const queue = reconcileQueue(inbox!.queue.name);
  const [failed] = await queue.getJobs(['failed'], 0, 0, true);
  expect(failed?.failedReason).toBe('run 1 failed');
});

it('refuses to reconcile on a BullMQ without job schedulers (before 5.16), saying so', () => {
  const [inbox] = inboxes(1);
  const prototype = Queue.prototype as unknown as Record<string, unknown>;
  for (const method of ['upsertJobScheduler', 'setGlobalConcurrency']) {
    const original = prototype[method];
    delete prototype[method];
    try {
      expect(() => inbox!.reconcile(fakeReconciler(), { every: '1h', since: '48h' })).toThrow(
        'bullmqInbox: reconcile needs BullMQ 5.16 or later (job schedulers and global concurrency)',
      );
    } finally {
      prototype[method] = original;
    }
  }
});

it('logs a scheduler Redis did not take, tries again after `every`, and then runs', async () => {
  const logger = recordingLogger();
  const [inbox] = inboxes(1, logger);
  const prototype = Queue.prototype as unknown as {
    upsertJobScheduler: (...args: unknown[]) => Promise<unknown>;
  };
  const upsert = prototype.upsertJobScheduler;
  let failures = 1;
  prototype.upsertJobScheduler = function (this: unknown, ...args: unknown[]) {
    if (failures-- > 0) return Promise.reject(new Error('READONLY You can not write'));
    return upsert.apply(this, args);
  };
  cleanups.push(async () => {
    prototype.upsertJobScheduler = upsert;
  });
  const reconciler = fakeReconciler();
  const worker = inbox!.reconcile(reconciler, { every: 200, since: '48h' });
  await vi.waitFor(() => expect(reconciler.calls.length).toBeGreaterThanOrEqual(1), {
    timeout: 5_000,
    interval: 20,
  });
  await worker.close();
  prototype.upsertJobScheduler = upsert;
  const notSet = logger.lines.filter(
    (line) => line.msg === 'reconcile schedule not set; trying again',
  );
  expect(notSet).toEqual([
    {
      level: 'error',
      obj: { err: 'READONLY You can not write', queue: `${inbox!.queue.name}.reconcile` },
      msg: 'reconcile schedule not set; trying again',
    },
  ]);
});

it('says why a run stopped at close(), and tells connection errors of its queue to the logger', async () => {
  const logger = recordingLogger();
  const [inbox] = inboxes(1, logger);
  const reconciler = fakeReconciler({ holdMs: 60_000 });
  const worker = inbox!.reconcile(reconciler, { every: '1h', since: '48h' });
  await vi.waitFor(() => expect(reconciler.running()).toBe(1), { timeout: 4000, interval: 20 });
  // The inbox's connection fails: every queue on it, the reconcile queue too, says so.
  const client = inbox!.queue.opts.connection as unknown as Redis;
  client.emit('error', new Error('ECONNRESET'));
  expect(
    logger.lines.filter((line) => line.msg === 'inbox connection error').length,
  ).toBeGreaterThanOrEqual(2);
  await worker.close();
  expect(logger.lines).toContainEqual(
    expect.objectContaining({
      level: 'warn',
      msg: 'reconcile run stopped',
      obj: expect.objectContaining({ err: 'the reconcile worker was closed' }),
    }),
  );
});

it('closes at once while it waits to set a scheduler Redis refused', async () => {
  const [inbox] = inboxes(1, recordingLogger());
  const prototype = Queue.prototype as unknown as {
    upsertJobScheduler: (...args: unknown[]) => Promise<unknown>;
  };
  const upsert = prototype.upsertJobScheduler;
  prototype.upsertJobScheduler = () => Promise.reject(new Error('READONLY You can not write'));
  cleanups.push(async () => {
    prototype.upsertJobScheduler = upsert;
  });
  // The next try would be 30 s away.
  const worker = inbox!.reconcile(fakeReconciler(), { every: '1h', since: '48h' });
  await new Promise((resolve) => setTimeout(resolve, 200));
  const startedAt = performance.now();
  await worker.close();
  expect(performance.now() - startedAt).toBeLessThan(5_000);
  prototype.upsertJobScheduler = upsert;
});
