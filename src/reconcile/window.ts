/**
 * The window a reconcile run reads: where it starts (`since`), where it ends (`until`, never later
 * than now less `minAgeMs`), and how far back its paid invoices reach (`lookbackMs`), refused when
 * it reaches past the records the store keeps.
 * @module
 */

import { durationOf } from '../utils/duration.js';
import { RECONCILE_DEFAULTS } from '../defaults.js';
import { ConfigError } from '../errors.js';
import { DAY } from '../platform/platform-contract.js';

/**
 * `since` as ms since the epoch: a Date, a number of ms since the epoch, or a duration before
 * `now` (`<n>m`, `<n>h`, `<n>d`). Anything else is a `ConfigError`.
 */
export function sinceMs(since: unknown, now: number): number {
  if (since instanceof Date) return checkedTime(since.getTime(), 'since');
  if (typeof since === 'number') return checkedTime(since, 'since');
  if (typeof since === 'string') {
    const ago = durationOf(since.trim());
    if (ago !== undefined) return now - ago;
  }
  throw new ConfigError(
    `since must be a Date, ms since the epoch, or a duration before now such as '90m', '48h' or ` +
      `'7d'; got ${describe(since)}`,
  );
}

/** `until` as ms since the epoch, or undefined when it is left out. */
export function untilMs(until: unknown): number | undefined {
  if (until === undefined) return undefined;
  if (until instanceof Date) return checkedTime(until.getTime(), 'until');
  if (typeof until === 'number') return checkedTime(until, 'until');
  throw new ConfigError(`until must be a Date or ms since the epoch; got ${describe(until)}`);
}

/** A run's window, in ms since the epoch. */
export interface ReconcileWindow {
  /** `since`. */
  readonly from: number;
  /** `until` or now, never later than now less `minAgeMs`. */
  readonly to: number;
  /** Where the paid invoices' list starts: `from` less `lookbackMs`. */
  readonly invoicesFrom: number;
}

/** What {@link windowOf} reads besides the run's options. */
export interface WindowSettings {
  readonly now: number;
  readonly minAgeMs: number;
  readonly lookbackMs: number;
  /** Whether the run lists invoices: then the window reaches `lookbackMs` further back. */
  readonly listsInvoices: boolean;
}

/**
 * The window of a run. A `ConfigError` for one that is empty (`since` at or after its end), and
 * for one whose earliest listed date is older than the records the store keeps
 * (`RECONCILE_DEFAULTS.recordTtlMs`): an entity a webhook handled that long ago has no record left,
 * and would be recovered a second time.
 */
export function windowOf(
  since: unknown,
  until: unknown,
  { now, minAgeMs, lookbackMs, listsInvoices }: WindowSettings,
): ReconcileWindow {
  const from = sinceMs(since, now);
  const to = Math.min(untilMs(until) ?? now, now - minAgeMs);
  if (from >= to) {
    throw new ConfigError(
      `the window is empty: since (${iso(from)}) is not before its end (${iso(to)}: until or ` +
        `now, less minAgeMs ${minAgeMs} ms, which leaves younger entities to their webhooks)`,
    );
  }
  const invoicesFrom = from - lookbackMs;
  const earliest = listsInvoices ? invoicesFrom : from;
  const { recordTtlMs } = RECONCILE_DEFAULTS;
  if (earliest < now - recordTtlMs) {
    const reach = listsInvoices ? ` (since less lookbackMs ${lookbackMs} ms, for invoices)` : '';
    throw new ConfigError(
      `the window reaches back to ${iso(earliest)}${reach}, past what the store remembers: ` +
        `records of handled entities are kept ${recordTtlMs / DAY} days, so an older entity a ` +
        'webhook handled would be recovered again; choose a later since',
    );
  }
  return { from, to, invoicesFrom };
}

function checkedTime(time: number, name: string): number {
  if (!Number.isFinite(time)) throw new ConfigError(`${name} must be a valid date`);
  return time;
}

function iso(time: number): string {
  return new Date(time).toISOString();
}

/** A value as an error shows it: a short string quoted, anything else by its type. */
function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 40));
  return value === null ? 'null' : typeof value;
}
