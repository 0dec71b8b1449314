/**
 * memoryStore's keeping of the watchdog's notes (src/watchdog/types.ts): per tenant, the last
 * success, the last attempt, and the deliveries answered non-2xx since, in plain maps. Its steps
 * ({@link keepNote}, {@link pruneKept}, {@link stateOfKept}) are the reference semantics: postgresStore
 * runs the same ones on the rows it locks; redisStore's Lua script follows them step by step. A
 * tenant's summary is never dropped here (it lives as long as the process; keepSummaryMs is for
 * servers that expire it); its failing deliveries are forgotten past keepMs, as on every store.
 *
 * Notes reach a store out of order (each process writes its own batches, once a second or every
 * 1 000 answers, and after an outage the notes it kept): a failure of a delivery that the store saw
 * succeed at a later or equal time is a late note, not a new failure. So each tenant also keeps the
 * keys that succeeded and when (their latest success), forgotten past keepMs like the failing
 * deliveries (a failure older than that is forgotten anyway) and at most `maxFailing` of them, the
 * latest successes kept. The other way round, a late success clears only what came at or before it:
 * a delivery whose last attempt came after it stays failing as it is, and the failing time moves to
 * the tenant's last attempt when that came after it (while a tenant fails, its last attempt is a
 * failure: a success at or after the failing time clears or moves it), so no field is added.
 * @module
 */

import type { AnswerNote, FailingDelivery, WatchBatch, WatchState } from '../watchdog/types.js';

/** One tenant's answers as they are kept. */
export interface Kept {
  lastSuccessAt: number | undefined;
  lastAttemptAt: number | undefined;
  failingSince: number | undefined;
  /** By key; a delivery whose note changed it is a new object (so a writer can tell what changed). */
  readonly failing: Map<string, FailingDelivery>;
  /** The latest success of each key that succeeded, by key: a failure at or before it is ignored. */
  readonly succeeded: Map<string, number>;
}

/** A tenant of which nothing is kept yet. */
export function emptyKept(): Kept {
  return {
    lastSuccessAt: undefined,
    lastAttemptAt: undefined,
    failingSince: undefined,
    failing: new Map(),
    succeeded: new Map(),
  };
}

/** The notes of every tenant of one memoryStore. */
export class MemoryWatch {
  readonly #scopes = new Map<string, Kept>();

  /** Keep `batch`'s notes, forget what is past its limits, and give back the tenant it reads. */
  watch({ notes, keepMs, maxFailing, now, read }: WatchBatch): WatchState | undefined {
    const touched = new Set<Kept>();
    for (const note of notes) {
      let kept = this.#scopes.get(note.scope);
      if (kept === undefined) this.#scopes.set(note.scope, (kept = emptyKept()));
      keepNote(kept, note);
      touched.add(kept);
    }
    for (const kept of touched) pruneKept(kept, now - keepMs, maxFailing);
    if (read === undefined) return undefined;
    const kept = this.#scopes.get(read);
    if (kept === undefined) return { failing: [] };
    pruneKept(kept, now - keepMs, maxFailing);
    return stateOfKept(kept);
  }
}

/**
 * One note kept: the last attempt and success are the latest seen, a success clears its key and
 * the failing time it follows (unless an attempt came after it: a late note of a success before a
 * failure), an answer not 2xx counts an attempt of its key (notes may come out of order: the first
 * attempt is the earliest, the last the latest) unless its key succeeded at that time or later (a
 * late note of an attempt before the success).
 */
export function keepNote(kept: Kept, { at, ok, key, event }: AnswerNote): void {
  const lastAttemptAt = Math.max(kept.lastAttemptAt ?? at, at);
  kept.lastAttemptAt = lastAttemptAt;
  if (ok) {
    kept.lastSuccessAt = Math.max(kept.lastSuccessAt ?? at, at);
    if (kept.failingSince !== undefined && kept.failingSince <= at) {
      // While failing, every attempt since failingSince failed: one after `at` fails from then.
      kept.failingSince = lastAttemptAt > at ? lastAttemptAt : undefined;
    }
    if (key !== undefined) {
      // A failure after this success (its note came first) keeps the delivery failing.
      if ((kept.failing.get(key)?.lastAttemptAt ?? at) <= at) kept.failing.delete(key);
      keepSuccess(kept, key, at);
    }
    return;
  }
  // Failing since the first answer not 2xx after the last success (notes may come out of order).
  if (kept.lastSuccessAt === undefined || at > kept.lastSuccessAt) {
    kept.failingSince = Math.min(kept.failingSince ?? at, at);
  }
  if (key === undefined) return;
  const succeededAt = kept.succeeded.get(key);
  if (succeededAt !== undefined && succeededAt >= at) return;
  const before = kept.failing.get(key);
  kept.failing.set(key, {
    key,
    event: before?.event ?? event ?? '',
    firstAttemptAt: Math.min(before?.firstAttemptAt ?? at, at),
    attemptsSeen: (before?.attemptsSeen ?? 0) + 1,
    lastAttemptAt: Math.max(before?.lastAttemptAt ?? at, at),
  });
}

/** Keeps `at` as `key`'s success unless a later one is kept: a key's latest success counts. */
export function keepSuccess(kept: Kept, key: string, at: number): void {
  kept.succeeded.set(key, Math.max(kept.succeeded.get(key) ?? at, at));
}

/**
 * Forget the deliveries first answered before `since`, and the oldest past `maxFailing`; the same
 * for the keys that succeeded, by their success (the earliest successes past `maxFailing` go).
 */
export function pruneKept(kept: Kept, since: number, maxFailing: number): void {
  for (const [key, at] of kept.succeeded) {
    if (at < since) kept.succeeded.delete(key);
  }
  let over = kept.succeeded.size - maxFailing;
  if (over > 0) {
    for (const key of earliestFirst(kept.succeeded)) {
      kept.succeeded.delete(key);
      if (--over === 0) break;
    }
  }
  for (const [key, failing] of kept.failing) {
    if (failing.firstAttemptAt < since) kept.failing.delete(key);
  }
  if (kept.failing.size <= maxFailing) return;
  const oldest = [...kept.failing.values()].sort((a, b) => a.firstAttemptAt - b.firstAttemptAt);
  for (const failing of oldest.slice(0, kept.failing.size - maxFailing)) {
    kept.failing.delete(failing.key);
  }
}

/**
 * The keys that succeeded, earliest success first (two of one time in the map's order): the map's
 * own order when it is already so, as it is while notes come in time order (each key is added at
 * its first success), else sorted. A sort of every success a tenant keeps, once a second, was most
 * of a write's work.
 */
function earliestFirst(succeeded: ReadonlyMap<string, number>): Iterable<string> {
  let last = -Infinity;
  for (const at of succeeded.values()) {
    if (at < last) return [...succeeded].sort((a, b) => a[1] - b[1]).map(([key]) => key);
    last = at;
  }
  return succeeded.keys();
}

/** What `kept` gives back to a reader: its failing deliveries oldest first attempt first. */
export function stateOfKept(kept: Kept): WatchState {
  return {
    lastSuccessAt: kept.lastSuccessAt,
    lastAttemptAt: kept.lastAttemptAt,
    failingSince: kept.failingSince,
    failing: [...kept.failing.values()].sort((a, b) => a.firstAttemptAt - b.firstAttemptAt),
  };
}
