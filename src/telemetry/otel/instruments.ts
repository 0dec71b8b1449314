/**
 * The metric instruments of `schoolhooks/otel`, made from a meter once per meter provider.
 * @module
 */

import type { Counter, Histogram, Meter } from '@opentelemetry/api';
import { METRICS } from './names.js';
import { PLATFORM_LIMITS } from '../../platform/platform-contract.js';

/**
 * Bucket boundaries in ms: most deliveries end well under a millisecond, handlers take tens
 * of ms to seconds, and the platform gives up at its response timeout (the SDK's default buckets start at 5 ms).
 */
const DURATION_BUCKETS_MS = [
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  25,
  50,
  100,
  250,
  500,
  1000,
  2500,
  5000,
  10_000,
  PLATFORM_LIMITS.responseTimeoutMs,
];

/** The three instruments of docs/telemetry.md. */
export interface Instruments {
  deliveries: Counter;
  deliveryDuration: Histogram;
  handlersDuration: Histogram;
}

/** Create the instruments on a meter. */
export function createInstruments(meter: Meter): Instruments {
  const advice = { explicitBucketBoundaries: DURATION_BUCKETS_MS };
  return {
    deliveries: meter.createCounter(METRICS.deliveries, {
      description: 'Deliveries answered and inbox jobs run, by event and outcome',
      unit: '{delivery}',
    }),
    deliveryDuration: meter.createHistogram(METRICS.deliveryDuration, {
      description: 'Time from a delivery to its answer, or of an inbox job run',
      unit: 'ms',
      advice,
    }),
    handlersDuration: meter.createHistogram(METRICS.handlersDuration, {
      description: 'Time from the start of the handlers until they all settled',
      unit: 'ms',
      advice,
    }),
  };
}
