/**
 * A virtual clock: time moves only when a test says so, so hours of retry schedule run in
 * milliseconds.
 * @module
 */

import { ConfigError } from '../errors.js';
import { returnedPromise } from '../receiving/run-handlers.js';

/** Options of {@link createVirtualClock}. */
export interface VirtualClockOptions {
  /** Where time starts, as a Date, an ISO string or ms since the epoch. Default: the real now. */
  start?: Date | string | number;
  /**
   * Real ms to wait for pending work (timer callbacks that returned promises) before moving time
   * on without it: work still pending then is taken to wait for virtual time (a handler sleeping
   * on this clock). Default 20.
   */
  settleMs?: number;
}

/** A virtual clock. Create one with {@link createVirtualClock}. */
export interface VirtualClock {
  /** The virtual time, in ms since the epoch. Bound: pass it as `createReceiver({ now: clock.now })`. */
  readonly now: () => number;
  /**
   * Run `callback` once `delayMs` of virtual time has passed; returns a function that cancels it.
   * A promise the callback returns is waited for before time moves on; what a callback throws
   * or rejects with is rethrown by the `advance()` or `runAll()` that ran it.
   */
  schedule(callback: () => unknown, delayMs: number): () => void;
  /** A promise that resolves once `ms` of virtual time has passed. */
  sleep(ms: number): Promise<void>;
  /**
   * Move time forward by `ms`, running every timer that falls due, in order. **Await it**: time
   * moves while its promise runs, as it waits for the work each timer starts (a delivery, a
   * handler), so without `await` the clock has not moved when the next line runs. A second
   * `advance()` or `runAll()` called before it ended rejects with a `ConfigError` that says so
   * (typescript-eslint's `no-floating-promises` reports the missing `await` before that).
   *
   * @example
   * ```ts
   * await clock.advance(11 * 60_000); // the first retry is sent
   * ```
   */
  advance(ms: number): Promise<void>;
  /**
   * Run timers until none are left, including the ones they schedule. Await it, as `advance()`:
   * one of them called before the other ended rejects with a `ConfigError`.
   */
  runAll(): Promise<void>;
  /** How many timers are waiting. */
  readonly pending: number;
}

interface Timer {
  at: number;
  callback: () => unknown;
}

/** A guard against a timer that reschedules itself forever. */
const MAX_TIMERS_PER_RUN = 1_000_000;

/**
 * Create a virtual clock. Timers fire in order of due time (then of scheduling); everything due
 * at one instant fires together, and the promises its callbacks return are awaited before time
 * moves again, so a chain of async work finishes at the virtual instant it started.
 *
 * @example
 * ```ts
 * import { createVirtualClock } from 'schoolhooks/testing';
 *
 * const clock = createVirtualClock({ start: '2025-03-01T09:00:00Z' });
 * clock.schedule(() => console.log('11 minutes later'), 11 * 60_000);
 * await clock.advance(11 * 60_000);
 * ```
 */
export function createVirtualClock({
  start = Date.now(),
  settleMs = 20,
}: VirtualClockOptions = {}): VirtualClock {
  const origin = typeof start === 'number' ? start : new Date(start).getTime();
  if (!Number.isFinite(origin)) throw new ConfigError('start must be a valid date');
  const timers = new TimerQueue(origin);
  const work = new PendingWork(settleMs);
  const moving = new OneMoveAtATime();

  const clock: VirtualClock = {
    now: () => timers.now,
    schedule(callback: () => unknown, delayMs: number): () => void {
      return timers.add(callback, delayMs);
    },
    sleep(ms: number): Promise<void> {
      return new Promise((resolve) => clock.schedule(resolve, ms));
    },
    async advance(ms: number): Promise<void> {
      if (!Number.isFinite(ms) || ms < 0) {
        throw new RangeError('advance() takes a duration >= 0 ms');
      }
      await moving.run('advance()', async () => {
        const target = timers.now + ms;
        await runUntil(timers, work, target);
        timers.now = Math.max(timers.now, target);
        work.errors.rethrow();
      });
    },
    runAll(): Promise<void> {
      return moving.run('runAll()', async () => {
        for (;;) {
          await runUntil(timers, work, Number.POSITIVE_INFINITY);
          if (work.size === 0) return work.errors.rethrow();
          // Work is left but no timer: it waits for something real (a socket); let it finish.
          await work.anySettled();
        }
      });
    },
    get pending() {
      return timers.size;
    },
  };
  return clock;
}

/**
 * The one `advance()` or `runAll()` under way. Time moves only while its promise runs, so a call
 * that was not awaited shows only at the next one: that one is refused, rather than two runs
 * firing the same timers at once or the test going on with a clock that silently stood still.
 */
class OneMoveAtATime {
  #running: string | undefined;

  async run(name: string, move: () => Promise<void>): Promise<void> {
    if (this.#running !== undefined) {
      throw new ConfigError(
        `clock.${name} was called while clock.${this.#running} is still running: await each ` +
          'one (`await clock.advance(ms)`); until its promise ends, the clock has not moved',
      );
    }
    this.#running = name;
    try {
      await move();
    } finally {
      this.#running = undefined;
    }
  }
}

/** Fire timers up to `limit`, one instant at a time, letting the work of each settle. */
async function runUntil(timers: TimerQueue, work: PendingWork, limit: number): Promise<void> {
  await work.settle();
  let fired = 0;
  while (fireNext(timers, work, limit)) {
    if (++fired > MAX_TIMERS_PER_RUN) {
      throw new Error('too many timers: a timer keeps rescheduling itself');
    }
    await work.settle();
  }
}

/** Fire every timer due at the earliest instant <= limit; false when there is none. */
function fireNext(timers: TimerQueue, work: PendingWork, limit: number): boolean {
  const due = timers.takeNext(limit);
  if (due === undefined) return false;
  for (const timer of due) {
    try {
      work.track(timer.callback());
    } catch (error) {
      // The other timers still run; the error surfaces when this run ends.
      work.errors.add(error);
    }
  }
  return true;
}

/** The virtual now and the timers waiting, sorted by due time, ties in the order scheduled. */
class TimerQueue {
  /** The virtual time, in ms since the epoch. */
  now: number;
  readonly #timers: Timer[] = [];

  constructor(start: number) {
    this.now = start;
  }

  /** How many timers are waiting. */
  get size(): number {
    return this.#timers.length;
  }

  /** Queue `callback` to run `delayMs` from now; returns a function that cancels it. */
  add(callback: () => unknown, delayMs: number): () => void {
    const timers = this.#timers;
    const delay = Number.isFinite(delayMs) ? Math.max(0, delayMs) : 0;
    const timer: Timer = { at: this.now + delay, callback };
    // Sorted by due time, ties in the order scheduled: an insertion from the end is enough.
    let index = timers.length;
    while (index > 0 && (timers[index - 1] as Timer).at > timer.at) index--;
    timers.splice(index, 0, timer);
    return function cancel() {
      const at = timers.indexOf(timer);
      if (at !== -1) timers.splice(at, 1);
    };
  }

  /**
   * Move now to the earliest due time if it is <= limit (never back), and take every timer due
   * then; undefined when there is none.
   */
  takeNext(limit: number): Timer[] | undefined {
    const timers = this.#timers;
    const first = timers[0];
    if (first === undefined || first.at > limit) return undefined;
    this.now = Math.max(this.now, first.at);
    const due: Timer[] = [];
    while (timers[0] !== undefined && timers[0].at <= this.now) due.push(timers.shift() as Timer);
    return due;
  }
}

/** The promises timer callbacks returned, still pending, and what callbacks threw. */
class PendingWork {
  readonly #settleMs: number;
  readonly #work = new Set<Promise<unknown>>();
  #settledCount = 0;
  /** What callbacks threw or rejected with, rethrown when a run ends. */
  readonly errors = new CallbackErrors();

  constructor(settleMs: number) {
    this.#settleMs = settleMs;
  }

  /** How many promises are still pending. */
  get size(): number {
    return this.#work.size;
  }

  /** Wait for what a callback returned, if it is a promise; keep what it rejects with. */
  track(result: unknown): void {
    if (!returnedPromise(result)) return;
    const promise = Promise.resolve(result).then(
      () => undefined,
      (error: unknown) => this.errors.add(error),
    );
    this.#work.add(promise);
    void promise.finally(() => {
      this.#work.delete(promise);
      this.#settledCount++;
    });
  }

  /** Resolves once any pending promise settles (they never reject). */
  anySettled(): Promise<unknown> {
    return Promise.race(this.#work);
  }

  /** Wait until pending work settles, or makes no progress for settleMs of real time. */
  async settle(): Promise<void> {
    const work = this.#work;
    while (work.size > 0) {
      const before = this.#settledCount;
      // Most work (an in-process receiver) is done after a few turns of the event loop.
      for (let turn = 0; turn < 10 && work.size > 0 && this.#settledCount === before; turn++) {
        await nextTurn();
      }
      if (work.size === 0) return;
      if (this.#settledCount !== before) continue;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        this.anySettled(),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, this.#settleMs))),
      ]);
      clearTimeout(timer);
      if (this.#settledCount === before && work.size > 0) return; // waiting for virtual time
    }
  }
}

/** What timer callbacks threw or rejected with, kept until the run that ran them ends. */
class CallbackErrors {
  readonly #errors: unknown[] = [];

  /** Keep an error, to rethrow when the run ends. */
  add(error: unknown): void {
    this.#errors.push(error);
  }

  /** Throw what callbacks threw since the last time: the one error, or an AggregateError. */
  rethrow(): void {
    if (this.#errors.length === 0) return;
    const thrown = this.#errors.splice(0);
    throw thrown.length === 1
      ? thrown[0]
      : new AggregateError(thrown, `${thrown.length} timer callbacks failed`);
  }
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
