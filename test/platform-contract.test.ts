// The platform's facts (docs/platform.md) and the package's defaults (docs/receiving.md), each
// written once in src/platform/platform-contract.ts and src/defaults.ts: asserted here against the
// numbers the platform publishes and the README promises, never against a formula of the code.
import { describe, expect, it } from 'vitest';
import {
  API_CLIENT_DEFAULTS,
  BULLMQ_DEFAULTS,
  INBOX_DEFAULTS,
  INSPECTOR_DEFAULTS,
  MEMORY_STORE_DEFAULTS,
  PG_BOSS_DEFAULTS,
  POSTGRES_STORE_DEFAULTS,
  QUEUE_DEFAULTS,
  RECEIVER_DEFAULTS,
  REDIS_STORE_DEFAULTS,
} from '../src/defaults.js';
import { DEFAULT_RETRY_POLICY } from '../src/index.js';
import {
  DAY,
  HOUR,
  isSuccessStatus,
  MINUTE,
  PLATFORM_LIMITS,
  SECOND,
  SUCCESS_STATUSES_TEXT,
} from '../src/platform/platform-contract.js';
import { PLATFORM_LIMITS as TESTING_LIMITS } from '../src/testing/index.js';

describe("the platform's facts", () => {
  it('count time in milliseconds', () => {
    expect([SECOND, MINUTE, HOUR, DAY]).toEqual([1_000, 60_000, 3_600_000, 86_400_000]);
  });

  it('wait 15 s for an answer', () => {
    expect(PLATFORM_LIMITS.responseTimeoutMs).toBe(15_000);
  });

  it('try 5 times, 11, 33, 77 and 165 minutes after each failed attempt, 4h 46m in all', () => {
    expect(PLATFORM_LIMITS.maxAttempts).toBe(5);
    expect(PLATFORM_LIMITS.retryDelaysMs).toEqual([660_000, 1_980_000, 4_620_000, 9_900_000]);
    expect(PLATFORM_LIMITS.retrySpanMs).toBe((4 * 60 + 46) * 60_000);
  });

  it('count 200, 201 and 202 as delivered, and retry every other answer', () => {
    for (const status of [200, 201, 202]) expect(isSuccessStatus(status)).toBe(true);
    expect(SUCCESS_STATUSES_TEXT).toBe('200, 201 or 202');
    for (const status of [null, 100, 203, 204, 206, 301, 304, 400, 401, 409, 413, 422, 500, 503]) {
      expect(isSuccessStatus(status)).toBe(false);
    }
  });

  it('limit the endpoints: 5 per seller, 255 characters a field, 64-character secrets, off after 14 days', () => {
    expect(PLATFORM_LIMITS).toMatchObject({
      maxEndpoints: 5,
      maxFieldLength: 255,
      secretKeyLength: 64,
      autoDisableAfterMs: 14 * 86_400_000,
    });
  });

  it('are what schoolhooks/testing exports', () => {
    expect(TESTING_LIMITS).toBe(PLATFORM_LIMITS);
  });
});

describe("the package's defaults", () => {
  it('give the receiver 1 MiB, 72 h, 7 days, a 60 s lease, 10 s of handlers and 5 min of skew; a secret lookup 60 s of cache, 10 000 tenants and 2 s', () => {
    expect(RECEIVER_DEFAULTS).toEqual({
      maxBodyBytes: 1_048_576,
      maxEventAgeMs: 72 * 3_600_000,
      dedupTtlMs: 7 * 86_400_000,
      leaseMs: 60_000,
      handlerTimeoutMs: 10_000,
      futureSkewMs: 300_000,
      secretCacheMs: 60_000,
      secretCacheSize: 10_000,
      secretLookupTimeoutMs: 2_000,
    });
  });

  it("fit the platform's rules (docs/stores.md)", () => {
    const { leaseMs, handlerTimeoutMs, maxEventAgeMs, dedupTtlMs } = RECEIVER_DEFAULTS;
    // The lookup, the claim, the handlers and the completion answer within the platform's 15 s.
    const { secretLookupTimeoutMs } = RECEIVER_DEFAULTS;
    expect(
      secretLookupTimeoutMs + 2 * REDIS_STORE_DEFAULTS.commandTimeoutMs + handlerTimeoutMs,
    ).toBeLessThan(15_000);
    // A lease ends before the platform's first retry, 11 minutes later.
    expect(leaseMs).toBeLessThan(11 * 60_000);
    // A retry, the last one 4h 46m after the first attempt, is never stale, nor forgotten.
    expect(maxEventAgeMs).toBeGreaterThan(286 * 60_000);
    expect(dedupTtlMs).toBeGreaterThanOrEqual(maxEventAgeMs);
  });

  it('give the stores, the inboxes, the API client and the inspector the values their options document', () => {
    expect(MEMORY_STORE_DEFAULTS).toEqual({ max: 100_000 });
    expect(REDIS_STORE_DEFAULTS).toEqual({ prefix: 'schoolhooks:', commandTimeoutMs: 1_000 });
    expect(POSTGRES_STORE_DEFAULTS).toEqual({
      table: 'schoolhooks_deliveries',
      connectTimeoutMs: 1_000,
      sweepEveryMs: 60_000,
    });
    expect(INBOX_DEFAULTS).toEqual({
      attempts: 10,
      backoffMs: 30_000,
      keepCompletedMs: 86_400_000,
      keepFailedMs: 30 * 86_400_000,
    });
    expect(QUEUE_DEFAULTS).toEqual({ queueName: 'schoolhooks', enqueueTimeoutMs: 2_000 });
    expect(DEFAULT_RETRY_POLICY).toEqual({ attempts: 10, backoffMs: 30_000 });
    expect(BULLMQ_DEFAULTS).toEqual({ prefix: 'bull' });
    expect(API_CLIENT_DEFAULTS).toEqual({
      timeoutMs: 30_000,
      retries: 2,
      listTake: 1000,
      listRateLimitWaitMs: 10 * 60_000,
      exportIntervalMs: 1_000,
      exportMaxWaitMs: 10 * 60_000,
    });
    expect(INSPECTOR_DEFAULTS).toEqual({ keep: 500 });
    expect(PG_BOSS_DEFAULTS).toEqual({
      schema: 'pgboss',
      expireInMs: 15 * 60_000,
      pollIntervalMs: 1_000,
    });
  });
});
