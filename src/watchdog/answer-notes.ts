/**
 * The answers one receiver process gave, kept in memory and written to its store in one call
 * (`store.watch`) once a second, or at once when `writeAtNotes` wait: the watchdog's bookkeeping
 * costs a delivery no round trip, and a busy process (or one whose deliveries never leave the
 * microtask queue, on `memoryStore`) loses none of them to the bound below. Only while the store
 * cannot take them are more than `maxPending` held: then the oldest go, and the next write tells
 * `failed` how many.
 * @module
 */

import { WATCHDOG_DEFAULTS } from '../defaults.js';
import type { AnswerNote, WatchBatch, WatchState } from './types.js';

/** What the notes are written with. */
export type WatchCall = (batch: WatchBatch) => Promise<WatchState | undefined>;

/**
 * The symbol under which a receiver keeps its {@link AnswerNotes} (`Symbol.for`, so every bundle of
 * the package sees the same one): how a watchdog given the receiver writes its pending notes first.
 */
export const ANSWER_NOTES: unique symbol = Symbol.for('schoolhooks.answerNotes') as never;

/** The notes of one process, written to its store now and then. */
export class AnswerNotes {
  readonly #watch: WatchCall;
  readonly #now: () => number;
  readonly #failed: (cause: unknown) => void;
  #pending: AnswerNote[] = [];
  /** Answers dropped since the last write, past `maxPending`: told with the next write. */
  #dropped = 0;
  /** Whether a write that takes the pending notes is already on its way (in progress or next). */
  #queued = false;
  /** Whether the last write failed: until one succeeds, only the timer writes (no early writes). */
  #failing = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The write in progress: writes go one after the other. */
  #writing: Promise<unknown> = Promise.resolve();

  /**
   * @param watch the store's `watch`.
   * @param failed told when a write fails (the notes stay, up to `maxPending`, for the next one),
   * and, with the next write, how many answers were dropped past `maxPending`.
   */
  constructor(watch: WatchCall, now: () => number, failed: (cause: unknown) => void) {
    this.#watch = watch;
    this.#now = now;
    this.#failed = failed;
  }

  /**
   * Keep `note`; the next write takes it to the store: within `flushEveryMs`, or now when
   * `writeAtNotes` are waiting, no write is already on its way to take them and the last one did
   * not fail (while the store fails, one write a `flushEveryMs`).
   */
  note(note: AnswerNote): void {
    const pending = this.#pending;
    pending.push(note);
    this.#keepAtMostMaxPending();
    if (pending.length >= WATCHDOG_DEFAULTS.writeAtNotes && !this.#queued && !this.#failing) {
      this.#queued = true;
      void this.write().catch(() => {});
    } else if (this.#timer === undefined) {
      this.#timer = setTimeout(
        () => void this.write().catch(() => {}),
        WATCHDOG_DEFAULTS.flushEveryMs,
      );
      this.#timer.unref?.();
    }
  }

  /**
   * Write the pending notes now, and give back the state of tenant `read` (`''` for none) when
   * asked: one call of the store. A failed write keeps its notes for the next one.
   */
  write(read?: string): Promise<WatchState | undefined> {
    const done = this.#writing.then(() => this.#writeNow(read));
    this.#writing = done.catch(() => {});
    return done;
  }

  /** The bound: at most `maxPending` answers held, the oldest dropped (and counted) first. */
  #keepAtMostMaxPending(): void {
    const over = this.#pending.length - WATCHDOG_DEFAULTS.maxPending;
    if (over <= 0) return;
    this.#pending.splice(0, over);
    this.#dropped += over;
  }

  async #writeNow(read: string | undefined): Promise<WatchState | undefined> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#queued = false;
    const notes = this.#pending;
    this.#pending = [];
    const dropped = this.#dropped;
    this.#dropped = 0;
    if (dropped > 0) this.#failed(new Error(droppedWhy(dropped)));
    const { keepFailingMs, keepSummaryMs, maxFailing } = WATCHDOG_DEFAULTS;
    try {
      const state = await this.#watch({
        notes,
        keepMs: keepFailingMs,
        keepSummaryMs,
        maxFailing,
        now: this.#now(),
        read,
      });
      this.#failing = false;
      return state;
    } catch (cause) {
      this.#failing = true;
      // Kept for the next write (the oldest dropped past the bound), tried again in a while.
      this.#pending = [...notes, ...this.#pending];
      this.#keepAtMostMaxPending();
      this.#timer ??= setTimeout(
        () => void this.write().catch(() => {}),
        WATCHDOG_DEFAULTS.flushEveryMs,
      );
      this.#timer.unref?.();
      this.#failed(cause);
      throw cause;
    }
  }
}

/** Why answers were dropped, for the next write's `failed`. */
function droppedWhy(dropped: number): string {
  return (
    `${dropped} answer${dropped === 1 ? ' was' : 's were'} not kept for the watchdog: ` +
    `${WATCHDOG_DEFAULTS.maxPending} were already waiting for the store to take them`
  );
}
