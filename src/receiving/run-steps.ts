/**
 * A delivery's steps as a typed list: {@link Stages.then} adds a step that takes what the step
 * before it gives, so a step that does not is a compile error, and {@link Stages.run} runs them
 * in order, awaiting each one, until one gives the run's end or the last one has run. A step that
 * throws or rejects rejects the run: the receiver answers that as a faulty store's failure
 * (receiver.ts), so every failure a step can name, it ends the delivery with instead.
 *
 * A step may be synchronous (checkRequest, parse) or `async` (readBody, claim): each is awaited
 * the same way, one turn of the microtask queue per step.
 * @module
 */

/**
 * One step of a run: it takes what the step before it gave (and the facts of the run, the same
 * for every step) and gives what the next step takes, or the run's `End`, now or as a promise.
 */
export type Step<In, Out, End, Facts> = (
  input: In,
  facts: Facts,
) => Out | End | PromiseLike<Out | End>;

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

  /** Run the steps over `input`: the first end, or what the last step gave. */
  async run(input: In, facts: Facts): Promise<Out | End> {
    let value: unknown = input;
    for (const step of this.#steps) {
      value = await (step as (input: unknown, facts: Facts) => unknown)(value, facts);
      if (this.#isEnd(value)) return value;
    }
    return value as Out;
  }
}
