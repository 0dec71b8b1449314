// The one retry policy every inbox reads, and the curve the API client's backoff shares.
import { describe, expect, it } from 'vitest';
import { BASE_DELAY_MS, MAX_DELAY_MS, RETRY_ON, retryDelay } from '../src/api/retry-delay.js';
import { ServerError } from '../src/api/errors.js';
import {
  DEFAULT_RETRY_POLICY,
  exponentialDelay,
  nextRetry,
  type RetryPolicy,
} from '../src/index.js';
import { verdictOf } from '../src/inbox/inbox-policy.js';

describe('the retry policy', () => {
  it('waits backoffMs after the first failure and twice as long after each further one', () => {
    expect([1, 2, 3, 4].map((failures) => exponentialDelay(30_000, failures))).toEqual([
      30_000, 60_000, 120_000, 240_000,
    ]);
  });

  it('never waits longer than its ceiling', () => {
    expect(exponentialDelay(250, 10, 5_000)).toBe(5_000);
  });

  it('gives a job `attempts` runs, then makes it a dead letter', () => {
    const policy: RetryPolicy = { attempts: 3, backoffMs: 1_000 };
    expect([1, 2, 3].map((attempt) => nextRetry(policy, attempt))).toEqual([
      1_000,
      2_000,
      undefined,
    ]);
  });

  it('gives every inbox 10 runs and 30 s before the first retry by default', () => {
    expect(DEFAULT_RETRY_POLICY).toEqual({ attempts: 10, backoffMs: 30_000 });
  });

  it('is the curve of the API client, from BASE_DELAY_MS up to MAX_DELAY_MS', () => {
    const error = new ServerError('bad gateway', { status: 502, code: 'server_error' });
    const waits = [0, 1, 2, 3, 4, 5].map((attempt) =>
      retryDelay(error, attempt, RETRY_ON.createOrGet),
    );
    expect(waits).toEqual(
      [0, 1, 2, 3, 4, 5].map((n) => Math.min(BASE_DELAY_MS * 2 ** n, MAX_DELAY_MS)),
    );
  });
});

describe('verdictOf: what a job does after one run, in every inbox', () => {
  const policy: RetryPolicy = { attempts: 3, backoffMs: 1_000 };

  it('is done with the outcome of a run that succeeded', () => {
    const result = { outcome: 'processed', ok: true, retry: false } as const;
    expect(verdictOf(result, policy, 3)).toEqual({ done: true, outcome: 'processed' });
  });

  it('waits as the policy says after a failure a retry may mend, until the last run', () => {
    const failed = {
      outcome: 'handler_failed',
      ok: false,
      retry: true,
      reason: 'handler_failed: x',
    } as const;
    expect(verdictOf(failed, policy, 1)).toEqual({
      done: false,
      reason: 'handler_failed: x',
      retryInMs: 1_000,
    });
    expect(verdictOf(failed, policy, 2)).toEqual({
      done: false,
      reason: 'handler_failed: x',
      retryInMs: 2_000,
    });
    expect(verdictOf(failed, policy, 3)).toEqual({
      done: false,
      reason: 'handler_failed: x',
      retryInMs: undefined,
    });
  });

  it('dead-letters at once what no retry can mend, naming the outcome when there is no message', () => {
    const invalid = { outcome: 'invalid_payload', ok: false, retry: false } as const;
    expect(verdictOf(invalid, policy, 1)).toEqual({
      done: false,
      reason: 'invalid_payload',
      retryInMs: undefined,
    });
  });
});
