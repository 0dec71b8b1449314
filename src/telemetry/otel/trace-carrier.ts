/**
 * The trace context an inbox job carries from its delivery to its run, as W3C Trace Context
 * (`traceparent`, `tracestate`). Written here rather than through the global propagator, so the
 * link works whatever propagator is registered (none, B3, Jaeger), and so baggage, which may
 * hold anything a user put there, never lands in a queue.
 * @module
 */

import {
  createTraceState,
  isSpanContextValid,
  type Link,
  type SpanContext,
} from '@opentelemetry/api';
import type { TraceCarrier } from '../telemetry.js';

// https://www.w3.org/TR/trace-context/#traceparent-header-field-values: version, trace-id,
// parent-id, trace-flags, lowercase hex; a later version may append fields after a dash.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
/** W3C caps tracestate at 32 members; a longer value is not ours, or was tampered with. */
const MAX_TRACESTATE_LENGTH = 512;

/** The carrier of a span context; undefined for an invalid one (no tracing SDK registered). */
export function carrierOf(spanContext: SpanContext): TraceCarrier | undefined {
  if (!isSpanContextValid(spanContext)) return undefined;
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, '0');
  const carrier: TraceCarrier = {
    traceparent: `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`,
  };
  const state = spanContext.traceState?.serialize();
  if (state) carrier['tracestate'] = state;
  return carrier;
}

/**
 * The link to the span a carrier names, or undefined when it names none. A job is not trusted
 * because a queue holds it: anything but a well-formed traceparent is dropped.
 */
export function linkOf(carrier: TraceCarrier | undefined): Link | undefined {
  const traceparent = carrier?.['traceparent'];
  if (typeof traceparent !== 'string') return undefined;
  const match = TRACEPARENT.exec(traceparent.trim());
  if (match === null) return undefined;
  const [, version, traceId, spanId, flags, rest] = match;
  // Version ff is invalid; version 00 has exactly four fields.
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  const context: SpanContext = {
    traceId: traceId!,
    spanId: spanId!,
    traceFlags: Number.parseInt(flags!, 16),
    isRemote: true,
  };
  if (!isSpanContextValid(context)) return undefined;
  const state = carrier?.['tracestate'];
  if (typeof state === 'string' && state.length > 0 && state.length <= MAX_TRACESTATE_LENGTH) {
    context.traceState = createTraceState(state);
  }
  return { context };
}
