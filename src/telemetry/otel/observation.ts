/**
 * One delivery (or inbox run) observed on OpenTelemetry: its span, the handlers' child span, and
 * the metric points written when it ends.
 * @module
 */

import {
  context,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { OUTCOMES } from '../../receiving/outcome.js';
import type {
  DeliveryObservation,
  HandlersRecord,
  TelemetryRecord,
  TraceCarrier,
} from '../telemetry.js';
import type { Instruments } from './instruments.js';
import { ATTRIBUTES, SPANS } from './names.js';
import { carrierOf } from './trace-carrier.js';

/** The observation of one delivery or job, as `Telemetry.start` returns it. */
export class SpanObservation implements DeliveryObservation {
  readonly #tracer: Tracer;
  readonly #instruments: Instruments;
  readonly #span: Span;
  /** The context the span was started in, with the span set: the handlers' parent. */
  readonly #context: Context;
  #handlersSpan: Span | undefined;
  /** How the handlers ended, while the delivery has not (metrics wait for the event name). */
  #handlers: HandlersRecord | undefined;
  /** How the delivery ended, while the handlers have not (they outlived a timeout). */
  #ended: TelemetryRecord | undefined;

  constructor(tracer: Tracer, instruments: Instruments, span: Span, parent: Context) {
    this.#tracer = tracer;
    this.#instruments = instruments;
    this.#span = span;
    this.#context = trace.setSpan(parent, span);
  }

  runHandlers<T>(run: () => T): T {
    const span = this.#tracer.startSpan(SPANS.handlers, undefined, this.#context);
    this.#handlersSpan = span;
    // The handlers' own spans (a database call, an HTTP request) nest under this one.
    return context.with(trace.setSpan(this.#context, span), run);
  }

  handlersEnded(record: HandlersRecord): void {
    const span = this.#handlersSpan;
    if (span !== undefined) {
      this.#handlersSpan = undefined;
      span.setAttribute(ATTRIBUTES.handlersResult, resultOf(record));
      // After a timeout, how the handlers ended at last: a late failure released the key.
      if (record.timedOut) span.setAttribute(ATTRIBUTES.handlersLateResult, record.result);
      if (resultOf(record) !== 'succeeded') {
        span.setAttribute(ATTRIBUTES.errorType, resultOf(record));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    }
    if (this.#ended === undefined) this.#handlers = record;
    else this.#recordHandlers(record, this.#ended);
  }

  carrier(): TraceCarrier | undefined {
    return carrierOf(this.#span.spanContext());
  }

  end(record: TelemetryRecord): void {
    if (this.#ended !== undefined) return;
    this.#ended = record;
    const { kind, outcome, status, event, idempotencyKey, tenant } = record;
    const span = this.#span;
    const attributes: Attributes = { [ATTRIBUTES.outcome]: outcome };
    if (event !== undefined) attributes[ATTRIBUTES.event] = event;
    if (idempotencyKey !== undefined) attributes[ATTRIBUTES.idempotencyKey] = idempotencyKey;
    // On the span only: as a metric attribute, one series per school would multiply every metric.
    if (tenant !== undefined) attributes[ATTRIBUTES.tenant] = tenant;
    if (kind === 'delivery') attributes[ATTRIBUTES.statusCode] = status;
    if (record.signatureReason !== undefined) {
      attributes[ATTRIBUTES.signatureReason] = record.signatureReason;
    }
    // A server span is an error only on 5xx: a 4xx is the client's mistake, not ours
    // (OpenTelemetry semantic conventions, "Status" of HTTP server spans). A job run is an
    // error whenever it did not succeed: it is retried or dead-lettered.
    const rule = OUTCOMES[outcome];
    const failed = kind === 'delivery' ? rule.spanError : rule.run !== 'succeeded';
    if (failed) attributes[ATTRIBUTES.errorType] = outcome;
    span.setAttributes(attributes);
    if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();

    const points: Attributes = { [ATTRIBUTES.kind]: kind, [ATTRIBUTES.outcome]: outcome };
    if (event !== undefined) points[ATTRIBUTES.event] = event;
    this.#instruments.deliveries.add(1, points);
    this.#instruments.deliveryDuration.record(record.durationMs, points);
    const handlers = this.#handlers;
    if (handlers !== undefined) {
      this.#handlers = undefined;
      this.#recordHandlers(handlers, record);
    }
  }

  #recordHandlers(handlers: HandlersRecord, { kind, event }: TelemetryRecord): void {
    const points: Attributes = {
      [ATTRIBUTES.kind]: kind,
      [ATTRIBUTES.handlersResult]: resultOf(handlers),
    };
    if (event !== undefined) points[ATTRIBUTES.event] = event;
    this.#instruments.handlersDuration.record(handlers.durationMs, points);
  }
}

/** `timeout` for handlers that outlived handlerTimeoutMs, else how they ended. */
function resultOf({ result, timedOut }: HandlersRecord): 'succeeded' | 'failed' | 'timeout' {
  return timedOut ? 'timeout' : result;
}
