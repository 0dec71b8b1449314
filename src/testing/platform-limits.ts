/**
 * The platform's delivery limits (docs/platform.md#limits), in one place.
 * @module
 */

const MINUTE = 60_000;

/**
 * The numbers the platform delivers by, as the simulator applies them: handy in assertions.
 *
 * @example
 * ```ts
 * import { PLATFORM_LIMITS } from 'schoolhooks/testing';
 *
 * const gaps = attempts.slice(1).map((entry, i) => entry.at - attempts[i].at);
 * expect(gaps).toEqual(PLATFORM_LIMITS.retryDelaysMs);
 * ```
 */
export const PLATFORM_LIMITS = {
  /** Webhook endpoints per seller. */
  maxEndpoints: 5,
  /** Longest endpoint `url` and `note`, in characters. */
  maxFieldLength: 255,
  /** Length of a generated secretKey. */
  secretKeyLength: 64,
  /** How long the platform waits for an answer. */
  responseTimeoutMs: 15_000,
  /** The answers counted as delivered; any other is retried. */
  successStatuses: [200, 201, 202],
  /** Attempts in all: the first delivery and up to four retries. */
  maxAttempts: 5,
  /** The wait before each retry, counted from the failed attempt before it (4 h 46 min in all). */
  retryDelaysMs: [11 * MINUTE, 33 * MINUTE, 77 * MINUTE, 165 * MINUTE],
  /** An endpoint with no successful delivery for this long is disabled. */
  autoDisableAfterMs: 14 * 24 * 60 * MINUTE,
} as const;

/** Whether the platform counts `status` as delivered. */
export function isSuccessStatus(status: number | null): boolean {
  return status !== null && (PLATFORM_LIMITS.successStatuses as readonly number[]).includes(status);
}
