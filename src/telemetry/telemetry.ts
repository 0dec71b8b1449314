/**
 * The telemetry observer the receiver reports to: one call as each delivery (or inbox run)
 * starts, whose answer follows it to its end. The core holds only this interface;
 * `schoolhooks/otel` implements it on OpenTelemetry.
 * @module
 */

import type { Outcome } from '../receiving/outcome.js';
import type { SignatureFailureReason } from '../platform/signature-failure.js';

/**
 * A trace context carried from a delivery into the inbox job it became (W3C `traceparent` and
 * `tracestate`, as an OpenTelemetry propagator writes them). Never holds a secret.
 */
export type TraceCarrier = Record<string, string>;

/** What is known as a delivery or an inbox run starts. */
export type TelemetryStart =
  | { kind: 'delivery' }
  | {
      kind: 'job';
      /** The run's attempt, 1-based. */
      attempt: number;
      /** The trace context of the delivery that stored the job, to link the run to it. */
      link?: TraceCarrier | undefined;
    };

/** How one delivery or inbox run ended. Never holds a secret, a signature, a body or a token. */
export interface TelemetryRecord {
  /** `delivery` for an HTTP delivery, `job` for a worker's run of an inbox job. */
  kind: 'delivery' | 'job';
  outcome: Outcome;
  /** The HTTP status the outcome is answered with (for a job, the status it maps to). */
  status: number;
  /** The event name, once the envelope was read. */
  event?: string | undefined;
  idempotencyKey?: string | undefined;
  /** The tenant the route named, when one endpoint serves many schools. */
  tenant?: string | undefined;
  /** For a job: its attempt, 1-based. */
  attempt?: number | undefined;
  /** From the start to the answer, in ms. */
  durationMs: number;
  /** For `invalid_signature`: why the signature failed (`SignatureError.reason`). */
  signatureReason?: SignatureFailureReason | undefined;
}

/** How the handlers of one delivery ended. */
export interface HandlersRecord {
  /** `failed` when a handler threw or rejected (after a timeout too: how they ended at last). */
  result: 'succeeded' | 'failed';
  /** True when they outlived handlerTimeoutMs, so the delivery was answered `timeout` first. */
  timedOut: boolean;
  /** From their start until they settled (after a timeout, until they settled anyway), in ms. */
  durationMs: number;
}

/**
 * One delivery (or inbox run) being observed. The receiver calls `end` exactly once; the
 * handler methods only when handlers run. Its methods must not throw.
 */
export interface DeliveryObservation {
  /**
   * Run the handlers inside this delivery's context and return what `run` returns, so that
   * spans the handlers make themselves (a database call) nest under the delivery's.
   */
  runHandlers<T>(run: () => T): T;
  /** The handlers settled; called once, possibly after `end` when they timed out. */
  handlersEnded(record: HandlersRecord): void;
  /** The trace context to store with an inbox job, so its run links back to this delivery. */
  carrier(): TraceCarrier | undefined;
  /** The delivery was answered (or the inbox run ended). */
  end(record: TelemetryRecord): void;
}

/**
 * The `telemetry` option of `createReceiver`: called once per delivery, and once per inbox run
 * by the inbox's worker. Without it nothing is measured.
 *
 * @example
 * ```ts
 * import { openTelemetry } from 'schoolhooks/otel';
 *
 * const receiver = createReceiver({ secret, telemetry: openTelemetry() });
 * ```
 */
export interface Telemetry {
  /** A delivery or an inbox run starts. */
  start(start: TelemetryStart): DeliveryObservation;
}
