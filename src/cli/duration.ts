/**
 * The one format of a duration in everything the CLI and the demo print, and reads (`--down-for`).
 * @module
 */

/**
 * A duration as people read it: `4h 46m`, `11m`, `15s`, `1h 5s`, `14d`, `0s`; only the units
 * that are not zero, to the nearest second.
 *
 * @example
 * ```ts
 * formatDuration(17_160_000); // '4h 46m'
 * ```
 */
export function formatDuration(ms: number): string {
  const total = Math.round(Math.max(0, ms) / 1000);
  const parts: string[] = [];
  const days = Math.floor(total / 86_400);
  const hours = Math.floor((total % 86_400) / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  if (days > 0) parts.push(`${days}d`);
  if (hours > 0) parts.push(`${hours}h`);
  if (minutes > 0) parts.push(`${minutes}m`);
  if (seconds > 0 || parts.length === 0) parts.push(`${seconds}s`);
  return parts.join(' ');
}

const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000 } as const;

/**
 * A duration typed in the format {@link formatDuration} prints (`5h`, `2h 30m`, `90m`, `1d 12h`):
 * whole numbers of days, hours, minutes and seconds, in that order, each unit at most once, spaces
 * between them optional; in ms, else undefined.
 *
 * @example
 * ```ts
 * durationOf('4h 46m'); // 17_160_000
 * ```
 */
export function durationOf(text: string): number | undefined {
  const match = /^(?:(\d{1,9})d)? *(?:(\d{1,9})h)? *(?:(\d{1,9})m)? *(?:(\d{1,9})s)?$/.exec(text);
  if (!match || text.trim() === '' || text !== text.trim()) return undefined;
  const [, days = '0', hours = '0', minutes = '0', seconds = '0'] = match;
  return (
    Number(days) * UNIT_MS.d +
    Number(hours) * UNIT_MS.h +
    Number(minutes) * UNIT_MS.m +
    Number(seconds) * UNIT_MS.s
  );
}
