/**
 * The one place a delivery's steps meet promises. A step answers at once when it can (node:crypto
 * verifies synchronously, memoryStore claims synchronously) and with a promise when it must (Web
 * Crypto, Redis): {@link runSteps} goes on synchronously until a step gives a promise, and only
 * then waits, so a delivery that needs no promise pays for none (as Hono's `#dispatch` does for
 * its middleware). {@link andThen} is the same rule for one value inside a step.
 * @module
 */

/** A value now, or a promise of it. */
export type MaybePromise<T> = T | PromiseLike<T>;

/** What a step gives back: `undefined` to go on to the next step, or how the run ends. */
export type StepResult<E> = MaybePromise<E | undefined>;

/** One step of a run: it reads and writes the run's state, and may end it. */
export type Step<S, E> = (state: S) => StepResult<E>;

/** True for a promise or any thenable. */
export function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}

/**
 * Run `steps` in order over `state` until one ends the run; its ending, at once when no step
 * gave a promise. The last step must end the run.
 */
export function runSteps<S, E>(steps: readonly Step<S, E>[], state: S, from = 0): MaybePromise<E> {
  for (let i = from; i < steps.length; i++) {
    const result = steps[i]!(state);
    if (result === undefined) continue;
    if (!isPromiseLike(result)) return result;
    const next = i + 1;
    return result.then((ended) => ended ?? runSteps(steps, state, next));
  }
  throw new Error('a run ended without an ending');
}

/**
 * `next(value)`, at once for a value, after it for a promise; a failure (thrown, or the promise
 * rejected) goes to `failed` when given.
 */
export function andThen<T, R>(
  value: () => MaybePromise<T>,
  next: (value: T) => MaybePromise<R>,
  failed?: (cause: unknown) => MaybePromise<R>,
): MaybePromise<R> {
  let settled: MaybePromise<T>;
  try {
    settled = value();
  } catch (cause) {
    if (failed === undefined) throw cause;
    return failed(cause);
  }
  return isPromiseLike(settled) ? settled.then(next, failed) : next(settled);
}
