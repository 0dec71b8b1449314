import { createTraceState, TraceFlags, type SpanContext } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { carrierOf, linkOf } from '../../src/telemetry/otel/trace-carrier.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_ID = '00f067aa0ba902b7';

function spanContext(overrides: Partial<SpanContext> = {}): SpanContext {
  return { traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: TraceFlags.SAMPLED, ...overrides };
}

describe('the trace carrier of an inbox job', () => {
  it('writes a W3C traceparent, as the specification example', () => {
    expect(carrierOf(spanContext())).toEqual({ traceparent: `00-${TRACE_ID}-${SPAN_ID}-01` });
    expect(carrierOf(spanContext({ traceFlags: TraceFlags.NONE }))).toEqual({
      traceparent: `00-${TRACE_ID}-${SPAN_ID}-00`,
    });
  });

  it('keeps the tracestate, and reads both back into a remote link', () => {
    const traceState = createTraceState('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7');
    const carrier = carrierOf(spanContext({ traceState }))!;
    expect(carrier['tracestate']).toBe('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7');
    const link = linkOf(carrier)!;
    expect(link.context).toMatchObject({
      traceId: TRACE_ID,
      spanId: SPAN_ID,
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    });
    expect(link.context.traceState?.get('rojo')).toBe('00f067aa0ba902b7');
  });

  it('writes nothing for the invalid span context of a tracer without an SDK', () => {
    expect(carrierOf(spanContext({ traceId: '0'.repeat(32), spanId: '0'.repeat(16) }))).toBe(
      undefined,
    );
  });

  it('reads a later version by its first four fields', () => {
    expect(
      linkOf({ traceparent: `cc-${TRACE_ID}-${SPAN_ID}-01-what-comes-next` })?.context,
    ).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID });
  });

  it.each([
    ['no carrier', undefined],
    ['no traceparent', { tracestate: 'a=b' }],
    ['not a traceparent', { traceparent: 'hello' }],
    ['uppercase hex', { traceparent: `00-${TRACE_ID.toUpperCase()}-${SPAN_ID}-01` }],
    ['an all-zero trace id', { traceparent: `00-${'0'.repeat(32)}-${SPAN_ID}-01` }],
    ['an all-zero span id', { traceparent: `00-${TRACE_ID}-${'0'.repeat(16)}-01` }],
    ['version ff', { traceparent: `ff-${TRACE_ID}-${SPAN_ID}-01` }],
    ['a fifth field on version 00', { traceparent: `00-${TRACE_ID}-${SPAN_ID}-01-extra` }],
    ['a short span id', { traceparent: `00-${TRACE_ID}-${SPAN_ID.slice(1)}-01` }],
  ])('links to nothing from %s (a job is not trusted because a queue holds it)', (_, carrier) => {
    expect(linkOf(carrier)).toBe(undefined);
  });

  it('drops a tracestate longer than W3C allows, and keeps the link', () => {
    const link = linkOf({
      traceparent: `00-${TRACE_ID}-${SPAN_ID}-01`,
      tracestate: `a=${'x'.repeat(600)}`,
    });
    expect(link?.context.spanId).toBe(SPAN_ID);
    expect(link?.context.traceState).toBe(undefined);
  });
});
