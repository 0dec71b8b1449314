/**
 * Calls to a server (Redis, Postgres, a queue) bounded by one time budget: the one timeout
 * helper every store and inbox uses.
 * @module
 */

import { Deadline, DeadlineQueue } from './deadlines.js';
import { LazySignal } from './lazy-signal.js';

/**
 * One call in progress: `deadline` on this process's clock (ms since the epoch); `aborted` (and
 * `signal`, made on first use) once it has passed. An operation checks `aborted` before each
 * step, so it sends nothing more once its caller was told it failed.
 */
export interface BoundedCall {
  readonly deadline: number;
  readonly aborted: boolean;
  readonly signal: AbortSignal;
}

/** What a {@link BoundedCalls} rejects with. */
export interface BoundedCallErrors {
  /** The error for a call whose budget ran out, named `name`. */
  timedOut(name: string): Error;
  /** The error for a call that failed with `error` within its budget. */
  failed(name: string, error: unknown): Error;
}

/** A call with its deadline: settled by its result, or aborted when the deadline passes. */
class Call extends Deadline implements BoundedCall {
  // Few operations read their signal (only a wait for a connection does): it is made on demand.
  readonly #abort = new LazySignal();
  readonly #onExpire: () => void;

  constructor(
    readonly deadline: number,
    onExpire: () => void,
  ) {
    super();
    this.#onExpire = onExpire;
  }

  get aborted(): boolean {
    return LazySignal.aborted(this.#abort);
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** At the deadline: the operation sends nothing more, and its caller is told it failed. */
  expire(): void {
    LazySignal.abort(this.#abort);
    this.#onExpire();
  }
}

/**
 * Runs calls that all get the same budget, each settled by its result or rejected when the
 * budget runs out. One timer serves every call in flight (a {@link DeadlineQueue}): a call costs
 * one object and one promise, no timer of its own, which keeps a store's hot path as fast as a
 * bare client call.
 *
 * @example
 * ```ts
 * const calls = new BoundedCalls(1000, {
 *   timedOut: (name) => new StoreUnavailableError(`Redis did not answer ${name} within 1000 ms`),
 *   failed: (name, error) => new StoreUnavailableError(`Redis ${name} failed`, { cause: error }),
 * });
 * const reply = await calls.run('claim', (call) => send(command, call));
 * ```
 */
export class BoundedCalls {
  readonly #budgetMs: number;
  readonly #errors: BoundedCallErrors;
  readonly #deadlines: DeadlineQueue;

  /** @param budgetMs how long each call may take, in ms. */
  constructor(budgetMs: number, errors: BoundedCallErrors) {
    this.#budgetMs = budgetMs;
    this.#errors = errors;
    this.#deadlines = new DeadlineQueue(budgetMs);
  }

  /** Calls in flight (for tests). */
  get size(): number {
    return this.#deadlines.size;
  }

  /**
   * Runs `operation` with a deadline `budgetMs` from now. Rejects with `errors.timedOut(name)`
   * at the deadline, or with `errors.failed(name, error)` when it fails first. At the deadline
   * the call aborts; `onLate` sees a result that arrives after the caller was already told the
   * call failed (to undo it: a claim nobody waits for any more, say).
   */
  run<T>(
    name: string,
    operation: (call: BoundedCall) => Promise<T>,
    onLate?: (result: T) => void,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const call = new Call(Date.now() + this.#budgetMs, () => reject(this.#errors.timedOut(name)));
      this.#deadlines.add(call);
      operation(call).then(
        (result) => {
          // After the deadline nobody awaits the result: only onLate sees it.
          if (call.aborted) return onLate?.(result);
          this.#deadlines.remove(call);
          resolve(result);
        },
        (error: unknown) => {
          if (call.aborted) return;
          this.#deadlines.remove(call);
          reject(this.#errors.failed(name, error));
        },
      );
    });
  }
}
