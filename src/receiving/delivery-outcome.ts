/**
 * How a delivery ended, and what it is answered with. A {@link DeliveryOutcome} is made by one of
 * three named constructors, one per what is known by then; {@link answer} gives the status and
 * JSON body of an HTTP delivery's outcome (from the outcome table, outcome.ts), and
 * {@link runResultOf} what an inbox does after a worker's run.
 * @module
 */

import { causeMessageOf, type SchoolhooksError } from '../errors.js';
import type { StoredRunResult } from '../inbox/types.js';
import { OUTCOMES, type Outcome } from './outcome.js';

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
export class DeliveryOutcome {
  private constructor(
    readonly outcome: Outcome,
    readonly error: SchoolhooksError | undefined,
    readonly event: string | undefined,
    readonly idempotencyKey: string | undefined,
  ) {}

  /** Ended before the envelope was read (request, body, signature, envelope): no event to name. */
  static beforeEvent(outcome: Outcome, error: SchoolhooksError): DeliveryOutcome {
    return new DeliveryOutcome(outcome, error, undefined, undefined);
  }

  /** The event's delivery failed: `error` is told to `onError`. */
  static failed(outcome: Outcome, of: EventRef, error: SchoolhooksError): DeliveryOutcome {
    return new DeliveryOutcome(outcome, error, of.event, of.idempotencyKey);
  }

  /** The event's delivery ended with no failure to tell. */
  static quiet(outcome: QuietOutcome, of: EventRef): DeliveryOutcome {
    return new DeliveryOutcome(outcome, undefined, of.event, of.idempotencyKey);
  }

  /** True for an ending (what ends a run of steps: see `Stages` in run-steps.ts). */
  static is(value: unknown): value is DeliveryOutcome {
    return value instanceof DeliveryOutcome;
  }
}

/** The JSON body of every answer. */
export interface WebhookResponseBody {
  ok: boolean;
  outcome: Outcome;
  idempotencyKey?: string;
}

/** What `Receiver.handle` resolves to: the status and JSON body to answer with. */
export interface WebhookResult {
  status: number;
  outcome: Outcome;
  body: WebhookResponseBody;
}

/** The status and JSON body that answer an outcome. */
export function answer(outcome: Outcome, idempotencyKey: string | undefined): WebhookResult {
  const { status, success } = OUTCOMES[outcome];
  const body: WebhookResponseBody = { ok: success, outcome };
  if (idempotencyKey !== undefined) body.idempotencyKey = idempotencyKey;
  return { status, outcome, body };
}

/** What a stored run came to, for the inbox: done, retry later, or a dead letter now. */
export function runResultOf(
  { outcome, error }: DeliveryOutcome,
  secrets: readonly string[],
): StoredRunResult {
  const { run } = OUTCOMES[outcome];
  if (run === 'succeeded') return { outcome, ok: true, retry: false };
  const result: StoredRunResult = { outcome, ok: false, retry: run === 'retry' };
  result.reason = `${outcome}: ${reasonOf(error, outcome, secrets)}`;
  return result;
}

/** The message a dead letter keeps: the handler's own error, or ours. */
function reasonOf(
  error: SchoolhooksError | undefined,
  outcome: Outcome,
  secrets: readonly string[],
): string {
  if (error === undefined) {
    return outcome === 'in_flight' ? 'another worker is running this event' : outcome;
  }
  // As the HandlerError's own message says it: one line, bounded, no secret of ours in it.
  if (error.code === 'handler_failed' && error.cause !== undefined) {
    return causeMessageOf(error.cause, secrets);
  }
  return error.message;
}
