/**
 * A receiver's health from what its store kept of its answers (docs/watchdog.md), by the
 * platform's rules: a delivery answered non-2xx is lost once its retries are over (4h 46m after
 * its first attempt, src/platform/platform-contract.ts), and an endpoint with no success for 14 days is
 * disabled.
 * @module
 */

import { PLATFORM_LIMITS } from '../platform/platform-contract.js';
import type { FailingDelivery, WatchState } from './types.js';

/**
 * How a receiver is doing, worst first: `failing` (no 2xx answer for longer than
 * `failingAfterMs` while attempts come in), `at_risk` (a delivery answered non-2xx whose retries
 * are not over), `silent` (the platform's lists hold entities no delivery recorded), `ok`.
 */
export type HealthStatus = 'ok' | 'at_risk' | 'failing' | 'silent';

/** A delivery lost at `givesUpAt` unless a retry of it succeeds. */
export interface AtRiskDelivery {
  readonly idempotencyKey: string;
  readonly event: string;
  /** Its first attempt answered non-2xx (ISO date). */
  readonly firstAttemptAt: string;
  /** How many of its attempts this receiver answered non-2xx, in all its processes. */
  readonly attemptsSeen: number;
  /** When the platform makes its last attempt: its first attempt and the retry span (ISO date). */
  readonly givesUpAt: string;
}

/** What the lists show that no delivery recorded. */
export interface Silence {
  /** How many entities (paid invoices, accesses) older than `silentAfterMs` no delivery recorded. */
  readonly entities: number;
  /** The oldest of them (ISO date). */
  readonly oldestAt: string;
}

/** A watchdog's answer. Times are ISO dates. */
export interface Health {
  readonly status: HealthStatus;
  readonly lastSuccessAt?: string;
  readonly lastAttemptAt?: string;
  /** Since when no answer was 2xx, while the endpoint is failing. */
  readonly failingSince?: string;
  /** When the platform disables the endpoint if nothing succeeds: the last success and 14 days. */
  readonly disablesAt?: string;
  /** The deliveries answered non-2xx whose retries are not over, oldest first. */
  readonly atRisk: readonly AtRiskDelivery[];
  /** With the API: what the lists hold that no delivery recorded. */
  readonly silent?: Silence;
}

/** What {@link healthOf} reads besides the state. */
export interface HealthRules {
  readonly now: number;
  /** No 2xx answer for this long while attempts come in is `failing`. */
  readonly failingAfterMs: number;
  /** What the lists showed, when the watchdog reads them. */
  readonly silence?: { readonly entities: number; readonly oldestAt: number } | undefined;
}

const iso = (time: number): string => new Date(time).toISOString();

/**
 * Whether a failing delivery's retries are not over: the platform makes `maxAttempts` in all, the
 * last `retrySpanMs` after the first, and waits `responseTimeoutMs` for that last answer.
 */
export function isAtRisk(failing: FailingDelivery, now: number): boolean {
  const { maxAttempts, retrySpanMs, responseTimeoutMs } = PLATFORM_LIMITS;
  return (
    failing.attemptsSeen < maxAttempts &&
    now <= failing.firstAttemptAt + retrySpanMs + responseTimeoutMs
  );
}

/** The health that `state` (and the lists' `silence`) says, at `now`. */
export function healthOf(state: WatchState, { now, failingAfterMs, silence }: HealthRules): Health {
  const { lastSuccessAt, lastAttemptAt, failingSince } = state;
  const atRisk = state.failing
    .filter((failing) => isAtRisk(failing, now))
    .map((failing): AtRiskDelivery => ({
      idempotencyKey: failing.key,
      event: failing.event,
      firstAttemptAt: iso(failing.firstAttemptAt),
      attemptsSeen: failing.attemptsSeen,
      givesUpAt: iso(failing.firstAttemptAt + PLATFORM_LIMITS.retrySpanMs),
    }));
  const failing = failingSince !== undefined && now - failingSince >= failingAfterMs;
  const silent = silence !== undefined && silence.entities > 0;
  const status: HealthStatus = failing
    ? 'failing'
    : atRisk.length > 0
      ? 'at_risk'
      : silent
        ? 'silent'
        : 'ok';
  return {
    status,
    ...(lastSuccessAt === undefined ? {} : { lastSuccessAt: iso(lastSuccessAt) }),
    ...(lastAttemptAt === undefined ? {} : { lastAttemptAt: iso(lastAttemptAt) }),
    ...(failingSince === undefined ? {} : { failingSince: iso(failingSince) }),
    ...(lastSuccessAt === undefined
      ? {}
      : { disablesAt: iso(lastSuccessAt + PLATFORM_LIMITS.autoDisableAfterMs) }),
    atRisk,
    ...(silent ? { silent: { entities: silence.entities, oldestAt: iso(silence.oldestAt) } } : {}),
  };
}
