/**
 * Which failures of the API are retried, and after how long.
 * @module
 */

import { exponentialDelay } from '../inbox/retry-policy.js';
import { NetworkError, RateLimitError, ServerError, TimeoutError } from './errors.js';

/** The first retry waits this long; each further one twice as long as the one before. */
export const BASE_DELAY_MS = 250;
/** No retry waits longer. A Retry-After further away than this ends the retries at once. */
export const MAX_DELAY_MS = 5_000;

/**
 * Which failures one kind of call is sent again after, beside a 429 (the platform refused it
 * unserved, so every call waits it out).
 */
export interface RetryOn {
  /** A 5xx: the platform answered that it failed; it may have acted before it failed. */
  readonly serverError: boolean;
  /** No answer, the connection lost: the request may have reached the platform. */
  readonly networkError: boolean;
  /** No answer within `timeoutMs`: the platform may still be acting on the request. */
  readonly timeout: boolean;
}

/**
 * The client's calls, by what sending one again may do: the one table of which failure each
 * retries (docs/api.md#how-the-client-behaves).
 */
export const RETRY_ON = {
  /**
   * A write the platform applies once however often it is sent (upsert, update, a user's state,
   * group members), a read (find, a user's state, an export's result), and an export's start (a
   * second one starts another export of the same query: wasted work, nothing changed twice).
   */
  repeatable: { serverError: true, networkError: true, timeout: true },
  /**
   * The session token's create-or-get: a lost answer is asked for again (a second create-or-get
   * returns the session the first made), a timeout is not: the platform may still be creating the
   * session, and the two requests could race. A page of a list is retried so too (a timeout ends
   * the listing, docs/api.md#lists).
   */
  createOrGet: { serverError: true, networkError: true, timeout: false },
  /**
   * A session with `forceCreate`: every request makes another long-lived session, so a lost answer
   * is not sent again; a 5xx is, as every 5xx of the session-token operation (docs/api.md).
   */
  forcedSession: { serverError: true, networkError: false, timeout: false },
  /**
   * `createUser`: not idempotent (docs/platform.md#users-groups-and-exports), so nothing once the
   * request may have reached the platform. Only a 429 is sent again.
   */
  createUser: { serverError: false, networkError: false, timeout: false },
} as const satisfies Record<string, RetryOn>;

/**
 * How long to wait before retry number `attempt + 1`, or undefined when `error` is not retried.
 *
 * - 429: the platform answered that it did not serve the request, so it is sent again. Its
 *   `retryAfter` is honoured when it is within {@link MAX_DELAY_MS}; further away, the error is
 *   thrown at once, so the caller can schedule the work instead of hammering the API.
 * - A 5xx, a network error, a timeout: as `retryOn` says for the call (see {@link RETRY_ON}).
 * - Anything else (400, 401, 403, other statuses, invalid responses): the same request would fail
 *   the same way.
 */
export function retryDelay(error: unknown, attempt: number, retryOn: RetryOn): number | undefined {
  // The inboxes' curve, shorter: the caller is waiting.
  const backoff = exponentialDelay(BASE_DELAY_MS, attempt + 1, MAX_DELAY_MS);
  if (error instanceof RateLimitError) {
    if (error.retryAfter === undefined) return backoff;
    const wait = error.retryAfter.getTime() - Date.now();
    return wait <= MAX_DELAY_MS ? Math.max(wait, 0) : undefined;
  }
  if (error instanceof ServerError) return retryOn.serverError ? backoff : undefined;
  if (error instanceof NetworkError) return retryOn.networkError ? backoff : undefined;
  if (error instanceof TimeoutError) return retryOn.timeout ? backoff : undefined;
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
