/**
 * One HTTP exchange between the simulated platform and an endpoint: in process or over the
 * network, with the platform's response timeout (docs/platform.md#the-request).
 * @module
 */

import { messageOf } from '../utils/message-of.js';
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
  const sent = await postAsPlatform(url, request.headers, request.body, timeoutMs);
  if (sent.status === null) {
    return {
      status: null,
      error: sent.timedOut
        ? noAnswerWithin(timeoutMs)
        : `network error: ${networkMessageOf(sent.error)}`,
    };
  }
  const outcome = outcomeOfText(sent.text);
  return outcome === undefined ? { status: sent.status } : { status: sent.status, outcome };
}

/** What one POST over the network gave: the answer, or why none came. */
export type PlatformPost =
  { status: number; text: string } | { status: null; timedOut: boolean; error: unknown };

/**
 * POST `body` to `url` as the platform does: no redirect followed (a 301 is an answer, and not a
 * success), at most `timeoutMs` for the whole answer. Never throws.
 * @internal shared by the simulator and `schoolhooks send` / `replay`.
 */
export async function postAsPlatform(
  url: string,
  headers: Record<string, string>,
  body: string | Uint8Array<ArrayBuffer>,
  timeoutMs: number,
): Promise<PlatformPost> {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers,
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { status: response.status, text: await response.text() };
  } catch (error) {
    const timedOut = error instanceof Error && error.name === 'TimeoutError';
    return { status: null, timedOut, error };
  }
}

function noAnswerWithin(timeoutMs: number): string {
  return `no answer within ${timeoutMs} ms`;
}

function outcomeOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { outcome } = body as { outcome?: unknown };
  return typeof outcome === 'string' ? outcome : undefined;
}

/**
 * `outcome` of an answer body that is JSON with a string `outcome` (every schoolhooks receiver's).
 * @internal shared with `schoolhooks send` / `replay`.
 */
export function outcomeOfText(text: string): string | undefined {
  return outcomeOf(parseJson(text));
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
