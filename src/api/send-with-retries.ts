/**
 * One call of the API client, from its first attempt to its answer: the request sent through
 * `request`, retried as its row of `RETRY_ON` says, its answer read with its schema. Every
 * operation but the lists (which wait out 429s on a budget of their own) sends through it.
 * @module
 */

import type { z } from 'zod';
import type { RequestContext } from './error-from-response.js';
import { retryDelay, sleep, type RetryOn } from './retry-delay.js';
import { readBody, request, type ApiRequest, type Client } from './transport.js';

/** How one call is sent and read. */
export interface SendOptions<S extends z.ZodType> {
  /** The schema of a 2xx answer's body. */
  readonly schema: S;
  /** The failures this call is sent again after (a row of `RETRY_ON`). */
  readonly retryOn: RetryOn;
  /** Who the request is about, for the messages of its errors. */
  readonly context: RequestContext;
  /** Aborts the call, a backoff included; it then rejects with the signal's reason. */
  readonly signal: AbortSignal | undefined;
}

/**
 * Sends `call` until it is answered 2xx (and read with `schema`) or fails in a way `retryOn`
 * does not retry, at most `client.retries` times again, waiting the backoff (or a 429's
 * `retryAfter`) between attempts. Rejects with the last `SchoolApiError`, or the signal's
 * reason once it aborts.
 */
export async function sendWithRetries<S extends z.ZodType>(
  client: Client,
  call: ApiRequest,
  { schema, retryOn, context, signal }: SendOptions<S>,
): Promise<z.output<S>> {
  signal?.throwIfAborted();
  for (let attempt = 0; ; attempt += 1) {
    try {
      const { status, text } = await request(client, call, context, signal);
      return readBody(status, text, schema);
    } catch (error) {
      const delay = attempt < client.retries ? retryDelay(error, attempt, retryOn) : undefined;
      if (delay === undefined) throw error;
      await sleep(delay, signal);
    }
  }
}
