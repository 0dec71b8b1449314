/**
 * The event names the CLI takes (`send PaymentCompleted`, `--event`, `schema`), and the answer to
 * one mistyped.
 * @module
 */

import {
  FIXED_CONTRACT_EVENTS,
  UNCONTRACTED_EVENTS,
  type KnownEventName,
} from '../events/index.js';
import { nearestName } from '../nearest-name.js';
import { UsageError } from './errors.js';

/** Every event name the platform sends, with a fixture or without. */
export const KNOWN_EVENTS: readonly KnownEventName[] = [
  ...FIXED_CONTRACT_EVENTS,
  ...UNCONTRACTED_EVENTS,
];

/** Whether `name` is an event the platform sends (with or without a fixture). */
export function isEventName(name: string): name is KnownEventName {
  return (KNOWN_EVENTS as readonly string[]).includes(name);
}

/**
 * A {@link UsageError} for an `--event` that is a near miss of a real event name
 * (`paymentcompleted`, `PaymentComplete`): a name far from every event passes, to try how a
 * receiver answers an event it does not know.
 */
export function checkEventOption(name: string | undefined): void {
  if (name === undefined || isEventName(name)) return;
  const near = nearestName(name, KNOWN_EVENTS);
  if (near !== undefined) {
    throw new UsageError(`--event ${name} is not an event of the platform; did you mean ${near}?`);
  }
}
