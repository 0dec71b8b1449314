/**
 * memoryStore's keeping of the watchdog's notes (src/watchdog/types.ts): per tenant, the last
 * success, the last attempt, and the deliveries answered non-2xx since, in plain maps.
 * @module
 */

import type { AnswerNote, FailingDelivery, WatchBatch, WatchState } from '../watchdog/types.js';

/** One tenant's answers as they are kept. */
interface Kept {
  lastSuccessAt: number | undefined;
  lastAttemptAt: number | undefined;
  failingSince: number | undefined;
  readonly failing: Map<string, FailingDelivery>;
}

/** The notes of every tenant of one memoryStore. */
export class MemoryWatch {
  readonly #scopes = new Map<string, Kept>();

  /** Keep `batch`'s notes, forget what is past its limits, and give back the tenant it reads. */
  watch({ notes, keepMs, maxFailing, now, read }: WatchBatch): WatchState | undefined {
    const touched = new Set<Kept>();
    for (const note of notes) touched.add(this.#keep(note));
    for (const kept of touched) prune(kept, now - keepMs, maxFailing);
    if (read === undefined) return undefined;
    const kept = this.#scopes.get(read);
    if (kept === undefined) return { failing: [] };
    prune(kept, now - keepMs, maxFailing);
    return {
      lastSuccessAt: kept.lastSuccessAt,
      lastAttemptAt: kept.lastAttemptAt,
      failingSince: kept.failingSince,
      failing: [...kept.failing.values()].sort((a, b) => a.firstAttemptAt - b.firstAttemptAt),
    };
  }

  #keep({ scope, at, ok, key, event }: AnswerNote): Kept {
    let kept = this.#scopes.get(scope);
    if (kept === undefined) {
      kept = {
        lastSuccessAt: undefined,
        lastAttemptAt: undefined,
        failingSince: undefined,
        failing: new Map(),
      };
      this.#scopes.set(scope, kept);
    }
    kept.lastAttemptAt = Math.max(kept.lastAttemptAt ?? at, at);
    if (ok) {
      kept.lastSuccessAt = Math.max(kept.lastSuccessAt ?? at, at);
      if (kept.failingSince !== undefined && kept.failingSince <= at) kept.failingSince = undefined;
      if (key !== undefined) kept.failing.delete(key);
      return kept;
    }
    // Failing since the first answer not 2xx after the last success (notes may come out of order).
    if (kept.lastSuccessAt === undefined || at > kept.lastSuccessAt) {
      kept.failingSince = Math.min(kept.failingSince ?? at, at);
    }
    if (key === undefined) return kept;
    const before = kept.failing.get(key);
    kept.failing.set(key, {
      key,
      event: before?.event ?? event ?? '',
      firstAttemptAt: Math.min(before?.firstAttemptAt ?? at, at),
      attemptsSeen: (before?.attemptsSeen ?? 0) + 1,
      lastAttemptAt: Math.max(before?.lastAttemptAt ?? at, at),
    });
    return kept;
  }
}

/** Forget the deliveries first answered before `since`, and the oldest past `maxFailing`. */
function prune(kept: Kept, since: number, maxFailing: number): void {
  for (const [key, failing] of kept.failing) {
    if (failing.firstAttemptAt < since) kept.failing.delete(key);
  }
  if (kept.failing.size <= maxFailing) return;
  const oldest = [...kept.failing.values()].sort((a, b) => a.firstAttemptAt - b.firstAttemptAt);
  for (const failing of oldest.slice(0, kept.failing.size - maxFailing)) {
    kept.failing.delete(failing.key);
  }
}
