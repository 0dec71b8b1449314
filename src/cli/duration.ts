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

// The reader of a typed duration is the core's, so `--since` reads as `since: '48h'` does.
export { durationOf } from '../utils/duration.js';
