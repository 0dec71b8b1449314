/**
 * The one place a delivery's steps meet promises. A step answers at once when it can (node:crypto
 * verifies synchronously, memoryStore claims synchronously) and with a promise when it must (Web
 * Crypto, Redis): {@link Stages.run} goes on synchronously until a step gives a promise, and only
 * then waits, so a delivery that needs no promise pays for none (as Hono's `#dispatch` does for
 * its middleware). {@link nowOrLater} is the same rule for one value inside a step.
 *
 * The cost of the trick: every step's result is typed `MaybePromise`, so a step is written for
 * both (with {@link nowOrLater}), and a stack trace of a failure may start at any step. What it
 * saves: with node:crypto and memoryStore a delivery makes no promise until its handlers run, and
 * takes no extra turn of the microtask queue per step (bench/in-process.ts measures `handle()`
 * against the goals in bench/README.md).
 * @module
 */

/** A value now, or a promise of it. */
export type MaybePromise<T> = T | PromiseLike<T>;

/**
 * One step of a run: it takes what the step before it gave (and the facts of the run, the same
 * for every step) and gives what the next step takes, or the run's `End`.
 */
export type Step<In, Out, End, Facts> = (input: In, facts: Facts) => MaybePromise<Out | End>;

/** True for a promise or any thenable. */
export function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}

/** A step whose types were checked when {@link Stages.then} added it. */
type CheckedStep<Facts> = (input: never, facts: Facts) => unknown;

/** What a step gives the step after it: its value, awaited, without the run's end. */
type Gives<S extends (...args: never[]) => unknown, End> = Exclude<Awaited<ReturnType<S>>, End>;

/**
 * Steps run in order, each taking what the one before gave, until one gives an `End` (told apart
 * by `isEnd`) or the last one has run. Built with {@link Stages.start} and {@link Stages.then}, so
 * a step that does not take what the step before gives is a compile error.
 */
export class Stages<In, Out, End, Facts> {
  readonly #steps: readonly CheckedStep<Facts>[];
  readonly #isEnd: (value: unknown) => value is End;

  private constructor(
    steps: readonly CheckedStep<Facts>[],
    isEnd: (value: unknown) => value is End,
  ) {
    this.#steps = steps;
    this.#isEnd = isEnd;
  }

  /** A run of no step yet over an `In`, whose steps read `Facts`; a value `isEnd` is true of ends it. */
  static start<In, Facts, End>(
    isEnd: (value: unknown) => value is End,
  ): Stages<In, In, End, Facts> {
    return new Stages<In, In, End, Facts>([], isEnd);
  }

  /** This run, then `next` over what its last step gave (a new run: this one is unchanged). */
  then<S extends Step<Out, unknown, End, Facts>>(next: S): Stages<In, Gives<S, End>, End, Facts> {
    return new Stages<In, Gives<S, End>, End, Facts>([...this.#steps, next], this.#isEnd);
  }

  /** Run the steps over `input`: the first end, or what the last step gave; at once when no step gave a promise. */
  run(input: In, facts: Facts): MaybePromise<Out | End> {
    return this.#runFrom(0, input, facts) as MaybePromise<Out | End>;
  }

  #runFrom(from: number, input: unknown, facts: Facts): unknown {
    const steps = this.#steps;
    let value = input;
    for (let i = from; i < steps.length; i++) {
      const given = (steps[i] as (input: unknown, facts: Facts) => unknown)(value, facts);
      if (this.#isEnd(given)) return given;
      if (isPromiseLike(given)) {
        const next = i + 1;
        return given.then((later) =>
          this.#isEnd(later) ? later : this.#runFrom(next, later, facts),
        );
      }
      value = given;
    }
    return value;
  }
}

/**
 * `use(value)`, at once for a value, after it for a promise; a failure (thrown, or the promise
 * rejected) goes to `failed` when given, else on to the caller.
 */
export function nowOrLater<T, R>(
  produce: () => MaybePromise<T>,
  use: (value: T) => MaybePromise<R>,
  failed?: (cause: unknown) => MaybePromise<R>,
): MaybePromise<R> {
  let value: MaybePromise<T>;
  try {
    value = produce();
  } catch (cause) {
    if (failed === undefined) throw cause;
    return failed(cause);
  }
  return isPromiseLike(value) ? value.then(use, failed) : use(value);
}
