/**
 * An inbox inside one process, with no dependency: for tests, the demo and single-process
 * tools. It keeps nothing across a restart; `bullmqInbox` (`schoolhooks/bullmq`) does.
 * @module
 */

import type { Receiver } from '../receiving/receiver.js';
import {
  type InboxJob,
  type InboxJobState,
  type InboxWorker,
  type InboxWorkOptions,
  type ManagedInbox,
} from './managed.js';
import {
  checkConcurrency,
  closedForWork,
  inboxClosed,
  inboxPolicy,
  secondWatchdog,
  type InboxPolicy,
  type AfterRun,
  verdictOf,
} from './inbox-policy.js';
import type { StoredDelivery } from './types.js';
import { deliveryKeyOf } from '../keys/delivery-key.js';
import {
  checkReconcileOptions,
  reconcileTask,
  type InboxReconcileOptions,
  type ScheduledReconciler,
} from './reconcile-schedule.js';
import { tickInProcess, type ScheduleTicker } from './scheduled-task.js';
import {
  checkWatchOptions,
  watchTask,
  type InboxWatchOptions,
  type WatchedWatchdog,
} from './watch-schedule.js';

/** Options of {@link memoryInbox}. */
export interface MemoryInboxOptions {
  /** Runs of the handlers before a job is a dead letter. Default 10. */
  attempts?: number;
  /** The first retry's delay, doubling each time. Default 30 s. */
  backoffMs?: number;
  /** How long a completed job is kept. Default 1 day. */
  keepCompletedMs?: number;
}

/** The in-process inbox: a {@link ManagedInbox} plus a way to wait until it has nothing to do. */
export interface MemoryInbox extends ManagedInbox {
  /** Resolves once no job is waiting, delayed or running (dead letters stay). */
  idle(): Promise<void>;
}

interface Job {
  readonly delivery: StoredDelivery;
  state: InboxJobState;
  attemptsMade: number;
  reason?: string;
  completedAt?: number;
  timer?: ReturnType<typeof setTimeout>;
}

interface Worker {
  readonly receiver: Receiver;
  readonly concurrency: number;
  running: number;
  closed: boolean;
  readonly finished: Set<Promise<void>>;
}

/**
 * Create an in-process inbox.
 *
 * @example
 * ```ts
 * import { createReceiver, memoryInbox } from 'schoolhooks';
 *
 * const inbox = memoryInbox({ attempts: 5, backoffMs: 1000 });
 * const receiver = createReceiver({ secret, inbox });
 * receiver.on('PaymentCompleted', grantAccess);
 * const worker = inbox.work(receiver, { concurrency: 4 });
 * ```
 */
export function memoryInbox(options: MemoryInboxOptions = {}): MemoryInbox {
  const inbox = new MemoryQueue(inboxPolicy('memoryInbox', options));
  // A plain object of the inbox's methods, so a copy or a wrapper ({ ...inbox }) keeps them.
  return {
    enqueue: (delivery) => inbox.enqueue(delivery),
    work: (receiver, workOptions) => inbox.work(receiver, workOptions),
    retryFailed: (filter) => inbox.retryFailed(filter),
    jobs: (filter) => inbox.jobs(filter),
    reconcile: (reconciler, reconcileOptions) => inbox.reconcile(reconciler, reconcileOptions),
    watch: (watchdog, watchOptions) => inbox.watch(watchdog, watchOptions),
    idle: () => inbox.idle(),
    close: () => inbox.close(),
  };
}

/** {@link memoryInbox}'s state: its jobs by id, the waiting line, its workers and who waits. */
class MemoryQueue implements MemoryInbox {
  readonly #policy: InboxPolicy;
  readonly #jobs = new Map<string, Job>();
  readonly #waiting: Job[] = [];
  readonly #workers = new Set<Worker>();
  readonly #reconcilers = new Set<ScheduleTicker>();
  #watcher: ScheduleTicker | undefined;
  #idleWaiters: (() => void)[] = [];
  #closed = false;
  /** Jobs waiting, delayed or running: the inbox is idle at 0. */
  #pending = 0;

  constructor(policy: InboxPolicy) {
    this.#policy = policy;
  }

  async enqueue(delivery: StoredDelivery): Promise<void> {
    if (this.#closed) throw inboxClosed();
    this.#purgeCompleted();
    // The same event stored twice (another endpoint, a retry after a lost answer) is one job;
    // the same key under two tenants is two.
    const id = deliveryKeyOf(delivery.idempotencyKey, delivery.tenant);
    if (this.#jobs.has(id)) return;
    const job: Job = { delivery: { ...delivery }, state: 'waiting', attemptsMade: 0 };
    this.#jobs.set(id, job);
    this.#pending++;
    this.#makeWaiting(job);
  }

  work(receiver: Receiver, { concurrency = 1 }: InboxWorkOptions = {}): InboxWorker {
    if (this.#closed) throw closedForWork('memoryInbox');
    checkConcurrency('memoryInbox', concurrency);
    const worker: Worker = {
      receiver,
      concurrency,
      running: 0,
      closed: false,
      finished: new Set(),
    };
    this.#workers.add(worker);
    this.#pump();
    return {
      close: async () => {
        worker.closed = true;
        this.#workers.delete(worker);
        await Promise.all(worker.finished);
      },
    };
  }

  async retryFailed({ event }: { event?: string } = {}): Promise<number> {
    let count = 0;
    for (const job of this.#jobs.values()) {
      if (job.state !== 'failed' || (event !== undefined && job.delivery.event !== event)) {
        continue;
      }
      job.attemptsMade = 0;
      count++;
      this.#pending++;
      this.#makeWaiting(job);
    }
    return count;
  }

  async jobs({ state }: { state?: InboxJobState } = {}): Promise<InboxJob[]> {
    const list: InboxJob[] = [];
    for (const [id, job] of this.#jobs) {
      if (state === undefined || job.state === state) list.push(listed(id, job));
    }
    return list;
  }

  /** Runs the reconciler at once, then every `every` (a timer: this process only). */
  reconcile(reconciler: ScheduledReconciler, options: InboxReconcileOptions): InboxWorker {
    if (this.#closed) throw closedForWork('memoryInbox');
    const schedule = checkReconcileOptions('memoryInbox', reconciler, options);
    const log = { logger: undefined, queue: 'memoryInbox' };
    const ticker: ScheduleTicker = tickInProcess(reconcileTask(reconciler, schedule, log), () =>
      this.#reconcilers.delete(ticker),
    );
    this.#reconcilers.add(ticker);
    return ticker;
  }

  /** Checks the watchdog at once, then every `every` (a timer: this process only). */
  watch(watchdog: WatchedWatchdog, options: InboxWatchOptions): InboxWorker {
    if (this.#closed) throw closedForWork('memoryInbox');
    const schedule = checkWatchOptions('memoryInbox', watchdog, options);
    if (this.#watcher !== undefined) throw secondWatchdog('memoryInbox');
    const log = { logger: undefined, queue: 'memoryInbox' };
    const ticker: ScheduleTicker = tickInProcess(watchTask(watchdog, schedule, log), () => {
      if (this.#watcher === ticker) this.#watcher = undefined;
    });
    this.#watcher = ticker;
    return ticker;
  }

  idle(): Promise<void> {
    if (this.#pending === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#reconcilers, this.#watcher].map((ticker) => ticker?.close()));
    for (const job of this.#jobs.values()) {
      if (job.timer !== undefined) clearTimeout(job.timer);
    }
    await Promise.all(
      [...this.#workers].map((worker) => {
        worker.closed = true;
        return Promise.all(worker.finished);
      }),
    );
    this.#workers.clear();
  }

  #purgeCompleted(): void {
    const cutoff = Date.now() - this.#policy.keepCompletedMs;
    for (const [id, job] of this.#jobs) {
      if (job.state === 'completed' && job.completedAt! <= cutoff) this.#jobs.delete(id);
    }
  }

  #makeWaiting(job: Job): void {
    job.state = 'waiting';
    this.#waiting.push(job);
    this.#pump();
  }

  /** Hands waiting jobs to workers with a free slot; wakes the idle() waiters at 0 pending. */
  #pump(): void {
    for (const worker of this.#workers) {
      while (!worker.closed && worker.running < worker.concurrency && this.#waiting.length > 0) {
        const job = this.#waiting.shift()!;
        const done = this.#runJob(worker, job);
        worker.finished.add(done);
        void done.then(() => worker.finished.delete(done));
      }
    }
    if (this.#pending === 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  async #runJob(worker: Worker, job: Job): Promise<void> {
    job.state = 'active';
    worker.running++;
    try {
      const attempt = job.attemptsMade + 1;
      const result = await worker.receiver.processStored(job.delivery, { attempt });
      job.attemptsMade = attempt;
      this.#settle(job, verdictOf(result, this.#policy, attempt));
    } finally {
      worker.running--;
      this.#pump();
    }
  }

  /** A run's verdict applied: completed, a dead letter, or waiting for its retry. */
  #settle(job: Job, verdict: AfterRun): void {
    if (verdict.done) {
      job.state = 'completed';
      job.completedAt = Date.now();
      delete job.reason;
      this.#pending--;
      return;
    }
    job.reason = verdict.reason;
    const wait = verdict.retryInMs;
    if (wait === undefined) {
      job.state = 'failed';
      this.#pending--;
    } else if (this.#closed) {
      // Left waiting: nothing runs it any more, and no timer outlives the inbox.
      job.state = 'waiting';
    } else {
      job.state = 'delayed';
      job.timer = setTimeout(() => {
        delete job.timer;
        this.#makeWaiting(job);
      }, wait);
    }
  }
}

/** A job as {@link InboxJob} lists it. */
function listed(id: string, job: Job): InboxJob {
  const { delivery } = job;
  const listing: InboxJob = {
    id,
    event: delivery.event,
    idempotencyKey: delivery.idempotencyKey,
    state: job.state,
    attemptsMade: job.attemptsMade,
    receivedAt: delivery.receivedAt,
  };
  if (job.reason !== undefined) listing.reason = job.reason;
  if (delivery.tenant !== undefined) listing.tenant = delivery.tenant;
  return listing;
}
