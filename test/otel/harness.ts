/**
 * The OpenTelemetry SDK's own in-memory pieces, wired to a receiver: the spans it finished and
 * the metric points it recorded, read back as plain data.
 */

import { context, type Attributes, type SpanKind, type SpanStatusCode } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { createReceiver, type Receiver, type ReceiverOptions } from '../../src/index.js';
import { openTelemetry } from '../../src/telemetry/otel/index.js';
import { SECRET } from '../helpers/deliveries.js';

/** A finished span as plain data. */
export interface SpanRecord {
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  attributes: Attributes;
  status: SpanStatusCode;
  links: { traceId: string; spanId: string; attributes: Attributes | undefined }[];
  events: { name: string; attributes: Attributes | undefined }[];
  scope: { name: string; version: string | undefined };
}

/** One data point of one metric. */
export interface PointRecord {
  metric: string;
  unit: string;
  attributes: Attributes;
  /** A counter's sum, or a histogram's count. */
  value: number;
  /** A histogram's sum. */
  sum?: number;
}

/**
 * Run handlers' async continuations in their context, as the Node SDK does. Returns the function
 * that puts the global context manager back.
 */
export function useAsyncContext(): () => void {
  const manager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(manager);
  return () => {
    manager.disable();
    context.disable();
  };
}

/** Fresh providers with in-memory exporters, and receivers that report to them. */
export function telemetryHarness() {
  const spanExporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(spanExporter)],
  });
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  // Exports only when told to (forceFlush), never on a timer during a test.
  const reader = new PeriodicExportingMetricReader({
    exporter: metricExporter,
    exportIntervalMillis: 3_600_000,
  });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const telemetry = openTelemetry({ tracerProvider, meterProvider });

  return {
    tracerProvider,
    meterProvider,
    telemetry,

    /** A receiver with this telemetry. */
    receiver(options: Partial<ReceiverOptions> = {}): Receiver {
      const receiver = createReceiver({ secret: SECRET, telemetry, ...options });
      // Failures are expected here; without onError the receiver would only log them.
      receiver.onError(() => {});
      return receiver;
    },

    /** Every span finished so far, in the order they ended. */
    spans(): SpanRecord[] {
      return spanExporter.getFinishedSpans().map(spanRecord);
    },

    /** Every point of every metric, cumulative since the harness was made. */
    async points(): Promise<PointRecord[]> {
      metricExporter.reset();
      await reader.forceFlush();
      const exported = metricExporter.getMetrics().at(-1);
      if (exported === undefined) return [];
      return exported.scopeMetrics.flatMap(({ metrics }) =>
        metrics.flatMap((metric) =>
          metric.dataPoints.map((point): PointRecord => {
            const base = {
              metric: metric.descriptor.name,
              unit: metric.descriptor.unit,
              attributes: point.attributes,
            };
            if (metric.dataPointType === DataPointType.HISTOGRAM) {
              const { count, sum } = point.value as { count: number; sum: number };
              return { ...base, value: count, sum };
            }
            return { ...base, value: point.value as number };
          }),
        ),
      );
    },

    /** Everything exported, serialised, to search for what must never be there. */
    async serialised(): Promise<string> {
      metricExporter.reset();
      await reader.forceFlush();
      return JSON.stringify({
        spans: spanExporter.getFinishedSpans().map(spanRecord),
        metrics: metricExporter.getMetrics(),
      });
    },
  };
}

export type TelemetryHarness = ReturnType<typeof telemetryHarness>;

function spanRecord(span: ReadableSpan): SpanRecord {
  const { traceId, spanId } = span.spanContext();
  return {
    name: span.name,
    kind: span.kind,
    traceId,
    spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    attributes: span.attributes,
    status: span.status.code,
    links: span.links.map((link) => ({
      traceId: link.context.traceId,
      spanId: link.context.spanId,
      attributes: link.attributes,
    })),
    events: span.events.map((event) => ({ name: event.name, attributes: event.attributes })),
    scope: { name: span.instrumentationScope.name, version: span.instrumentationScope.version },
  };
}
