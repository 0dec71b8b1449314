/**
 * The answers one receiver process gave, kept in memory and written to its store in one call at
 * most once a second (`store.watch`): the watchdog's bookkeeping costs a delivery no round trip.
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
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The write in progress: writes go one after the other. */
  #writing: Promise<unknown> = Promise.resolve();

  /**
   * @param watch the store's `watch`.
   * @param failed told when a write fails (the notes stay, up to `maxPending`, for the next one).
   */
  constructor(watch: WatchCall, now: () => number, failed: (cause: unknown) => void) {
    this.#watch = watch;
    this.#now = now;
    this.#failed = failed;
  }

  /** Keep `note`; the next write, within `flushEveryMs`, takes it to the store. */
  note(note: AnswerNote): void {
    const pending = this.#pending;
    pending.push(note);
    if (pending.length > WATCHDOG_DEFAULTS.maxPending) pending.shift();
    if (this.#timer === undefined) {
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

  async #writeNow(read: string | undefined): Promise<WatchState | undefined> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const notes = this.#pending;
    this.#pending = [];
    const { keepFailingMs, keepSummaryMs, maxFailing } = WATCHDOG_DEFAULTS;
    try {
      return await this.#watch({
        notes,
        keepMs: keepFailingMs,
        keepSummaryMs,
        maxFailing,
        now: this.#now(),
        read,
      });
    } catch (cause) {
      // Kept for the next write (the oldest dropped past the bound), tried again in a while.
      this.#pending = [...notes, ...this.#pending].slice(-WATCHDOG_DEFAULTS.maxPending);
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
