/**
 * The one shape of a run's result, whatever ran (a delivery's handlers, a recovery's recording,
 * a scheduled task): it succeeded, with what it gave, or it failed, with what it threw. A
 * delivery's answer is its outcome (src/receiving/outcome.ts); a run's is its result.
 * @module
 */

/** How a run came out: `ok`, with what it gave (`T`), or the failure it threw or rejected with. */
export type RunResult<T extends object = object> =
  ({ readonly ok: true } & Readonly<T>) | { readonly ok: false; readonly error: unknown };
