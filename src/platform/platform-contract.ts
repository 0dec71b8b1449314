/**
 * The platform's facts, in one place: how long it waits for an answer, which answers count as
 * delivered, how often and after how long it tries again, and the limits of its endpoint
 * settings (docs/platform.md). The receiver's outcome table, the CLI, the testing toolkit and
 * the docs read them here; the time units every module counts in are here too.
 * @module
 */

/** One second, in ms (the units are literals, so a bundle drops the ones nothing reads). */
export const SECOND = 1000;
/** One minute, in ms. */
export const MINUTE = 60_000;
/** One hour, in ms. */
export const HOUR = 3_600_000;
/** One day, in ms. */
export const DAY = 86_400_000;

/**
 * `make()`, in a call marked pure: a table of constants no module reads is dropped from a bundle
 * (esbuild keeps any unread object literal that holds a product such as `15 * MINUTE`), which
 * keeps the core's bundle free of the tables only the CLI, the toolkit or an inbox reads.
 */
export function constants<T>(make: () => T): T {
  return make();
}

/** The answers the platform counts as delivered; any other is retried. */
export const SUCCESS_STATUSES = [200, 201, 202] as const;

/**
 * The numbers the platform delivers by, as the receiver and the simulator apply them: handy in
 * assertions.
 *
 * @example
 * ```ts
 * import { PLATFORM_LIMITS } from 'schoolhooks/testing';
 *
 * const gaps = attempts.slice(1).map((entry, i) => entry.at - attempts[i].at);
 * expect(gaps).toEqual(PLATFORM_LIMITS.retryDelaysMs);
 * ```
 */
export const PLATFORM_LIMITS = /* @__PURE__ */ constants(() => {
  /** The wait before each retry, counted from the failed attempt before it. */
  const retryDelaysMs = [11 * MINUTE, 33 * MINUTE, 77 * MINUTE, 165 * MINUTE] as const;
  return {
    /** Webhook endpoints per seller. */
    maxEndpoints: 5,
    /** Longest endpoint `url` and `note`, in characters. */
    maxFieldLength: 255,
    /** Length of a generated secretKey. */
    secretKeyLength: 64,
    /** How long the platform waits for an answer. */
    responseTimeoutMs: 15 * SECOND,
    /** The answers counted as delivered; any other is retried. */
    successStatuses: SUCCESS_STATUSES,
    /** Attempts in all: the first delivery and one more per entry of `retryDelaysMs`. */
    maxAttempts: retryDelaysMs.length + 1,
    /** The wait before each retry, counted from the failed attempt before it. */
    retryDelaysMs,
    /** From the first attempt to the last: the sum of `retryDelaysMs` (4h 46m). */
    retrySpanMs: retryDelaysMs.reduce((sum, delay) => sum + delay, 0),
    /** An endpoint with no successful delivery for this long is disabled. */
    autoDisableAfterMs: 14 * DAY,
    /** The most items one page of a list operation holds (its `take`, 1 to this). */
    maxListTake: 1000,
  } as const;
});

/** The success statuses as a sentence says them: `200, 201 or 202`. */
export const SUCCESS_STATUSES_TEXT = /* @__PURE__ */ constants(
  () => `${SUCCESS_STATUSES.slice(0, -1).join(', ')} or ${SUCCESS_STATUSES.at(-1)}`,
);

/** Whether the platform counts `status` as delivered (and stops trying). */
export function isSuccessStatus(status: number | null): boolean {
  return status !== null && (SUCCESS_STATUSES as readonly number[]).includes(status);
}
