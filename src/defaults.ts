/**
 * The package's defaults, in one place: what an option is when it is not given. The receiver,
 * the stores, the inboxes, the CLI, the testing toolkit and the bench read them here; the
 * platform's own numbers they are chosen against are in src/platform/platform-contract.ts.
 * @module
 */

import {
  constants,
  DAY,
  HOUR,
  MINUTE,
  PLATFORM_LIMITS,
  SECOND,
} from './platform/platform-contract.js';

/** One mebibyte, in bytes. */
const MIB = 1_048_576;

/** The receiver's defaults (`createReceiver`'s options of the same names). */
export const RECEIVER_DEFAULTS = /* @__PURE__ */ constants(
  () =>
    ({
      /** Largest body accepted, in bytes; beyond it -> 413 `too_large`. */
      maxBodyBytes: MIB,
      /** Oldest `timestamp` accepted: well past the platform's retry span (`retrySpanMs`). */
      maxEventAgeMs: 72 * HOUR,
      /** How long a completed key is remembered: at least `maxEventAgeMs`. */
      dedupTtlMs: 7 * DAY,
      /** How long a claim holds: under the platform's first retry delay. */
      leaseMs: MINUTE,
      /** How long handlers may run: under the platform's response timeout, with room for the store. */
      handlerTimeoutMs: 10 * SECOND,
      /** How far in the future a `timestamp` may lie (clock skew between the platform and us). */
      futureSkewMs: 5 * MINUTE,
      /** With a secret lookup: how long a tenant's answer is cached (a rotation takes effect after it). */
      secretCacheMs: MINUTE,
      /** With a secret lookup: tenants cached at the most. */
      secretCacheSize: 10_000,
      /** With a secret lookup: how long one may take, so lookup and handlers fit the platform's wait. */
      secretLookupTimeoutMs: 2 * SECOND,
    }) as const,
);

/** The reconciler's defaults (`createReconciler`'s options of the same names), and its records'. */
export const RECONCILE_DEFAULTS = /* @__PURE__ */ constants(
  () =>
    ({
      /**
       * Entities younger than this are left to their webhooks: the platform's retry span (its last
       * attempt comes 4h 46m after the first), and a quarter of an hour for that attempt's answer
       * and for clocks that disagree.
       */
      minAgeMs: PLATFORM_LIMITS.retrySpanMs + 15 * MINUTE,
      /** How much further back than `since` paid invoices are listed (listed by issue date). */
      lookbackMs: 7 * DAY,
      /** How long one reconcile handler may run. */
      handlerTimeoutMs: MINUTE,
      /** How long one recovery holds its entity's record: past its handler's timeout. */
      leaseMs: 2 * MINUTE,
      /** How long a run waits for entities another claim holds before it reports them in flight. */
      inFlightWaitMs: 30 * SECOND,
      /**
       * How long a store keeps the record of a handled entity (by a webhook or a run): a run's
       * window may not reach back further.
       */
      recordTtlMs: 35 * DAY,
    }) as const,
);

/** memoryStore's defaults. */
export const MEMORY_STORE_DEFAULTS = /* @__PURE__ */ constants(
  () =>
    ({
      /** Keys kept at the most. */
      max: 100_000,
    }) as const,
);

/** redisStore's defaults. */
export const REDIS_STORE_DEFAULTS = /* @__PURE__ */ constants(
  () =>
    ({
      /** Prepended to every key. */
      prefix: 'schoolhooks:',
      /** The longest one store call may take. */
      commandTimeoutMs: SECOND,
    }) as const,
);

/** postgresStore's defaults. */
export const POSTGRES_STORE_DEFAULTS = /* @__PURE__ */ constants(
  () =>
    ({
      /** The table of the keys. */
      table: 'schoolhooks_deliveries',
      /** The longest one store call may take. */
      connectTimeoutMs: SECOND,
      /** How often, at most, expired keys are deleted. */
      sweepEveryMs: MINUTE,
    }) as const,
);

/** Every inbox's defaults (memoryInbox, bullmqInbox, pgBossInbox). */
export const INBOX_DEFAULTS = /* @__PURE__ */ constants(
  () =>
    ({
      /** Runs in all, the first included (the one retry policy, src/inbox/retry-policy.ts). */
      attempts: 10,
      /** The wait before the first retry, doubling after each. */
      backoffMs: 30 * SECOND,
      /** How long a completed job is kept. */
      keepCompletedMs: DAY,
      /** How long a dead letter is kept for `retryFailed`. */
      keepFailedMs: 30 * DAY,
    }) as const,
);

/** The defaults of the inboxes on a queue (bullmqInbox, pgBossInbox), beside {@link INBOX_DEFAULTS}. */
export const QUEUE_DEFAULTS = /* @__PURE__ */ constants(
  () =>
    ({
      /** The queue's name (BullMQ's and pg-boss's). */
      queueName: 'schoolhooks',
      /** The longest `enqueue` may take before the delivery is answered 503 `inbox_unavailable`. */
      enqueueTimeoutMs: 2 * SECOND,
    }) as const,
);

/** bullmqInbox's own defaults, beside {@link INBOX_DEFAULTS}. */
export const BULLMQ_DEFAULTS = /* @__PURE__ */ constants(
  () =>
    ({
      /** BullMQ's key prefix (BullMQ's own default). */
      prefix: 'bull',
    }) as const,
);

/** The API client's defaults (`createSchoolApi`). */
export const API_CLIENT_DEFAULTS = /* @__PURE__ */ constants(
  () =>
    ({
      /** How long one attempt may take, answer body included. */
      timeoutMs: 30 * SECOND,
      /** Retries of a failed call, of the failures its kind retries (src/api/retry-delay.ts). */
      retries: 2,
      /** Items per page of a list: the platform's most, so the fewest calls against its rate limit. */
      listTake: PLATFORM_LIMITS.maxListTake,
      /** How long one page of a list may wait out `429 Rate` answers, in all. */
      listRateLimitWaitMs: 10 * MINUTE,
      /** How long `exportQuery` waits between two reads of an export's result. */
      exportIntervalMs: SECOND,
      /** How long `exportQuery` waits for an export to finish, from its start. */
      exportMaxWaitMs: 10 * MINUTE,
    }) as const,
);

/** The inspector's defaults (`schoolhooks listen --ui`). */
export const INSPECTOR_DEFAULTS = /* @__PURE__ */ constants(
  () =>
    ({
      /** Deliveries kept in memory. */
      keep: 500,
    }) as const,
);

/** pgBossInbox's own defaults, beside {@link INBOX_DEFAULTS}. */
export const PG_BOSS_DEFAULTS = /* @__PURE__ */ constants(
  () =>
    ({
      /** The Postgres schema of pg-boss's tables (pg-boss's own default). */
      schema: 'pgboss',
      /** How long a run may hold a job before pg-boss hands it out again (pg-boss's own default). */
      expireInMs: 15 * MINUTE,
      /** How long a worker with nothing to run waits before it asks again. */
      pollIntervalMs: SECOND,
    }) as const,
);

/** The watchdog's defaults (`createWatchdog`'s options of the same names), and its notes'. */
export const WATCHDOG_DEFAULTS = /* @__PURE__ */ constants(
  () =>
    ({
      /** No 2xx answer for this long, while attempts come in, is `failing`. */
      failingAfterMs: 30 * MINUTE,
      /** Listed entities older than this that no delivery recorded are `silent`. */
      silentAfterMs: 30 * MINUTE,
      /** How far back the lists are read for silence. */
      silentWindowMs: DAY,
      /** A receiver writes its answers to its store this often (one call), or at writeAtNotes. */
      flushEveryMs: SECOND,
      /**
       * How long a delivery answered non-2xx is kept: the platform's retry span (its last attempt
       * comes 4h 46m after the first) and a quarter hour for that attempt's answer.
       */
      keepFailingMs: PLATFORM_LIMITS.retrySpanMs + 15 * MINUTE,
      /**
       * How long a tenant's last success, last attempt and failing time are kept after its last
       * write: the platform's disable span (14 days without a success) and a day, so an endpoint
       * that hears nothing still knows, days later, when it is disabled and since when it fails.
       */
      keepSummaryMs: PLATFORM_LIMITS.autoDisableAfterMs + DAY,
      /** The most deliveries answered non-2xx kept per tenant. */
      maxFailing: 1000,
      /** A receiver writes its answers at once when this many wait, before flushEveryMs. */
      writeAtNotes: 1000,
      /** The most answers a process holds while its store cannot take them (oldest go first). */
      maxPending: 10_000,
    }) as const,
);
