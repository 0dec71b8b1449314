/**
 * A virtual clock: time moves only when a test says so, so hours of retry schedule run in
 * milliseconds.
 * @module
 */

import { ConfigError } from '../errors.js';

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
  /** Move time forward by `ms`, running every timer that falls due, in order. */
  advance(ms: number): Promise<void>;
  /** Run timers until none are left, including the ones they schedule. */
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
  let current = typeof start === 'number' ? start : new Date(start).getTime();
  if (!Number.isFinite(current)) throw new ConfigError('start must be a valid date');
  const timers: Timer[] = [];
  const work = new Set<Promise<unknown>>();
  const errors: unknown[] = [];
  let settledCount = 0;

  function track(result: unknown): void {
    if (!isPromiseLike(result)) return;
    const promise = Promise.resolve(result).then(
      () => undefined,
      (error: unknown) => void errors.push(error),
    );
    work.add(promise);
    void promise.finally(() => {
      work.delete(promise);
      settledCount++;
    });
  }

  /** Wait until pending work settles, or makes no progress for settleMs of real time. */
  async function settle(): Promise<void> {
    while (work.size > 0) {
      const before = settledCount;
      // Most work (an in-process receiver) is done after a few turns of the event loop.
      for (let turn = 0; turn < 10 && work.size > 0 && settledCount === before; turn++) {
        await nextTurn();
      }
      if (work.size === 0) return;
      if (settledCount !== before) continue;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.race(work),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, settleMs))),
      ]);
      clearTimeout(timer);
      if (settledCount === before && work.size > 0) return; // waiting for virtual time
    }
  }

  /** Fire every timer due at the earliest instant <= limit; false when there is none. */
  function fireNext(limit: number): boolean {
    const first = timers[0];
    if (first === undefined || first.at > limit) return false;
    current = Math.max(current, first.at);
    const due: Timer[] = [];
    while (timers[0] !== undefined && timers[0].at <= current) due.push(timers.shift() as Timer);
    for (const timer of due) {
      try {
        track(timer.callback());
      } catch (error) {
        // The other timers still run; the error surfaces when this run ends.
        errors.push(error);
      }
    }
    return true;
  }

  async function runUntil(limit: number): Promise<void> {
    await settle();
    let fired = 0;
    while (fireNext(limit)) {
      if (++fired > MAX_TIMERS_PER_RUN) {
        throw new Error('too many timers: a timer keeps rescheduling itself');
      }
      await settle();
    }
  }

  function rethrow(): void {
    if (errors.length === 0) return;
    const thrown = errors.splice(0);
    throw thrown.length === 1
      ? thrown[0]
      : new AggregateError(thrown, `${thrown.length} timer callbacks failed`);
  }

  const clock: VirtualClock = {
    now: () => current,
    schedule(callback: () => unknown, delayMs: number): () => void {
      const delay = Number.isFinite(delayMs) ? Math.max(0, delayMs) : 0;
      const timer: Timer = { at: current + delay, callback };
      // Sorted by due time, ties in the order scheduled: an insertion from the end is enough.
      let index = timers.length;
      while (index > 0 && (timers[index - 1] as Timer).at > timer.at) index--;
      timers.splice(index, 0, timer);
      return function cancel() {
        const at = timers.indexOf(timer);
        if (at !== -1) timers.splice(at, 1);
      };
    },
    sleep(ms: number): Promise<void> {
      return new Promise((resolve) => clock.schedule(resolve, ms));
    },
    async advance(ms: number): Promise<void> {
      if (!Number.isFinite(ms) || ms < 0) {
        throw new RangeError('advance() takes a duration >= 0 ms');
      }
      const target = current + ms;
      await runUntil(target);
      current = Math.max(current, target);
      rethrow();
    },
    async runAll(): Promise<void> {
      for (;;) {
        await runUntil(Number.POSITIVE_INFINITY);
        if (work.size === 0) return rethrow();
        // Work is left but no timer: it waits for something real (a socket); let it finish.
        await Promise.race(work);
      }
    },
    get pending() {
      return timers.length;
    },
  };
  return clock;
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}
