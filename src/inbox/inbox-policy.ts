/**
 * The rules every inbox we ship applies the same way: its options checked, its policy (runs,
 * backoff, how long jobs are kept) from them, what a job does after a run, and the errors of an
 * inbox that is closed or given a second watchdog.
 * @module
 */

import { ConfigError, InboxUnavailableError } from '../errors.js';
import type { Outcome } from '../receiving/outcome.js';
import { INBOX_DEFAULTS } from '../defaults.js';
import { nextRetry, type RetryPolicy } from './retry-policy.js';
import type { StoredRunResult } from './types.js';

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
export type AfterRun =
  | { readonly done: true; readonly outcome: Outcome }
  | { readonly done: false; readonly reason: string; readonly retryInMs: number | undefined };

/**
 * The one rule every inbox applies to a run's result (run number `attempt`, 1-based): a failure
 * a retry cannot mend (an invalid payload), or the job's last run, is a dead letter now; any
 * other failure waits as the retry policy says. The reason is `outcome: message`.
 */
export function verdictOf(result: StoredRunResult, policy: RetryPolicy, attempt: number): AfterRun {
  if (result.ok) return { done: true, outcome: result.outcome };
  const retryInMs = result.retry ? nextRetry(policy, attempt) : undefined;
  return { done: false, reason: result.reason ?? result.outcome, retryInMs };
}
