/**
 * The one check every store's `watch` makes of a batch before it sends anything: numbers a
 * server can store and compare (src/watchdog/types.ts).
 * @module
 */

import { ConfigError } from '../errors.js';
import type { WatchBatch } from '../watchdog/types.js';

/**
 * Throws a `ConfigError` naming `store` unless keepMs is positive, keepSummaryMs finite and at
 * least keepMs (a summary outlives its failing deliveries), maxFailing a whole number of at least
 * 0, and now and every note's time finite.
 *
 * @example
 * ```ts
 * checkWatchBatch(
 *   { notes: [], keepMs: 60_000, keepSummaryMs: 86_400_000, maxFailing: 10, now: Date.now() },
 *   'redisStore',
 * );
 * ```
 */
export function checkWatchBatch(
  { notes, keepMs, keepSummaryMs, maxFailing, now }: WatchBatch,
  store: string,
): void {
  if (!(keepMs > 0) || !Number.isFinite(keepMs) || !Number.isFinite(now)) {
    throw new ConfigError(`${store}: watch needs a positive keepMs and a finite now`);
  }
  if (!(keepSummaryMs >= keepMs) || !Number.isFinite(keepSummaryMs)) {
    throw new ConfigError(`${store}: watch needs a finite keepSummaryMs of at least keepMs`);
  }
  if (!Number.isSafeInteger(maxFailing) || maxFailing < 0) {
    throw new ConfigError(`${store}: watch needs maxFailing, a whole number of at least 0`);
  }
  if (notes.some((note) => !Number.isFinite(note.at))) {
    throw new ConfigError(`${store}: every note needs a finite time`);
  }
}
