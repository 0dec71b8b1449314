/**
 * An inbox inside one process, with no dependency: for tests, the demo and single-process
 * tools. It keeps nothing across a restart; `bullmqInbox` (`schoolhooks/bullmq`) does.
 * @module
 */

import type { Receiver } from '../receiver.js';
import {
  checkConcurrency,
  closedForWork,
  inboxClosed,
  inboxPolicy,
  type InboxJob,
  type InboxJobState,
  type InboxWorker,
  type InboxWorkOptions,
  type ManagedInbox,
  verdictOf,
} from './managed.js';
import type { StoredDelivery } from './types.js';

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
  const { attempts, backoffMs, keepCompletedMs } = inboxPolicy('memoryInbox', options);
  const jobs = new Map<string, Job>();
  const waiting: Job[] = [];
  const workers = new Set<Worker>();
  let idleWaiters: (() => void)[] = [];
  let closed = false;
  /** Jobs waiting, delayed or running: the inbox is idle at 0. */
  let pending = 0;

  function purgeCompleted(): void {
    const cutoff = Date.now() - keepCompletedMs;
    for (const [id, job] of jobs) {
      if (job.state === 'completed' && job.completedAt! <= cutoff) jobs.delete(id);
    }
  }

  function makeWaiting(job: Job): void {
    job.state = 'waiting';
    waiting.push(job);
    pump();
  }

  function pump(): void {
    for (const worker of workers) {
      while (!worker.closed && worker.running < worker.concurrency && waiting.length > 0) {
        const job = waiting.shift()!;
        const done = runJob(worker, job);
        worker.finished.add(done);
        void done.then(() => worker.finished.delete(done));
      }
    }
    if (pending === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  async function runJob(worker: Worker, job: Job): Promise<void> {
    job.state = 'active';
    worker.running++;
    try {
      const attempt = job.attemptsMade + 1;
      const result = await worker.receiver.processStored(job.delivery, { attempt });
      const verdict = verdictOf(result, { attempts, backoffMs }, attempt);
      job.attemptsMade = attempt;
      if (verdict.done) {
        job.state = 'completed';
        job.completedAt = Date.now();
        delete job.reason;
        pending--;
      } else {
        job.reason = verdict.reason;
        const wait = verdict.retryInMs;
        if (wait === undefined) {
          job.state = 'failed';
          pending--;
        } else if (closed) {
          // Left waiting: nothing runs it any more, and no timer outlives the inbox.
          job.state = 'waiting';
        } else {
          job.state = 'delayed';
          job.timer = setTimeout(() => {
            delete job.timer;
            makeWaiting(job);
          }, wait);
        }
      }
    } finally {
      worker.running--;
      pump();
    }
  }

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
    return listing;
  }

  return {
    async enqueue(delivery) {
      if (closed) throw inboxClosed();
      purgeCompleted();
      // The same event stored twice (another endpoint, a retry after a lost answer) is one job.
      if (jobs.has(delivery.idempotencyKey)) return;
      const job: Job = { delivery: { ...delivery }, state: 'waiting', attemptsMade: 0 };
      jobs.set(delivery.idempotencyKey, job);
      pending++;
      makeWaiting(job);
    },

    work(receiver, { concurrency = 1 }: InboxWorkOptions = {}): InboxWorker {
      if (closed) throw closedForWork('memoryInbox');
      checkConcurrency('memoryInbox', concurrency);
      const worker: Worker = {
        receiver,
        concurrency,
        running: 0,
        closed: false,
        finished: new Set(),
      };
      workers.add(worker);
      pump();
      return {
        async close() {
          worker.closed = true;
          workers.delete(worker);
          await Promise.all(worker.finished);
        },
      };
    },

    async retryFailed({ event }: { event?: string } = {}) {
      let count = 0;
      for (const job of jobs.values()) {
        if (job.state !== 'failed' || (event !== undefined && job.delivery.event !== event)) {
          continue;
        }
        job.attemptsMade = 0;
        count++;
        pending++;
        makeWaiting(job);
      }
      return count;
    },

    async jobs({ state }: { state?: InboxJobState } = {}) {
      const list: InboxJob[] = [];
      for (const [id, job] of jobs) {
        if (state === undefined || job.state === state) list.push(listed(id, job));
      }
      return list;
    },

    idle() {
      if (pending === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },

    async close() {
      closed = true;
      for (const job of jobs.values()) {
        if (job.timer !== undefined) clearTimeout(job.timer);
      }
      await Promise.all(
        [...workers].map((worker) => {
          worker.closed = true;
          return Promise.all(worker.finished);
        }),
      );
      workers.clear();
    },
  };
}
