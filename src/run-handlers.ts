/**
 * Running the handlers of one delivery, all at once, against handlerTimeoutMs.
 * @module
 */

import type { WebhookEvent } from './events/index.js';

/** What a handler gets besides the event. */
export interface HandlerContext {
  /** The delivery's idempotencyKey (also `event.idempotencyKey`). */
  idempotencyKey: string;
  /** Aborted when handlerTimeoutMs elapses; the delivery is then answered 503 and retried later. */
  signal: AbortSignal;
}

/** A handler as the receiver stores it, whatever event names it was registered for. */
export type AnyHandler = (event: WebhookEvent<string>, context: HandlerContext) => unknown;

/** How the handlers of a delivery ended: all succeeded, or the failure (an AggregateError for several). */
export type HandlersSettled = { ok: true } | { ok: false; error: unknown };

/** A run of handlers: what came first (their end or the timeout), and their end. */
export interface HandlerRun {
  first: Promise<HandlersSettled | 'timeout'>;
  settled: Promise<HandlersSettled>;
}

/**
 * Start every handler at once with one shared context. A handler that throws synchronously, or
 * rejects with any value (even `undefined`), counts as failed.
 */
export function runHandlers(
  handlers: readonly AnyHandler[],
  event: WebhookEvent<string>,
  timeoutMs: number,
): HandlerRun {
  let controller: AbortController | undefined;
  let abortReason: Error | undefined;
  const context: HandlerContext = {
    idempotencyKey: event.idempotencyKey,
    // Made on first use: most handlers never read it, and an AbortController (an EventTarget)
    // costs more than anything else a delivery allocates. Read after the timeout, it is aborted.
    get signal(): AbortSignal {
      if (controller === undefined) {
        controller = new AbortController();
        if (abortReason !== undefined) controller.abort(abortReason);
      }
      return controller.signal;
    },
  };
  const settled = Promise.allSettled(handlers.map(async (handler) => handler(event, context))).then(
    (results): HandlersSettled => {
      const errors = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
      if (errors.length === 0) return { ok: true };
      return {
        ok: false,
        error:
          errors.length === 1
            ? errors[0]
            : new AggregateError(errors, `${errors.length} handlers failed`),
      };
    },
  );
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => {
      abortReason = new Error('handler timeout');
      controller?.abort(abortReason);
      resolve('timeout');
    }, timeoutMs);
  });
  const first = Promise.race([settled, timeout]).finally(() => clearTimeout(timer));
  return { first, settled };
}
