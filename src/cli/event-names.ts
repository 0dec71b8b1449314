/**
 * The event names the CLI takes (`send PaymentCompleted`, `--event`, `schema`), and the answer to
 * one mistyped.
 * @module
 */

import { isKnownEvent as isEventName, KNOWN_EVENTS } from '../platform/events/index.js';
import { nearestName } from '../utils/nearest-name.js';
import { UsageError } from './errors.js';

// The receiver's own list and check: `on()` and the CLI accept the same names.
export { isEventName, KNOWN_EVENTS };

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
