/**
 * The receiver's logger when none is given: failures reach the console, one line each.
 * @module
 */

import type { Logger } from './receiver-settings.js';

/** Longest value printed for one field: a line stays a line. */
const MAX_FIELD = 500;

/**
 * Writes `warn` and `error` lines to `console.warn` and `console.error`; `debug` and `info` go
 * nowhere. A line reads `schoolhooks: <message>: <err> (key=value …)`, on one line whatever the
 * values hold. It is given what every logger is given: never a secret, a signature or a body.
 */
export const consoleLogger: Logger = {
  debug() {},
  info() {},
  warn(fields, message) {
    console.warn(consoleLine(fields, message));
  },
  error(fields, message) {
    console.error(consoleLine(fields, message));
  },
};

/** One console line: the message, the error's message, then the other fields. */
export function consoleLine(fields: Record<string, unknown>, message = 'webhook'): string {
  // The message names the outcome, and the error's message says more than its code.
  const { err, code, outcome, ...rest } = fields;
  let line = `schoolhooks: ${message}`;
  if (err !== undefined) line += `: ${oneLine(err)}`;
  const pairs = Object.entries(rest).map(([key, value]) => `${key}=${oneLine(value)}`);
  if (pairs.length > 0) line += ` (${pairs.join(' ')})`;
  return line;
}

/** A value on one line, bounded: control characters become spaces. */
function oneLine(value: unknown): string {
  // eslint-disable-next-line no-control-regex -- control characters are what is replaced
  const text = String(value).replace(/[\u0000-\u001f\u007f]+/g, ' ');
  return text.length > MAX_FIELD ? `${text.slice(0, MAX_FIELD)}…` : text;
}
