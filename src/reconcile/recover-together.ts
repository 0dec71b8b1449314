/**
 * A page's recoveries run a few at a time rather than one after another.
 *
 * Each recovery is its own claim, handler and settle (on postgresStore its own transaction, so a
 * failing handler holds back no other), and most of its time is spent waiting on the store: its
 * claim's round trip and, on Postgres, the commit's flush to disk. One at a time, a run waited
 * for each in turn; {@link RECOVERIES_AT_ONCE} of them overlap those waits (Postgres flushes
 * commits that arrive together at once). Nothing an entity's recovery guarantees changes: its
 * records are taken by its own claim (two recoveries of one entity cannot both hold them: the
 * second is `in_flight` and tried again later), and its record commits with its handler's writes.
 *
 * The limit is small on purpose: on postgresStore each recovery under way holds a client of the
 * pool from its claim to its commit, and the pool also serves the receiver's deliveries (pg's
 * default pool has 10).
 * @module
 */

/** How many recoveries of one run are under way at once, at most. */
export const RECOVERIES_AT_ONCE = 4;

/** What {@link eachAtMost} did: each item's result, and the first error thrown, if any. */
export interface EachResults<R> {
  /** In the order of the items; `undefined` for an item whose call never started. */
  readonly results: readonly (R | undefined)[];
  /** The first error a call threw: once one is thrown, no further call starts. */
  readonly failure: { readonly error: unknown } | undefined;
}

/**
 * Run `work` on each of `items`, at most `limit` at once, started in their order; resolves once
 * every call started has settled (none is left running behind the caller).
 */
export async function eachAtMost<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<EachResults<R>> {
  const results = new Array<R | undefined>(items.length);
  let next = 0;
  let failure: EachResults<R>['failure'];
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < items.length) {
      const at = next++;
      try {
        results[at] = await work(items[at]!);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return { results, failure };
}
