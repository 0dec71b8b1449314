/**
 * The one reader of a duration typed by a person: `since: '48h'` of a reconcile run, `every:
 * '1h'` of a scheduled one, and the CLI's `--since` and `--down-for`.
 * @module
 */

import { DAY, HOUR, MINUTE, SECOND } from '../platform/platform-contract.js';

const PARTS = /^(?:(\d{1,9})d)? *(?:(\d{1,9})h)? *(?:(\d{1,9})m)? *(?:(\d{1,9})s)?$/;
const MILLISECONDS = /^(\d{1,15})ms$/;

/**
 * A duration in ms: whole numbers of days, hours, minutes and seconds, in that order, each unit
 * at most once, spaces between them optional (`48h`, `90m`, `1d 12h`, `4h 46m`, `30s`), or a
 * whole number of ms (`1500ms`); undefined for anything else (`1.5h`, `h`, `' 5m'`, `''`).
 *
 * @example
 * ```ts
 * durationOf('4h 46m'); // 17_160_000
 * durationOf('1500ms'); // 1500
 * ```
 */
export function durationOf(text: string): number | undefined {
  if (text === '' || text !== text.trim()) return undefined;
  const ms = MILLISECONDS.exec(text);
  if (ms !== null) return Number(ms[1]);
  const match = PARTS.exec(text);
  if (match === null) return undefined;
  const [, days = '0', hours = '0', minutes = '0', seconds = '0'] = match;
  return (
    Number(days) * DAY + Number(hours) * HOUR + Number(minutes) * MINUTE + Number(seconds) * SECOND
  );
}
