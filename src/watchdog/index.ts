/**
 * The watchdog: know before the platform gives up. A receiver's health from what its store kept of
 * its answers (`at_risk`, `failing`), and from the platform's lists (`silent`).
 * @module schoolhooks/watchdog
 */

export { createWatchdog } from './create-watchdog.js';
export type { Watchdog, WatchdogApi, WatchdogOptions } from './create-watchdog.js';
export { healthOf, isAtRisk } from './health.js';
export type { AtRiskDelivery, Health, HealthRules, HealthStatus, Silence } from './health.js';
export type { AnswerNote, FailingDelivery, WatchBatch, WatchState } from './types.js';
// A mistake in createWatchdog's options; the receiver's class, so one catch serves both.
export { ConfigError } from '../errors.js';
