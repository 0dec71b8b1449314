/**
 * `schoolhooks/otel`: OpenTelemetry spans and metrics for every delivery and every inbox run
 * (docs/telemetry.md). Needs `@opentelemetry/api` (an optional peer dependency); the core
 * never loads it.
 * @module schoolhooks/otel
 */

import {
  context,
  isSpanContextValid,
  metrics,
  SpanKind,
  trace,
  type MeterProvider,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import type { DeliveryObservation, Telemetry, TelemetryStart } from '../telemetry.js';
import { VERSION } from '../../version.js';
import { createInstruments, type Instruments } from './instruments.js';
import { ATTRIBUTES, SCOPE, SPANS } from './names.js';
import { SpanObservation } from './observation.js';
import { linkOf } from './trace-carrier.js';

export { ATTRIBUTES, METRICS, SPANS } from './names.js';
export { otelWatchdog } from './watchdog.js';
export type { OtelWatchdogOptions } from './watchdog.js';

/** Options of {@link openTelemetry}. */
export interface OpenTelemetryOptions {
  /** Where spans go. Default: the global tracer provider (`trace.getTracerProvider()`). */
  tracerProvider?: TracerProvider;
  /** Where metrics go. Default: the global meter provider (`metrics.getMeterProvider()`). */
  meterProvider?: MeterProvider;
}

/**
 * The `telemetry` option of `createReceiver` on OpenTelemetry: a span `schoolhooks.delivery` per
 * delivery (`schoolhooks.job` per inbox run, linked to its delivery), a child span
 * `schoolhooks.handlers` inside which the handlers run, the counter `schoolhooks.deliveries`
 * and the histograms `schoolhooks.delivery.duration` and `schoolhooks.handlers.duration` (ms).
 * No secret, signature, body or token is ever an attribute.
 *
 * Without providers it reports to the global ones, looked up as each delivery starts, so it may
 * be created before the OpenTelemetry SDK is started.
 *
 * @example
 * ```ts
 * import { createReceiver } from 'schoolhooks';
 * import { openTelemetry } from 'schoolhooks/otel';
 *
 * // After the OpenTelemetry Node SDK was started (see docs/telemetry.md):
 * const receiver = createReceiver({
 *   secret: process.env.SCHOOL_WEBHOOK_SECRET!,
 *   telemetry: openTelemetry(),
 * });
 * ```
 */
export function openTelemetry({
  tracerProvider,
  meterProvider,
}: OpenTelemetryOptions = {}): Telemetry {
  // The global providers may be registered after this call (the SDK started later), and the
  // global meter provider has no proxy: look both up per delivery, make instruments once each.
  let tracing: { provider: TracerProvider; tracer: Tracer } | undefined;
  let metering: { provider: MeterProvider; instruments: Instruments } | undefined;

  function tracerOf(provider: TracerProvider): Tracer {
    if (tracing?.provider !== provider) {
      tracing = { provider, tracer: provider.getTracer(SCOPE, VERSION) };
    }
    return tracing.tracer;
  }

  function instrumentsOf(provider: MeterProvider): Instruments {
    if (metering?.provider !== provider) {
      metering = { provider, instruments: createInstruments(provider.getMeter(SCOPE, VERSION)) };
    }
    return metering.instruments;
  }

  return {
    start: function startObservation(start: TelemetryStart): DeliveryObservation {
      const tracer = tracerOf(tracerProvider ?? trace.getTracerProvider());
      const instruments = instrumentsOf(meterProvider ?? metrics.getMeterProvider());
      const parent = context.active();
      if (start.kind === 'job') {
        // A new trace, linked to the delivery's: the run may come hours later, and the worker
        // may run it from inside whatever context happened to enqueue it.
        const link = linkOf(start.link);
        const span = tracer.startSpan(SPANS.job, {
          kind: SpanKind.CONSUMER,
          root: true,
          attributes: { [ATTRIBUTES.attempt]: start.attempt },
          ...(link && { links: [link] }),
        });
        return new SpanObservation(tracer, instruments, span, parent);
      }
      // SERVER, unless an HTTP instrumentation already made this request's server span: then
      // ours nests under it as INTERNAL (one server span per request).
      const active = trace.getSpanContext(parent);
      const nested = active !== undefined && isSpanContextValid(active) && !active.isRemote;
      const span = tracer.startSpan(
        SPANS.delivery,
        { kind: nested ? SpanKind.INTERNAL : SpanKind.SERVER },
        parent,
      );
      return new SpanObservation(tracer, instruments, span, parent);
    },
  };
}
