/**
 * The inspector's health banner: what the watchdogs of `listen`'s receiver (one, or one a tenant)
 * say, made one status for the page (`GET api/health`). Counts and times only: never a key, a
 * body or a secret.
 * @module
 */

import type { Health, HealthStatus } from '../../watchdog/health.js';
import type { Watchdog } from '../../watchdog/create-watchdog.js';
import type { InspectorHealth } from './page-api.js';

/** The statuses, worst first: the banner shows the worst of all tenants'. */
const WORST_FIRST: readonly HealthStatus[] = ['failing', 'at_risk', 'silent', 'ok'];

/**
 * Read every watchdog now and make one banner of their reports: the worst status, the deliveries
 * at risk of all, the earliest `disablesAt` and the latest success.
 *
 * @example
 * ```ts
 * const banner = await readBanner([createWatchdog({ receiver })]);
 * // { status: 'at_risk', atRisk: 1, disablesAt: '2026-12-04T08:58:12.004Z', … }
 * ```
 */
export async function readBanner(watchdogs: readonly Watchdog[]): Promise<InspectorHealth> {
  const reports = await Promise.all(watchdogs.map((watchdog) => watchdog.check()));
  return bannerOf(reports);
}

/** One banner of `reports` (see {@link readBanner}). */
export function bannerOf(reports: readonly Health[]): InspectorHealth {
  const status =
    WORST_FIRST.find((candidate) => reports.some((report) => report.status === candidate)) ?? 'ok';
  const disablesAt = earliest(reports.map((report) => report.disablesAt));
  const successes = reports
    .map((report) => report.lastSuccessAt)
    .filter(isString)
    .sort();
  const lastSuccessAt = successes.at(-1);
  return {
    status,
    atRisk: reports.reduce((sum, report) => sum + report.atRisk.length, 0),
    ...(disablesAt === undefined ? {} : { disablesAt }),
    ...(lastSuccessAt === undefined ? {} : { lastSuccessAt }),
  };
}

/** The earliest of ISO dates (they sort as text), or undefined. */
function earliest(dates: readonly (string | undefined)[]): string | undefined {
  return dates.filter(isString).sort()[0];
}

function isString(value: string | undefined): value is string {
  return value !== undefined;
}
