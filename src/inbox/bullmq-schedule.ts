/**
 * A scheduled task of a `bullmqInbox` (its reconciler, its watchdog) as a BullMQ job scheduler:
 * a queue of its own beside the deliveries' (`<queueName>.reconcile`, `<queueName>.watch`),
 * whose scheduler makes one job every `every`, and whose global concurrency of 1 lets one worker
 * of any process run it at a time. Each job keeps its run's summary, or fails with its error.
 *
 * Runs fall on whole multiples of `every` (docs/inbox.md), which BullMQ's `every` does not do by
 * itself: a new scheduler's first job is due the moment it is upserted, and each later one
 * `every` after the one before (BullMQ's getJobSchedulerEveryNextMillis.lua keeps that phase as
 * the scheduler's `offset`), so a scheduler set mid-tick ran mid-tick for good. Its `startDate`
 * is therefore the next multiple: the first job is due then, and every later one `every` after,
 * on the multiples. A scheduler that is not on them (set by an earlier version, or one whose
 * upsert reached Redis after the multiple it was meant for) is removed and set again.
 *
 * The scheduler's first job is the tick after the current one, so each process also adds one job
 * for the current tick, under the id the scheduler gives its job of that tick
 * (`repeat:<schedulerId>:<tick>`, BullMQ's JobScheduler.getSchedulerNextJobId): BullMQ ignores an
 * add whose id is there already, so the processes starting in one tick add one job between them,
 * and none is added while the scheduler's own job of that tick is kept (it ran, or it waits to).
 * None is added either when the scheduler's next job is already due: one left from before every
 * process stopped, which BullMQ runs at once, and which is the run at start. What this costs: a
 * tick's job whose record was removed by age (`keepCompletedMs`, `keepFailedMs`, or past the last
 * {@link KEEP_RUNS}) is not seen, so a process started in that tick runs it again; and two
 * processes started together after all were stopped may run that left job and the current tick's
 * one after the other. Both are harmless for reconcile and watch, each run a read and recoveries
 * a second run finds done.
 * @module
 */

import { Queue, Worker, type Job } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { ConfigError } from '../errors.js';
import { messageOf } from '../utils/message-of.js';
import type { Logger } from '../receiving/receiver.js';
import type { InboxWorker } from './managed.js';
import {
  taskQueueName,
  untilNextTick,
  type ScheduledTask,
  type TaskKind,
} from './scheduled-task.js';

/**
 * The id of a task's job scheduler on its queue (one per inbox and kind):
 * `schoolhooks-reconcile`, `schoolhooks-watch`.
 */
export function schedulerIdOf(kind: TaskKind): string {
  return `schoolhooks-${kind}`;
}

/** What a scheduled task's worker needs of its inbox. */
export interface BullmqScheduleSettings {
  /** The inbox's client: the queue's connection. */
  readonly client: Redis | Cluster;
  /** A lazy copy of it for the worker's blocking connections (`maxRetriesPerRequest: null`). */
  readonly blockingClient: () => Redis | Cluster;
  readonly queueName: string;
  readonly prefix: string;
  readonly keepCompletedMs: number;
  readonly keepFailedMs: number;
  readonly logger: Logger | undefined;
  readonly onConnectionError: (error: unknown) => void;
}

/** Runs kept at the most, completed and failed each, besides their age. */
const KEEP_RUNS = 100;

/**
 * Upsert the task's scheduler (every process does: the same id and the same `every` is one
 * scheduler), set its queue's global concurrency to 1, and run its jobs in a worker of this
 * process. `close()` stops the worker, aborting a run in progress; the scheduler stays in Redis
 * for the other processes.
 */
export function startBullmqTask(
  settings: BullmqScheduleSettings,
  task: ScheduledTask,
  forget: () => void,
): InboxWorker {
  const name = taskQueueName(settings.queueName, task.kind);
  const queue = new Queue(name, { connection: settings.client, prefix: settings.prefix });
  queue.on('error', settings.onConnectionError);
  if (
    typeof (queue as Partial<Queue>).upsertJobScheduler !== 'function' ||
    typeof (queue as Partial<Queue>).setGlobalConcurrency !== 'function'
  ) {
    void queue.close();
    throw new ConfigError(
      `bullmqInbox: ${task.kind} needs BullMQ 5.16 or later (job schedulers and global concurrency)`,
    );
  }
  const stop = new AbortController();
  const setup = scheduled(queue, task, settings, stop.signal);
  const template = settings.blockingClient();
  const worker = new Worker(
    name,
    async (_job: Job) => {
      const outcome = await task.run(stop.signal);
      if (outcome.ok) return outcome.summary;
      // The job fails (Bull Board shows why), and the scheduler's next job runs at the next tick.
      throw outcome.error instanceof Error ? outcome.error : new Error(messageOf(outcome.error));
    },
    { connection: template, prefix: settings.prefix, concurrency: 1 },
  );
  worker.on('error', settings.onConnectionError);
  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= (async () => {
        stop.abort(new Error(`the ${task.kind} worker was closed`));
        await worker.close();
        await setup;
        template.disconnect();
        await queue.close();
        forget();
      })();
      return closing;
    },
  };
}

/**
 * The scheduler and the global concurrency, set once; a failure (Redis unreachable) is logged
 * and tried again after `everyMs` (or 30 s, if sooner) until it succeeds or the worker closes.
 */
async function scheduled(
  queue: Queue,
  { kind, everyMs }: ScheduledTask,
  { keepCompletedMs, keepFailedMs, logger }: BullmqScheduleSettings,
  signal: AbortSignal,
): Promise<void> {
  const template: Required<JobTemplate> = {
    name: kind,
    data: {},
    opts: {
      // BullMQ counts these ages in seconds.
      removeOnComplete: { age: Math.ceil(keepCompletedMs / 1000), count: KEEP_RUNS },
      removeOnFail: { age: Math.ceil(keepFailedMs / 1000), count: KEEP_RUNS },
    },
  };
  while (!signal.aborted) {
    try {
      await queue.setGlobalConcurrency(1);
      const id = schedulerIdOf(kind);
      const next = await alignedScheduler(queue, id, everyMs, template);
      await runThisTick(queue, id, everyMs, next, template);
      return;
    } catch (error) {
      if (signal.aborted) return;
      (logger ?? console).error(
        { err: messageOf(error), queue: queue.name },
        `${kind} schedule not set; trying again`,
      );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(everyMs, 30_000));
        function done(): void {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          resolve();
        }
        signal.addEventListener('abort', done);
      });
    }
  }
}

/** What a task's scheduler makes of each job: its name, data and options. */
type JobTemplate = NonNullable<Parameters<Queue['upsertJobScheduler']>[2]>;

/**
 * Add the current tick's job, unless the scheduler's next one is already due (see the module
 * comment); an add whose id is there already (another process's, or the scheduler's own job of
 * this tick) does nothing.
 */
async function runThisTick(
  queue: Queue,
  id: string,
  everyMs: number,
  next: number | undefined,
  { name, data, opts }: Required<JobTemplate>,
): Promise<void> {
  const now = Date.now();
  if (next !== undefined && next <= now) return;
  const tick = now - (now % everyMs);
  await queue.add(name, data, { ...opts, jobId: `repeat:${id}:${tick}` });
}

/** How many times a scheduler found off the multiples of `every` is set again, at the most. */
const REALIGNS = 3;

/**
 * Upsert the scheduler so that its jobs fall on whole multiples of `everyMs` (see the module
 * comment); one found off them is removed and set again, a few times at the most (a BullMQ that
 * keeps no `startDate` for `every` then runs it `every` apart, as before). Resolves to when its
 * next job is due (undefined on a BullMQ that does not say).
 */
async function alignedScheduler(
  queue: Queue,
  id: string,
  everyMs: number,
  template: JobTemplate,
): Promise<number | undefined> {
  for (let tries = 0; ; tries++) {
    const now = Date.now();
    // Other processes upsert the same scheduler: one already set keeps its next job (a
    // multiple), and BullMQ reads startDate only for a scheduler it makes anew.
    await queue.upsertJobScheduler(
      id,
      { every: everyMs, startDate: now + untilNextTick(now, everyMs) },
      template,
    );
    const next = await nextDue(queue, id);
    if (tries >= REALIGNS || next === undefined || next % everyMs === 0) return next;
    await queue.removeJobScheduler(id);
  }
}

/** When the scheduler's next job is due; undefined when BullMQ does not say. */
async function nextDue(queue: Queue, id: string): Promise<number | undefined> {
  // A BullMQ without getJobScheduler gives nothing to check with.
  if (typeof (queue as Partial<Queue>).getJobScheduler !== 'function') return undefined;
  const next = (await queue.getJobScheduler(id))?.next;
  return typeof next === 'number' ? next : undefined;
}
