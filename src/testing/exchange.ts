/**
 * One HTTP exchange between the simulated platform and an endpoint: in process or over the
 * network, with the platform's response timeout (docs/platform.md#the-request).
 * @module
 */

import { messageOf } from '../message-of.js';
import type { EndpointHandler, SimulatedRequest } from './endpoint-config.js';
import type { VirtualClock } from './virtual-clock.js';

/** What the platform learnt from one request. */
export interface ExchangeResult {
  /** The HTTP status, or null when no answer came (timeout, network error, handler threw). */
  status: number | null;
  /** `outcome` from a JSON answer body, when it has one (every schoolhooks receiver's does). */
  outcome?: string;
  /** Why no answer came. */
  error?: string;
}

/** Where a request goes. */
export interface ExchangeTarget {
  url?: string | undefined;
  handler?: EndpointHandler | undefined;
}

/**
 * Send `request` and wait for the answer, at most `timeoutMs`: virtual time for an in-process
 * handler (so a test can make one slow with `clock.sleep`), real time for a URL.
 */
export async function exchange(
  target: ExchangeTarget,
  request: SimulatedRequest,
  timeoutMs: number,
  clock: VirtualClock,
): Promise<ExchangeResult> {
  if (target.handler) return callHandler(target.handler, request, timeoutMs, clock);
  if (target.url !== undefined) return post(target.url, request, timeoutMs);
  return { status: null, error: 'the endpoint has neither a url nor a handler' };
}

async function callHandler(
  handler: EndpointHandler,
  request: SimulatedRequest,
  timeoutMs: number,
  clock: VirtualClock,
): Promise<ExchangeResult> {
  let cancel: (() => void) | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    cancel = clock.schedule(() => resolve('timeout'), timeoutMs);
  });
  try {
    // A copy of the headers: a handler that changes them must not change the log or a duplicate.
    const answer = await Promise.race([
      Promise.resolve().then(() => handler({ ...request, headers: { ...request.headers } })),
      timeout,
    ]);
    if (answer === 'timeout') return { status: null, error: noAnswerWithin(timeoutMs) };
    if (!Number.isInteger(answer.status)) {
      return { status: null, error: 'the handler answered without a numeric status' };
    }
    const outcome = outcomeOf(answer.body);
    return outcome === undefined ? { status: answer.status } : { status: answer.status, outcome };
  } catch (error) {
    return { status: null, error: `the handler threw: ${messageOf(error)}` };
  } finally {
    cancel?.();
  }
}

async function post(
  url: string,
  request: SimulatedRequest,
  timeoutMs: number,
): Promise<ExchangeResult> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: request.headers,
      body: request.body,
      // The platform does not follow redirects: a 301 is an answer, and not a success.
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await response.text();
  } catch (error) {
    if (error instanceof Error && error.name === 'TimeoutError') {
      return { status: null, error: noAnswerWithin(timeoutMs) };
    }
    return { status: null, error: `network error: ${networkMessageOf(error)}` };
  }
  const outcome = outcomeOf(parseJson(text));
  return outcome === undefined ? { status: response.status } : { status: response.status, outcome };
}

function noAnswerWithin(timeoutMs: number): string {
  return `no answer within ${timeoutMs} ms`;
}

function outcomeOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { outcome } = body as { outcome?: unknown };
  return typeof outcome === 'string' ? outcome : undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** fetch() says only "fetch failed"; the reason (ECONNREFUSED …) is in its cause. */
function networkMessageOf(error: unknown): string {
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return typeof code === 'string' ? `${code} (${cause.message})` : cause.message;
  }
  return messageOf(error);
}
