/**
 * Running the handlers of one delivery, all at once, against handlerTimeoutMs.
 * @module
 */

import type { RunResult } from '../utils/run-result.js';
import { Deadline, type DeadlineQueue } from '../utils/deadlines.js';
import { LazySignal } from '../utils/lazy-signal.js';
import type { WebhookEvent } from '../platform/events/index.js';

/**
 * The transaction types stores give handlers, one member per store that opens one: empty in the
 * core, so `ctx.transaction` is `undefined` there. `schoolhooks/postgres` adds pg's `PoolClient`
 * by declaration merging, so importing it types `ctx.transaction` without the core knowing pg.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface HandlerTransactions {}

/** What `ctx.transaction` is: pg's `PoolClient` once `schoolhooks/postgres` is imported. */
export type HandlerTransaction = HandlerTransactions[keyof HandlerTransactions];

/** What a handler gets besides the event. */
export interface HandlerContext {
  /** The delivery's idempotencyKey (also `event.idempotencyKey`). */
  idempotencyKey: string;
  /** Aborted when handlerTimeoutMs elapses; the delivery is then answered 503 and retried later. */
  signal: AbortSignal;
  /**
   * Which run of the handlers this is, 1-based: always 1 for a delivery the platform sends (its
   * own retries are new deliveries); with an inbox, the worker's attempt.
   */
  attempt: number;
  /**
   * The tenant the delivery's route named (many schools on one endpoint, docs/tenants.md), whose
   * secret verified it; `undefined` when the route names none.
   */
  tenant?: string | undefined;
  /**
   * With `postgresStore`: the pooled client, inside the transaction that the delivery's
   * completion commits, so what a handler writes through it and the key are one commit (a
   * failure or a timeout rolls both back). `undefined` with every other store.
   */
  transaction?: HandlerTransaction | undefined;
}

/** A handler as the receiver stores it, whatever event names it was registered for. */
export type AnyHandler = (event: WebhookEvent<string>, context: HandlerContext) => unknown;

/** How the handlers of a delivery ended: all succeeded, or the failure (an AggregateError for several). */
export type HandlersResult = RunResult;

/** Handlers still running when handlerTimeoutMs elapsed, and the promise of how they end. */
export interface HandlersTimedOut {
  readonly timedOut: true;
  readonly stillRunning: Promise<HandlersResult>;
}

/** How a run of handlers came out against handlerTimeoutMs: settled in time, or timed out. */
export type HandlersEnded = HandlersResult | HandlersTimedOut;

/** True when the handlers were still running at handlerTimeoutMs. */
export function isTimedOut(outcome: HandlersEnded): outcome is HandlersTimedOut {
  return 'timedOut' in outcome;
}

const SUCCEEDED: HandlersResult = Object.freeze({ ok: true });

/**
 * The context of one delivery; its signal is aborted when handlerTimeoutMs elapses. The signal's
 * holder is made only when a handler reads `signal` or the deadline passes: most deliveries do
 * neither, and then cost no more than these four fields.
 */
class DeliveryContext implements HandlerContext {
  #abort: LazySignal | undefined;

  constructor(
    readonly idempotencyKey: string,
    readonly attempt: number,
    readonly tenant: string | undefined,
    readonly transaction: HandlerTransaction | undefined,
  ) {}

  get signal(): AbortSignal {
    return (this.#abort ??= new LazySignal()).signal;
  }

  /**
   * Abort `context`'s signal (now, or when a handler first reads it). Static, so that the object
   * handed to handlers carries no `abort` of its own.
   */
  static abort(context: DeliveryContext, reason: unknown): void {
    LazySignal.abort((context.#abort ??= new LazySignal()), reason);
  }
}

/**
 * Start every handler at once with one shared context. A handler that throws synchronously, or
 * rejects with any value (even `undefined`), counts as failed.
 *
 * When no handler returns a promise they have all ended by the time this returns, and their
 * outcome is returned as is: no timer, no promise. Otherwise the promise of their outcome races
 * the receiver's handlerTimeoutMs, in its deadline queue (one timer for all deliveries), and
 * settles with {@link HandlersTimedOut} if the deadline comes first.
 */
export function runHandlers(
  handlers: readonly AnyHandler[],
  event: WebhookEvent<string>,
  deadlines: DeadlineQueue,
  attempt = 1,
  tenant?: string,
  transaction?: HandlerTransaction,
): HandlersResult | Promise<HandlersEnded> {
  const context = new DeliveryContext(event.idempotencyKey, attempt, tenant, transaction);
  // One entry per handler, in order: the promise it returned, or the error it threw.
  let outcomes: unknown[] | undefined;
  let pending = 0;
  let failed = false;
  // The count is taken first: a handler that registers another must not start it on this event.
  const count = handlers.length;
  for (let i = 0; i < count; i++) {
    let outcome: unknown;
    try {
      const result = handlers[i]!(event, context);
      if (returnedPromise(result)) {
        outcome = result;
        pending++;
      }
    } catch (error) {
      outcome = new ThrownSynchronously(error);
      failed = true;
    }
    if (outcome !== undefined) (outcomes ??= new Array<unknown>(count))[i] = outcome;
  }
  if (pending === 0) {
    return failed
      ? failureOf(outcomes!.flatMap((o) => (o instanceof ThrownSynchronously ? [o.error] : [])))
      : SUCCEEDED;
  }

  // The common case, one async handler: its own promise races the deadline, nothing more.
  if (pending === 1 && !failed) {
    return raceDeadline(
      Promise.resolve(outcomes!.find(returnedPromise)),
      succeeded,
      context,
      deadlines,
    );
  }
  const all = Promise.allSettled(
    outcomes!.map((o) => (o instanceof ThrownSynchronously ? Promise.reject(o.error) : o)),
  );
  return raceDeadline(all, settledOf, context, deadlines);
}

/**
 * `running` against the receiver's handlerTimeoutMs: how it ended (`ended` of its value, or the
 * failure it rejected with), or, once the deadline comes first, {@link HandlersTimedOut}, whose
 * `stillRunning` is made only then.
 */
function raceDeadline<T>(
  running: Promise<T>,
  ended: (value: T) => HandlersResult,
  context: DeliveryContext,
  deadlines: DeadlineQueue,
): Promise<HandlersEnded> {
  return new Promise((resolve) => {
    const deadline = new HandlersDeadline(context, () =>
      resolve({ timedOut: true, stillRunning: running.then(ended, failedWith) }),
    );
    deadlines.add(deadline);
    running.then(
      (value) => {
        deadlines.remove(deadline);
        resolve(ended(value));
      },
      (error: unknown) => {
        deadlines.remove(deadline);
        resolve(failedWith(error));
      },
    );
  });
}

/** How handlers that all ran to the end ended: every rejection is a failure. */
function settledOf(results: PromiseSettledResult<unknown>[]): HandlersResult {
  return failureOf(results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : [])));
}

function succeeded(): HandlersResult {
  return SUCCEEDED;
}

function failedWith(error: unknown): HandlersResult {
  return failureOf([error]);
}

/**
 * What a handler threw synchronously, boxed: anything can be thrown (even a promise), so it is
 * told apart from a promise a handler returned by its class.
 */
class ThrownSynchronously {
  constructor(readonly error: unknown) {}
}

/** The deadline of one delivery's handlers in the receiver's deadline queue. */
class HandlersDeadline extends Deadline {
  readonly #context: DeliveryContext;
  readonly #timedOut: () => void;

  constructor(context: DeliveryContext, timedOut: () => void) {
    super();
    this.#context = context;
    this.#timedOut = timedOut;
  }

  expire(): void {
    DeliveryContext.abort(this.#context, new Error('handler timeout'));
    this.#timedOut();
  }
}

/**
 * Whether a user's function (a handler, a timer callback of the virtual clock) returned a promise
 * (any thenable) rather than a value: only a promise races handlerTimeoutMs, or is work to wait for.
 */
export function returnedPromise(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}

/** The outcome of handlers that failed with `errors` (none: success). */
function failureOf(errors: readonly unknown[]): HandlersResult {
  if (errors.length === 0) return SUCCEEDED;
  return {
    ok: false,
    error:
      errors.length === 1
        ? errors[0]
        : new AggregateError(errors, `${errors.length} handlers failed`),
  };
}
