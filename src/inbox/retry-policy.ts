/**
 * The one retry policy: how many runs a stored delivery gets and how long it waits between
 * them. memoryInbox and pgBossInbox compute their waits here (pg-boss's own backoff counts whole
 * seconds and adds jitter: src/inbox/pg-boss-tables.ts); bullmqInbox hands the same two numbers
 * to BullMQ, whose built-in exponential backoff is this curve (src/inbox/bullmq.ts); the API
 * client's backoff uses the curve too.
 * @module
 */

import { INBOX_DEFAULTS } from '../defaults.js';

/** How many runs a job gets, and the wait before its first retry (doubling after each). */
export interface RetryPolicy {
  /** Runs in all, the first included; after the last failed one the job is a dead letter. */
  readonly attempts: number;
  /** The wait before the first retry; each further retry waits twice as long as the one before. */
  readonly backoffMs: number;
}

/**
 * The inboxes' defaults (src/defaults.ts): 10 runs, 30 s before the first retry, about 4 h 16 min
 * from the first failure to the last run, a span like the platform's own retries
 * (`PLATFORM_LIMITS.retrySpanMs` in src/platform/platform-contract.ts).
 */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  attempts: INBOX_DEFAULTS.attempts,
  backoffMs: INBOX_DEFAULTS.backoffMs,
};

/**
 * The wait after `failures` failed tries: `baseMs` after the first, doubling each time, never
 * more than `maxMs`.
 *
 * @example
 * ```ts
 * exponentialDelay(30_000, 1); // 30 000
 * exponentialDelay(30_000, 3); // 120 000
 * exponentialDelay(250, 10, 5_000); // 5 000
 * ```
 */
export function exponentialDelay(baseMs: number, failures: number, maxMs = Infinity): number {
  return Math.min(baseMs * 2 ** Math.max(0, failures - 1), maxMs);
}

/**
 * What a job does after its run number `attempt` failed with a failure a retry may mend: the
 * wait before the next run, or `undefined` when it has had every run (a dead letter now).
 *
 * @example
 * ```ts
 * const wait = nextRetry(DEFAULT_RETRY_POLICY, job.attemptsMade);
 * if (wait === undefined) await deadLetter(job);
 * else await job.retryIn(wait);
 * ```
 */
export function nextRetry(
  { attempts, backoffMs }: RetryPolicy,
  attempt: number,
): number | undefined {
  return attempt >= attempts ? undefined : exponentialDelay(backoffMs, attempt);
}
