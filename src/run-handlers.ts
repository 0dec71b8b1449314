/**
 * Running the handlers of one delivery, all at once, against handlerTimeoutMs.
 * @module
 */

import { Deadline, type DeadlineQueue } from './deadlines.js';
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

/** Handlers still running: what came first (their end or the timeout), and their end. */
export interface HandlerRun {
  first: Promise<HandlersSettled | 'timeout'>;
  settled: Promise<HandlersSettled>;
}

const SUCCEEDED: HandlersSettled = Object.freeze({ ok: true });

/**
 * The context of one delivery. Its AbortController is made on first use: most handlers never
 * read `signal`, and an AbortController (an EventTarget) costs more than the rest of a delivery's
 * dispatch. Read after the timeout, the signal is already aborted.
 */
class DeliveryContext implements HandlerContext {
  #controller: AbortController | undefined;
  #reason: Error | undefined;

  constructor(readonly idempotencyKey: string) {}

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#reason !== undefined) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  static abort(context: DeliveryContext, reason: Error): void {
    context.#reason = reason;
    context.#controller?.abort(reason);
  }
}

/**
 * Start every handler at once with one shared context. A handler that throws synchronously, or
 * rejects with any value (even `undefined`), counts as failed.
 *
 * When no handler returns a promise they have all ended by the time this returns, and their
 * outcome is returned as is: no timer, no promise. Otherwise the run races the receiver's
 * handlerTimeoutMs, in its deadline queue (one timer for all deliveries).
 */
export function runHandlers(
  handlers: readonly AnyHandler[],
  event: WebhookEvent<string>,
  deadlines: DeadlineQueue,
): HandlersSettled | HandlerRun {
  const context = new DeliveryContext(event.idempotencyKey);
  // One entry per handler, in order: a promise it returned, or what its synchronous call did.
  let outcomes: unknown[] | undefined;
  let pending = 0;
  let failed = false;
  // The count is taken first: a handler that registers another must not start it on this event.
  const count = handlers.length;
  for (let i = 0; i < count; i++) {
    let outcome: unknown;
    try {
      const result = handlers[i]!(event, context);
      if (isPromiseLike(result)) {
        outcome = result;
        pending++;
      }
    } catch (error) {
      outcome = Promise.reject(error);
      failed = true;
    }
    if (outcome !== undefined) (outcomes ??= new Array<unknown>(count))[i] = outcome;
  }
  if (pending === 0 && !failed) return SUCCEEDED;

  const settled =
    pending === 1 && !failed
      ? // The common case, one async handler: no allSettled over a list of one.
        Promise.resolve(outcomes!.find(isPromiseLike)).then(() => SUCCEEDED, failure)
      : Promise.allSettled(outcomes ?? []).then(collectFailures);
  if (pending === 0) return { first: settled, settled };
  const first = new Promise<HandlersSettled | 'timeout'>((resolve) => {
    const run = new TimedRun(context, resolve);
    deadlines.add(run);
    void settled.then((result) => {
      deadlines.remove(run);
      resolve(result);
    });
  });
  return { first, settled };
}

/** A run of handlers racing handlerTimeoutMs in the receiver's deadline queue. */
class TimedRun extends Deadline {
  readonly #context: DeliveryContext;
  readonly #resolve: (first: 'timeout') => void;

  constructor(context: DeliveryContext, resolve: (first: 'timeout') => void) {
    super();
    this.#context = context;
    this.#resolve = resolve;
  }

  expire(): void {
    DeliveryContext.abort(this.#context, new Error('handler timeout'));
    this.#resolve('timeout');
  }
}

function failure(error: unknown): HandlersSettled {
  return { ok: false, error };
}

/** Whether a run of handlers is still going (some returned a promise). */
export function isRunning(run: HandlersSettled | HandlerRun): run is HandlerRun {
  return 'first' in run;
}

function collectFailures(results: readonly PromiseSettledResult<unknown>[]): HandlersSettled {
  const errors: unknown[] = [];
  for (const result of results) {
    if (result.status === 'rejected') errors.push(result.reason);
  }
  if (errors.length === 0) return SUCCEEDED;
  return {
    ok: false,
    error:
      errors.length === 1
        ? errors[0]
        : new AggregateError(errors, `${errors.length} handlers failed`),
  };
}

/** Whether a value is a promise or another thenable. */
export function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}
