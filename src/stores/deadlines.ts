/**
 * One timer for many calls that share a time budget.
 * @module
 */

/** Something that must be told when its budget ran out, unless it settled first. */
export interface Expiring {
  /** True once it finished on its own: it is then dropped without being told anything. */
  readonly settled: boolean;
  /** Called once, at the end of the budget, if it has not settled. */
  expire(): void;
}

/**
 * Calls that all get the same budget expire in the order they started, so a queue with one
 * timer at its head replaces a timer per call (a timer and a promise race per Redis command
 * cost more than the rest of the command's JavaScript). Under steady load the timer fires about
 * once per budget and drops the calls that settled meanwhile. The clock is monotonic, so a
 * change of the system time moves no deadline.
 */
export class DeadlineQueue {
  readonly #budgetMs: number;
  #items: { item: Expiring; expiresAt: number }[] = [];
  #head = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** @param budgetMs how long each call may run, in ms. */
  constructor(budgetMs: number) {
    this.#budgetMs = budgetMs;
  }

  /** Start the budget of `item` now. */
  add(item: Expiring): void {
    this.#items.push({ item, expiresAt: performance.now() + this.#budgetMs });
    if (this.#timer === undefined) this.#arm();
  }

  /** Calls added and not yet dropped (for tests). */
  get size(): number {
    return this.#items.length - this.#head;
  }

  #arm(): void {
    const items = this.#items;
    while (this.#head < items.length && items[this.#head]!.item.settled) this.#head++;
    if (this.#head === items.length) {
      this.#items = [];
      this.#head = 0;
      this.#timer = undefined;
      return;
    }
    const wait = Math.max(0, items[this.#head]!.expiresAt - performance.now());
    this.#timer = setTimeout(this.#sweep, Math.ceil(wait));
    // A pending call keeps the process alive through its socket; this timer need not.
    this.#timer.unref?.();
  }

  #sweep = (): void => {
    const now = performance.now();
    const items = this.#items;
    while (this.#head < items.length) {
      const { item, expiresAt } = items[this.#head]!;
      if (!item.settled) {
        if (expiresAt > now) break;
        item.expire();
      }
      this.#head++;
    }
    if (this.#head > 1024 && this.#head * 2 > items.length) {
      items.splice(0, this.#head);
      this.#head = 0;
    }
    this.#arm();
  };
}
