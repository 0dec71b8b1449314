/**
 * bullmqInbox's `reconcile`: a reconciler run as a BullMQ job scheduler on real Redis, with a
 * fake `{ run }` and intervals of a few hundred ms. Two inboxes on one queue stand for two
 * processes (each has a Redis connection of its own).
 */

import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { useScheduledBullmq } from './bullmq-scheduled.js';
import { describeReconcileContract } from './reconcile-contract.js';
import { fakeReconciler, recordingLogger, sleep } from './reconcile-fake.js';

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

/** When a job of the scheduler `schoolhooks-reconcile` was due: BullMQ's id for it says. */
function dueAt(jobId: string | undefined): number {
  const match = /^repeat:schoolhooks-reconcile:(\d+)$/.exec(jobId ?? '');
  if (!match) throw new Error(`not a job of the reconcile scheduler: ${jobId}`);
  return Number(match[1]);
}

/** Wait until `Date.now()` is `at` ms into a tick of `everyMs`. */
async function intoTick(everyMs: number, at: number): Promise<void> {
  const wait = (at - (Date.now() % everyMs) + everyMs) % everyMs;
  await new Promise((resolve) => setTimeout(resolve, wait));
}

it('runs once at start, in the tick it starts in, then on whole multiples of `every` (docs/inbox.md)', async () => {
  const every = 1000;
  const [inbox] = inboxes(1);
  const reconciler = fakeReconciler();
  // Half a tick in: a scheduler due "now" and every `every` after runs half a tick off.
  await intoTick(every, 500);
  const startedAt = Date.now();
  const worker = inbox!.reconcile(reconciler, { every, since: '48h' });
  const queue = reconcileQueue(inbox!.queue.name);
  const done = await vi.waitFor(
    async () => {
      const jobs = await queue.getJobs(['completed'], 0, -1, true);
      expect(jobs.length).toBeGreaterThanOrEqual(2);
      return jobs;
    },
    { timeout: 6000, interval: 50 },
  );
  await worker.close();
  const due = done.map((job) => dueAt(job.id)).sort((a, b) => a - b);
  for (const at of due) expect(at % every).toBe(0);
  // The start's run is the current tick's, then the multiples after; one a tick, each run no
  // sooner than due.
  expect(due.slice(0, 2)).toEqual([
    Math.floor(startedAt / every) * every,
    Math.ceil(startedAt / every) * every,
  ]);
  expect(new Set(due).size).toBe(due.length);
  for (const job of done) expect(job.processedOn).toBeGreaterThanOrEqual(dueAt(job.id));
  const scheduler = await queue.getJobScheduler('schoolhooks-reconcile');
  expect(scheduler!.next! % every).toBe(0);
});

it('puts a scheduler an earlier version set mid-tick back on the multiples of `every`', async () => {
  const every = 1000;
  const [inbox] = inboxes(1);
  const queue = reconcileQueue(inbox!.queue.name);
  // As earlier versions set it: `every` alone, half a tick in, so due then and every tick after.
  await intoTick(every, 500);
  await queue.upsertJobScheduler(
    'schoolhooks-reconcile',
    { every },
    { name: 'reconcile', data: {} },
  );
  const before = await queue.getJobScheduler('schoolhooks-reconcile');
  expect(before!.next! % every).not.toBe(0);
  const reconciler = fakeReconciler();
  const worker = inbox!.reconcile(reconciler, { every, since: '48h' });
  await vi.waitFor(() => expect(reconciler.calls.length).toBeGreaterThanOrEqual(3), {
    timeout: 8000,
    interval: 50,
  });
  await worker.close();
  const scheduler = await queue.getJobScheduler('schoolhooks-reconcile');
  expect(scheduler!.next! % every).toBe(0);
  // The job the old scheduler had made at once may have run; every other one is on a multiple.
  const due = (await queue.getJobs(['completed'], 0, -1, true)).map((job) => dueAt(job.id));
  expect(due.filter((at) => at % every !== 0).length).toBeLessThanOrEqual(1);
});

describe('the run at start (docs/inbox.md)', () => {
  const tickOf = (at: number, every: number) => at - (at % every);

  /** Once `queue` has `count` completed jobs: a run is recorded before its job completes. */
  async function completed(queue: Queue, count: number): Promise<void> {
    await vi.waitFor(async () => expect(await queue.getJobCountByTypes('completed')).toBe(count), {
      timeout: 4000,
      interval: 10,
    });
  }

  it('runs at start, not an `every` later', async () => {
    const [inbox] = inboxes(1);
    const reconciler = fakeReconciler();
    const startedAt = Date.now();
    const worker = inbox!.reconcile(reconciler, { every: '1h', since: '48h' });
    const queue = reconcileQueue(inbox!.queue.name);
    const [done] = await vi.waitFor(
      async () => {
        const jobs = await queue.getJobs(['completed'], 0, -1, true);
        expect(jobs).toHaveLength(1);
        return jobs;
      },
      { timeout: 4000, interval: 20 },
    );
    await worker.close();
    expect(reconciler.calls).toHaveLength(1);
    // Under the id the scheduler gives its job of that tick, which is the next one's.
    expect(dueAt(done!.id)).toBe(tickOf(startedAt, 3_600_000));
    expect(done!.name).toBe('reconcile');
    expect((await queue.getJobScheduler('schoolhooks-reconcile'))?.next).toBe(
      tickOf(startedAt, 3_600_000) + 3_600_000,
    );
  });

  it('two processes started in one tick run it once between them', async () => {
    const [a, b] = inboxes(2);
    const reconciler = fakeReconciler();
    a!.reconcile(reconciler, { every: '1h', since: '48h' });
    b!.reconcile(reconciler, { every: '1h', since: '48h' });
    await vi.waitFor(() => expect(reconciler.calls).toHaveLength(1), {
      timeout: 4000,
      interval: 20,
    });
    await sleep(500);
    expect(reconciler.calls).toHaveLength(1);
    expect(
      await reconcileQueue(a!.queue.name).getJobCountByTypes('completed', 'active', 'wait'),
    ).toBe(1);
  });

  it('a process started again in the tick whose run it made runs none', async () => {
    const [a, b] = inboxes(2);
    const reconciler = fakeReconciler();
    const queue = reconcileQueue(a!.queue.name);
    const first = a!.reconcile(reconciler, { every: '1h', since: '48h' });
    await completed(queue, 1);
    await first.close();
    // The same inbox's queue, as the process would be after a restart.
    const again = b!.reconcile(reconciler, { every: '1h', since: '48h' });
    await vi.waitFor(async () => expect(await queue.getJobSchedulersCount()).toBe(1));
    await sleep(500);
    await again.close();
    expect(reconciler.calls).toHaveLength(1);
  });

  it('after every process was stopped past a tick, runs the job left due, and no second one', async () => {
    const every = 1000;
    const [a, b] = inboxes(2);
    const reconciler = fakeReconciler();
    await intoTick(every, 100);
    const queue = reconcileQueue(a!.queue.name);
    const first = a!.reconcile(reconciler, { every, since: '48h' });
    await completed(queue, 1);
    await first.close();
    const stoppedIn = tickOf(Date.now(), every);
    // The scheduler's job of the next tick stays, delayed; two ticks go by without a worker.
    await sleep(stoppedIn + 2 * every + 300 - Date.now());
    const restartedIn = tickOf(Date.now(), every);
    expect(restartedIn).toBe(stoppedIn + 2 * every);
    const again = b!.reconcile(reconciler, { every, since: '48h' });
    // Before the next multiple: that left job alone, not the current tick's besides.
    await intoTick(every, 900);
    await again.close();
    expect(reconciler.calls).toHaveLength(2);
    const due = (await queue.getJobs(['completed', 'failed'], 0, -1, true))
      .map((job) => dueAt(job.id))
      .sort((x, y) => x - y);
    expect(due).toEqual([stoppedIn, stoppedIn + every]);
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
  const worker = inbox!.reconcile(reconciler, { every: 200, since: '48h' });
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
