/**
 * bullmqInbox's `watch`: a watchdog checked by a BullMQ job scheduler on real Redis
 * (`<queueName>.watch`), with intervals of a few hundred ms. Two inboxes on one queue stand for
 * two processes (each has a Redis connection of its own).
 */

import { expect, it, vi } from 'vitest';
import { useScheduledBullmq } from './bullmq-scheduled.js';
import { fakeReconciler } from './reconcile-fake.js';
import { describeWatchContract, watchedReceiver } from './watch-contract.js';

const { inboxes, taskQueue: watchQueue } = useScheduledBullmq('watch');

describeWatchContract('bullmqInbox', { inboxes, processes: true, logs: true });

it("each check is a 'watch' job of its own queue that keeps the status and counts, never a key", async () => {
  const [inbox] = inboxes(1);
  const watched = watchedReceiver();
  watched.state.failing = true;
  const { idempotencyKey } = await watched.deliver();
  const worker = inbox!.watch(watched.watchdog, { every: 200, onAlert: () => {} });
  const queue = watchQueue(inbox!.queue.name);
  const [done] = await vi.waitFor(
    async () => {
      const jobs = await queue.getJobs(['completed'], 0, 0, true);
      expect(jobs).toHaveLength(1);
      return jobs;
    },
    { timeout: 4000, interval: 20 },
  );
  const [scheduler] = await queue.getJobSchedulers();
  await worker.close();
  expect(done!.name).toBe('watch');
  expect(done!.returnvalue).toEqual({
    status: 'at_risk',
    atRisk: 1,
    silent: 0,
    alerted: true,
    lastAttemptAt: expect.any(String),
    failingSince: expect.any(String),
  });
  expect(JSON.stringify(done!.returnvalue)).not.toContain(idempotencyKey);
  // Its own scheduler, beside a reconciler's, and one check at a time across the processes.
  expect(scheduler).toMatchObject({ key: 'schoolhooks-watch', name: 'watch', every: 200 });
  expect(await queue.getGlobalConcurrency()).toBe(1);
  // Not one of the inbox's deliveries.
  expect(await inbox!.jobs()).toEqual([]);
});

it('fails the job of a check that threw, with its error', async () => {
  const [inbox] = inboxes(1);
  let calls = 0;
  const watchdog = {
    check: () => Promise.reject(new Error(`check ${++calls} failed`)),
  };
  const worker = inbox!.watch(watchdog, { every: 200, onAlert: () => {}, onError: () => {} });
  await vi.waitFor(() => expect(calls).toBeGreaterThanOrEqual(1), { timeout: 4000, interval: 20 });
  const queue = watchQueue(inbox!.queue.name);
  const [failed] = await vi.waitFor(
    async () => {
      const jobs = await queue.getJobs(['failed'], 0, 0, true);
      expect(jobs).toHaveLength(1);
      return jobs;
    },
    { timeout: 4000, interval: 20 },
  );
  await worker.close();
  expect(failed!.failedReason).toBe('check 1 failed');
});

it('watches and reconciles on one inbox, each on its own queue', async () => {
  const [inbox] = inboxes(1);
  const watched = watchedReceiver();
  const reconciler = fakeReconciler({ holdMs: 60_000 });
  // Each runs at start; the reconciler's run holds its queue.
  const reconciling = inbox!.reconcile(reconciler, { every: 200, since: '48h' });
  const watching = inbox!.watch(watched.watchdog, { every: 150, onAlert: () => {} });
  await vi.waitFor(() => expect(watched.state.checks).toBeGreaterThanOrEqual(2), {
    timeout: 4000,
    interval: 20,
  });
  await vi.waitFor(() => expect(reconciler.calls).toHaveLength(1), { timeout: 4000, interval: 20 });
  await watching.close();
  await reconciling.close();
  expect(reconciler.calls).toHaveLength(1);
});

it('checks at start, not an `every` later', async () => {
  const [inbox] = inboxes(1);
  const watched = watchedReceiver();
  const worker = inbox!.watch(watched.watchdog, { every: '1h', onAlert: () => {} });
  await vi.waitFor(() => expect(watched.state.checks).toBe(1), { timeout: 4000, interval: 20 });
  await worker.close();
});
