/**
 * Reads a "retry after" value in either form of RFC 9110 section 10.2.3.
 * @module
 */

/**
 * A `Retry-After` value as a Date: delay-seconds (`120`, also as a number) are counted from `now`,
 * anything else is read as a date (an HTTP date, or ISO 8601 as a JSON body would carry it).
 * Returns undefined for anything unreadable.
 */
export function parseRetryAfter(value: unknown, now = Date.now()): Date | undefined {
  if (typeof value === 'number') {
    return Number.isFinite(value) && value >= 0 ? new Date(now + value * 1000) : undefined;
  }
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  // Checked before Date.parse, which would read '5' as the year 2005.
  if (/^\d+$/.test(text)) return new Date(now + Number(text) * 1000);
  const time = Date.parse(text);
  return Number.isNaN(time) ? undefined : new Date(time);
}
