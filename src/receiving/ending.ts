/**
 * How a delivery ended, made by one of three named constructors, one per what is known by then.
 * @module
 */

import type { SchoolhooksError } from '../errors.js';
import type { Outcome } from './outcome.js';

/** What names an event once its envelope is read: an envelope, a stored delivery or the event. */
export interface EventRef {
  readonly event: string;
  readonly idempotencyKey: string;
}

/** The outcomes that are no failure: nothing is told to `onError`. */
export type QuietOutcome =
  'duplicate' | 'in_flight' | 'superseded' | 'ignored' | 'queued' | 'processed';

/**
 * How a delivery ended: its outcome, the failure `onError` is told of, and what is known of the
 * event by then (for the log line, telemetry and the answer's `idempotencyKey`).
 */
export class Ending {
  private constructor(
    readonly outcome: Outcome,
    readonly error: SchoolhooksError | undefined,
    readonly event: string | undefined,
    readonly idempotencyKey: string | undefined,
  ) {}

  /** Ended before the envelope was read (request, body, signature, envelope): no event to name. */
  static beforeEvent(outcome: Outcome, error: SchoolhooksError): Ending {
    return new Ending(outcome, error, undefined, undefined);
  }

  /** The event's delivery failed: `error` is told to `onError`. */
  static failed(outcome: Outcome, of: EventRef, error: SchoolhooksError): Ending {
    return new Ending(outcome, error, of.event, of.idempotencyKey);
  }

  /** The event's delivery ended with no failure to tell. */
  static quiet(outcome: QuietOutcome, of: EventRef): Ending {
    return new Ending(outcome, undefined, of.event, of.idempotencyKey);
  }

  /** True for an ending (what ends a run of steps: see `Stages` in run-steps.ts). */
  static is(value: unknown): value is Ending {
    return value instanceof Ending;
  }
}
