/**
 * What the inboxes we ship share beyond {@link Inbox}: workers, dead letters and replay.
 * @module
 */

import { ConfigError, InboxUnavailableError } from '../errors.js';
import type { Outcome } from '../receiving/outcome.js';
import type { Receiver } from '../receiving/receiver.js';
import { INBOX_DEFAULTS } from '../defaults.js';
import { nextRetry, type RetryPolicy } from './retry-policy.js';
import type { InboxReconcileOptions, ScheduledReconciler } from './reconcile-schedule.js';
import type { ReconcileReport } from '../reconcile/types.js';
import type { InboxWatchOptions, WatchedWatchdog } from './watch-schedule.js';
import type { Inbox, StoredRunResult } from './types.js';

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

/** An {@link Inbox} with its own workers: `memoryInbox()`, `bullmqInbox()` and `pgBossInbox()`. */
export interface ManagedInbox extends Inbox {
  /** Run the receiver's handlers for stored deliveries, retrying failures with backoff. */
  work(receiver: Receiver, options?: InboxWorkOptions): InboxWorker;
  /** Put dead letters (of one event, or all) back to run again; resolves to how many. */
  retryFailed(filter?: { event?: string }): Promise<number>;
  /** The jobs in one state, or in every state. */
  jobs(filter?: { state?: InboxJobState }): Promise<InboxJob[]>;
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
  /** Stop the workers and let go of the inbox's resources. */
  close(): Promise<void>;
}

/**
 * Check the options every inbox shares (its runs and its durations in ms), naming `factory` in
 * the {@link ConfigError}.
 */
export function checkInboxOptions(
  factory: string,
  { attempts, ...durations }: { attempts: number } & Record<string, number>,
): void {
  if (!Number.isInteger(attempts) || attempts < 1) {
    throw new ConfigError(`${factory}: attempts must be a positive integer`);
  }
  for (const [name, value] of Object.entries(durations)) {
    if (!(value >= 0) || !Number.isFinite(value)) {
      throw new ConfigError(`${factory}: ${name} must be a number of ms, 0 or more`);
    }
  }
}

/** How many runs a job gets, the first retry's wait, and how long finished jobs are kept. */
export interface InboxPolicy extends RetryPolicy {
  /** How long a completed job is kept, in ms. */
  keepCompletedMs: number;
  /** How long a dead letter is kept for `retryFailed`, in ms. */
  keepFailedMs: number;
}

/**
 * An inbox's policy from its options, each one given or `INBOX_DEFAULTS` (src/defaults.ts), checked as
 * {@link checkInboxOptions} checks them.
 */
export function inboxPolicy(factory: string, options: Partial<InboxPolicy>): InboxPolicy {
  const given = <K extends keyof InboxPolicy>(key: K): InboxPolicy[K] =>
    options[key] === undefined ? INBOX_DEFAULTS[key] : options[key];
  const policy: InboxPolicy = {
    attempts: given('attempts'),
    backoffMs: given('backoffMs'),
    keepCompletedMs: given('keepCompletedMs'),
    keepFailedMs: given('keepFailedMs'),
  };
  checkInboxOptions(factory, { ...policy });
  return policy;
}

/** What `enqueue` rejects with once its inbox is closed (the receiver answers 503 for it). */
export function inboxClosed(): InboxUnavailableError {
  return new InboxUnavailableError('the inbox is closed');
}

/** The `ConfigError` of a second `watch` on one inbox of `factory`. */
export function secondWatchdog(factory: string): ConfigError {
  return new ConfigError(`${factory}: watch runs one watchdog per inbox; close it first`);
}

/** The `ConfigError` of `work` once the inbox of `factory` is closed. */
export function closedForWork(factory: string): ConfigError {
  return new ConfigError(`${factory}: the inbox is closed`);
}

/** Check a worker's `concurrency`, naming `factory` in the {@link ConfigError}. */
export function checkConcurrency(factory: string, concurrency: number): void {
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new ConfigError(`${factory}: concurrency must be a positive integer`);
  }
}

/**
 * What a job does after one run: done with its outcome, or failed with a reason and the wait
 * before its next run (`undefined`: a dead letter now).
 */
export type RunVerdict =
  | { readonly done: true; readonly outcome: Outcome }
  | { readonly done: false; readonly reason: string; readonly retryInMs: number | undefined };

/**
 * The one rule every inbox applies to a run's result (run number `attempt`, 1-based): a failure
 * a retry cannot mend (an invalid payload), or the job's last run, is a dead letter now; any
 * other failure waits as the retry policy says. The reason is `outcome: message`.
 */
export function verdictOf(
  result: StoredRunResult,
  policy: RetryPolicy,
  attempt: number,
): RunVerdict {
  if (result.ok) return { done: true, outcome: result.outcome };
  const retryInMs = result.retry ? nextRetry(policy, attempt) : undefined;
  return { done: false, reason: result.reason ?? result.outcome, retryInMs };
}
