/**
 * Outages of a seller's server, simulated: windows of virtual time in which every request to an
 * endpoint fails as a refused connection does, so a test can outlast the platform's retry span.
 * @module
 */

import { ConfigError } from '../errors.js';
import type { ExchangeResult } from './exchange.js';
import type { OutageOptions } from './simulator-types.js';

/** One outage: the endpoint is down from `from` up to, not including, `until` (virtual ms). */
export interface Outage {
  readonly from: number;
  until: number;
}

/** What the platform sees of a request to an endpoint that is down: no answer at all. */
export const ENDPOINT_DOWN: ExchangeResult = Object.freeze({
  status: null,
  error: 'endpoint down (simulated outage)',
});

/** The outage `options` describe, `now` being the clock's now; a ConfigError for bad input. */
export function outageOf(options: OutageOptions, now: number, label: string): Outage {
  // Read as unknown: a caller in plain JavaScript may pass anything, or nothing.
  const forMs: unknown = options?.forMs;
  const start: unknown = options?.from ?? now;
  if (typeof forMs !== 'number' || !Number.isFinite(forMs) || forMs <= 0) {
    throw new ConfigError(`${label}: forMs must be a positive number of ms`);
  }
  if (typeof start !== 'number' || !Number.isFinite(start)) {
    throw new ConfigError(`${label}: from must be a virtual time in ms since the epoch`);
  }
  return { from: start, until: start + forMs };
}

/** True when one of `outages` covers the instant `at`. */
export function isDown(outages: readonly Outage[], at: number): boolean {
  return outages.some((outage) => outage.from <= at && at < outage.until);
}

/** End now every outage under way; those that start later still happen. */
export function endOutages(outages: readonly Outage[], now: number): void {
  for (const outage of outages) if (outage.from <= now && now < outage.until) outage.until = now;
}
