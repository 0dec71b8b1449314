/**
 * An abort signal made only when someone reads it.
 * @module
 */

/**
 * Holds the abort state of one unit of work (a delivery's handlers, a Redis call) and makes its
 * `AbortSignal` on first read: most work never looks at its signal, and an AbortController (an
 * EventTarget) costs more than the rest of what a delivery allocates. Read after the abort, the
 * signal is already aborted, with the same reason.
 */
export class LazySignal {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  /** The signal, aborted once {@link LazySignal.abort} was called. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /**
   * Abort `target`'s signal (now, or when it is first read). A static method, so that objects
   * handed to user code (a handler's context) carry no `abort` of their own.
   */
  static abort(target: LazySignal, reason?: unknown): void {
    if (target.#aborted) return;
    target.#aborted = true;
    target.#reason = reason;
    target.#controller?.abort(reason);
  }

  /** Whether `target` was aborted. */
  static aborted(target: LazySignal): boolean {
    return target.#aborted;
  }
}
