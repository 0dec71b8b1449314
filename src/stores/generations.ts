/**
 * Entries that expire, kept in two generations of `Map`s of at most `max` entries together: what
 * `memoryStore` keeps its keys and its entities in.
 * @module
 */

/** An entry: it is dropped once `performance.now()` reaches `expires`. */
export interface Expiring {
  expires: number;
}

/**
 * At most `max` entries, in two generations: an entry kept or found goes into the newer one, and
 * when that one holds half of `max` (or both hold `max`) the older one is dropped whole. An entry
 * is thus kept for at least the next `max / 2` (rounded down).
 *
 * Two generations rather than a least-recently-used list: a list lives in long arrays written at
 * every claim, which Bun's collector rescans whole at each young collection, and a `Map` evicted
 * from its head scans the deleted entries before it. Dropping a whole generation does neither
 * (docs/decisions.md has what it saves).
 */
export class Generations<E extends Expiring> {
  readonly #max: number;
  /** The newer generation holds up to half of max, rounded up. */
  readonly #generation: number;
  #recent = new Map<string, E>();
  #older = new Map<string, E>();

  constructor(max: number) {
    this.#max = max;
    this.#generation = Math.ceil(max / 2);
  }

  /** Puts an entry into the newer generation, which first becomes the older one if either is full. */
  keep(key: string, entry: E): void {
    const recent = this.#recent;
    if (recent.size >= this.#generation || recent.size + this.#older.size >= this.#max) {
      // The newer generation stays on as the older one only with room for the entry beside it
      // (always, but for max 1).
      this.#older = recent.size < this.#max ? recent : new Map();
      this.#recent = new Map();
    }
    this.#recent.set(key, entry);
  }

  /** The entry of `key` if it has not expired, in the newer generation from now on. */
  find(key: string): E | undefined {
    const current = this.#recent.get(key);
    if (current !== undefined) {
      if (current.expires > performance.now()) return current;
      this.#recent.delete(key);
      return undefined;
    }
    const old = this.#older.get(key);
    if (old === undefined) return undefined;
    this.#older.delete(key);
    if (old.expires <= performance.now()) return undefined;
    this.keep(key, old);
    return old;
  }

  /** Drops the entry of `key` (one just found: it is in the newer generation). */
  drop(key: string): void {
    this.#recent.delete(key);
  }
}
