/**
 * What the inboxes we ship are beyond {@link Inbox}, in three parts as BullMQ has its Queue, its
 * Worker and its JobScheduler: the producer (`enqueue`, the {@link Inbox} a receiver is given), the
 * workers ({@link InboxWorkers}: handlers, reconcile runs, watchdog checks) and the admin
 * ({@link InboxAdmin}: jobs and dead letters). A {@link ManagedInbox} is all three; code that needs
 * one part takes that part. The rules the three share are in inbox-policy.ts.
 * @module
 */

import type { Receiver } from '../receiving/receiver.js';
import type { InboxReconcileOptions, ScheduledReconciler } from './reconcile-schedule.js';
import type { ReconcileReport } from '../reconcile/types.js';
import type { InboxWatchOptions, WatchedWatchdog } from './watch-schedule.js';
import type { Inbox } from './types.js';

/** Where a job is: waiting or delayed for a run, running, done, or a dead letter (`failed`). */
export type InboxJobState = 'waiting' | 'delayed' | 'active' | 'completed' | 'failed';

/** One stored delivery as an inbox lists it. Never holds the signature or the body. */
export interface InboxJob {
  /** The job's id in the inbox (derived from the idempotencyKey). */
  id: string;
  event: string;
  idempotencyKey: string;
  /** The tenant its route named (many schools on one endpoint), if any. */
  tenant?: string;
  state: InboxJobState;
  /** Runs of the handlers made so far. */
  attemptsMade: number;
  /** Why the last run failed: `outcome: message` (for a dead letter, why it is one). */
  reason?: string;
  /** When the receiver stored it, ISO 8601. */
  receivedAt: string;
}

/**
 * Options of `getJob` and `retryJob` (`bullmqInbox`, `pgBossInbox`): which delivery of an
 * idempotencyKey is meant.
 */
export interface InboxJobLookup {
  /**
   * The tenant whose delivery of the idempotencyKey is meant (many schools on one endpoint): the
   * same key under two tenants is two jobs, so a tenant's job is found by its key only with its
   * tenant. Without it, `idOrKey` is a job's id, or the key of a delivery without a tenant.
   */
  tenant?: string | undefined;
}

/** Options of {@link ManagedInbox.work}. */
export interface InboxWorkOptions {
  /** Jobs run at once by this worker. Default 1. */
  concurrency?: number;
}

/** A running worker. */
export interface InboxWorker {
  /** Take no new job, and resolve once the running ones have finished. */
  close(): Promise<void>;
}

/** The workers of an inbox: what runs stored deliveries, reconcile runs and watchdog checks. */
export interface InboxWorkers {
  /** Run the receiver's handlers for stored deliveries, retrying failures with backoff. */
  work(receiver: Receiver, options?: InboxWorkOptions): InboxWorker;
  /**
   * Run a reconciler (`createReconciler` of `schoolhooks/reconcile`) every `options.every`,
   * one run at a time across every process of this inbox, until the returned worker is
   * closed. A run that throws is logged and the next tick runs again.
   */
  reconcile<R extends ReconcileReport = ReconcileReport>(
    reconciler: ScheduledReconciler<R>,
    options: InboxReconcileOptions<R>,
  ): InboxWorker;
  /**
   * Check a watchdog (`createWatchdog` of `schoolhooks/watchdog`) every `options.every`, one
   * check a tick across every process of this inbox, and hand `options.onAlert` the health of
   * each check that is not `ok` (at every tick while it is not), until the returned worker or
   * the inbox is closed. One watchdog per inbox.
   *
   * @example
   * ```ts
   * const watchdog = createWatchdog({ receiver });
   * inbox.watch(watchdog, { every: '5m', onAlert: (health) => page(health.status, health) });
   * ```
   */
  watch(watchdog: WatchedWatchdog, options: InboxWatchOptions): InboxWorker;
}

/** The admin of an inbox: its jobs, and its dead letters put back to run. */
export interface InboxAdmin {
  /** The jobs in one state, or in every state. */
  jobs(filter?: { state?: InboxJobState }): Promise<InboxJob[]>;
  /** Put dead letters (of one event, or all) back to run again; resolves to how many. */
  retryFailed(filter?: { event?: string }): Promise<number>;
}

/** Single jobs of an inbox that keeps them by id (BullMQ's, pg-boss's), `J` being its jobs. */
export interface InboxJobAdmin<J extends InboxJob = InboxJob> {
  /**
   * One job, by its id or by the idempotencyKey it was derived from; a tenant's job by its key
   * and `{ tenant }`.
   */
  getJob(idOrKey: string, options?: InboxJobLookup): Promise<J | undefined>;
  /** Put one dead letter back to run again (named as `getJob` names it); false when there is none. */
  retryJob(idOrKey: string, options?: InboxJobLookup): Promise<boolean>;
}

/**
 * An {@link Inbox} with its own workers and admin: `memoryInbox()`, `bullmqInbox()` and
 * `pgBossInbox()`.
 */
export interface ManagedInbox extends Inbox, InboxWorkers, InboxAdmin {
  /** Stop the workers and let go of the inbox's resources. */
  close(): Promise<void>;
}
