/**
 * One timer for many calls that share a time budget.
 * @module
 */

/**
 * Something with a deadline in a {@link DeadlineQueue}: told by {@link Deadline.expire} when its
 * budget runs out, unless it was removed first. The links are the queue's own.
 */
export abstract class Deadline {
  /** @internal */ expiresAt = 0;
  /** @internal */ previous: Deadline | undefined = undefined;
  /** @internal */ next: Deadline | undefined = undefined;
  /** @internal */ queued = false;

  /** Called once, when the budget ran out; the item has left the queue by then. */
  abstract expire(): void;
}

/**
 * Calls that all get the same budget expire in the order they started, so a queue with one
 * timer at its head replaces a timer per call (a timer and a promise race per delivery or per
 * Redis command cost more than the rest of its JavaScript). A call that ends leaves the queue at
 * once (a doubly linked list), so the queue only ever holds calls in flight. The clock is
 * monotonic: a change of the system time moves no deadline.
 */
export class DeadlineQueue {
  readonly #budgetMs: number;
  #head: Deadline | undefined;
  #tail: Deadline | undefined;
  #size = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** @param budgetMs how long each call may run, in ms. */
  constructor(budgetMs: number) {
    this.#budgetMs = budgetMs;
  }

  /** Calls in flight (for tests). */
  get size(): number {
    return this.#size;
  }

  /** Start the budget of `item` now. */
  add(item: Deadline): void {
    item.expiresAt = performance.now() + this.#budgetMs;
    item.previous = this.#tail;
    item.next = undefined;
    item.queued = true;
    if (this.#tail) this.#tail.next = item;
    else this.#head = item;
    this.#tail = item;
    this.#size++;
    if (this.#timer === undefined) this.#arm(item.expiresAt);
  }

  /** Take `item` out: it ended within its budget (a no-op if it already left). */
  remove(item: Deadline): void {
    if (!item.queued) return;
    item.queued = false;
    if (item.previous) item.previous.next = item.next;
    else this.#head = item.next;
    if (item.next) item.next.previous = item.previous;
    else this.#tail = item.previous;
    item.previous = item.next = undefined;
    this.#size--;
    // The timer stays armed: when it fires it re-arms for whoever is first then.
  }

  #arm(at: number): void {
    this.#timer = setTimeout(this.#sweep, Math.max(0, Math.ceil(at - performance.now())));
    // What a call waits on (a socket, a handler's work) keeps the process alive; this need not.
    this.#timer.unref?.();
  }

  #sweep = (): void => {
    this.#timer = undefined;
    const now = performance.now();
    try {
      for (let item = this.#head; item !== undefined && item.expiresAt <= now; item = this.#head) {
        this.remove(item);
        item.expire();
      }
    } finally {
      // Even if an expire() threw, the calls behind it still get their timer.
      if (this.#head !== undefined && this.#timer === undefined) this.#arm(this.#head.expiresAt);
    }
  };
}
