/**
 * Which failures of the API are retried, and after how long.
 * @module
 */

import { exponentialDelay } from '../retry-policy.js';
import { NetworkError, RateLimitError, ServerError } from './errors.js';

/** The first retry waits this long; each further one twice as long as the one before. */
export const BASE_DELAY_MS = 250;
/** No retry waits longer. A Retry-After further away than this ends the retries at once. */
export const MAX_DELAY_MS = 5_000;

/**
 * How long to wait before retry number `attempt + 1`, or undefined when `error` is not retried.
 *
 * - 429 and 5xx: the platform answered that it did not serve the request, so it is sent again.
 *   A 429's `retryAfter` is honoured when it is within {@link MAX_DELAY_MS}; further away, the
 *   error is thrown at once, so the caller can schedule the work instead of hammering the API.
 * - A network error: retried only when `forceCreate` is false. The request may have reached the
 *   platform before the connection broke; create-or-get is idempotent (a second call returns the
 *   session the first one created), but with `forceCreate` every call creates another long-lived
 *   session, so a retry could leave a second live token behind.
 * - A timeout: never retried. The platform may still be working on the request, and the caller's
 *   `timeoutMs` is spent already.
 * - Anything else (400, 401, 403, other statuses, invalid responses): the same request would fail
 *   the same way.
 */
export function retryDelay(
  error: unknown,
  attempt: number,
  forceCreate: boolean,
): number | undefined {
  // The inboxes' curve, shorter: the caller is waiting.
  const backoff = exponentialDelay(BASE_DELAY_MS, attempt + 1, MAX_DELAY_MS);
  if (error instanceof RateLimitError) {
    if (error.retryAfter === undefined) return backoff;
    const wait = error.retryAfter.getTime() - Date.now();
    return wait <= MAX_DELAY_MS ? Math.max(wait, 0) : undefined;
  }
  if (error instanceof ServerError) return backoff;
  if (error instanceof NetworkError && !forceCreate) return backoff;
  return undefined;
}

/**
 * How long a list waits after its `waits + 1`-th `429 Rate` for one page: until the answer's
 * `retryAfter`, however far (the caller bounds the total), but never less than the backoff for
 * that many 429s in a row, so a `retryAfter` already past by our clock does not make it hammer
 * the API.
 */
export function rateLimitDelay(error: RateLimitError, waits: number, now = Date.now()): number {
  const backoff = exponentialDelay(BASE_DELAY_MS, waits + 1, MAX_DELAY_MS);
  const asked = error.retryAfter === undefined ? 0 : error.retryAfter.getTime() - now;
  return Math.max(asked, backoff);
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
