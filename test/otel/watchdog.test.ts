/**
 * otelWatchdog: the watchdog's gauges read back with the OpenTelemetry SDK's own in-memory metric
 * exporter, over a real receiver on a memoryStore and a clock of the test's: the seconds since
 * the last 2xx answer, the deliveries at risk, the seconds left of the platform's 14 days before
 * it disables the endpoint, and the status; nothing before a check, a check of its own when a
 * collection finds the last one stale, a series per tenant, and never a delivery's key.
 */

import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import type { Attributes } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { ConfigError, createReceiver, memoryStore } from '../../src/index.js';
import { otelWatchdog } from '../../src/telemetry/otel/index.js';
import { createWatchdog, type Watchdog } from '../../src/watchdog/index.js';
import { createTestDelivery, SECRET } from '../helpers/deliveries.js';

const START = Date.parse('2026-11-20T09:00:00.000Z');
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** A meter provider whose points are read when asked, never on a timer. */
function metricsHarness() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    meterProvider,
    /** Every point of the watchdog's gauges now, as `metric{attributes} value`. */
    async points(): Promise<
      { metric: string; unit: string; attributes: Attributes; value: number }[]
    > {
      exporter.reset();
      await reader.forceFlush();
      const exported = exporter.getMetrics().at(-1);
      return (exported?.scopeMetrics ?? []).flatMap(({ metrics }) =>
        metrics
          .filter((metric) => metric.descriptor.name.startsWith('schoolhooks.watchdog.'))
          .flatMap((metric) =>
            metric.dataPoints.map((point) => ({
              metric: metric.descriptor.name,
              unit: metric.descriptor.unit,
              attributes: point.attributes,
              value: point.value as number,
            })),
          ),
      );
    },
    async serialised(): Promise<string> {
      exporter.reset();
      await reader.forceFlush();
      return JSON.stringify(exporter.getMetrics());
    },
  };
}

/** A receiver on the test's clock whose handler fails while `failing`, and its watchdog. */
function watched() {
  const clock = { now: START };
  const state = { failing: false };
  const receiver = createReceiver({
    secret: SECRET,
    store: memoryStore(),
    logger: false,
    now: () => clock.now,
  });
  receiver.on('UserSignedIn', () => {
    if (state.failing) throw new Error('crm down');
  });
  receiver.onError(() => {});
  const watchdog: Watchdog = createWatchdog({ receiver, now: () => clock.now });
  return {
    clock,
    state,
    watchdog,
    async deliver() {
      const delivery = createTestDelivery(
        'UserSignedIn',
        { user: { id: 1 } },
        {
          timestamp: new Date(clock.now).toISOString(),
        },
      );
      const answer = await receiver.handle({ method: 'POST', ...delivery });
      return { status: answer.status, idempotencyKey: delivery.idempotencyKey };
    },
  };
}

describe('otelWatchdog', () => {
  it('reports the last success age, the deliveries at risk, the time left before disabling, and the status', async () => {
    const metrics = metricsHarness();
    const { clock, state, watchdog, deliver } = watched();
    const observed = otelWatchdog(watchdog, {
      meterProvider: metrics.meterProvider,
      now: () => clock.now,
    });
    expect((await deliver()).status).toBe(200);
    clock.now = START + 10 * MINUTE;
    state.failing = true;
    expect((await deliver()).status).toBe(500);
    // Nothing until a check.
    expect(await metrics.points()).toEqual([]);
    expect((await observed.check()).status).toBe('at_risk');
    // Collected 10 minutes after the check: the ages count at the collection.
    clock.now = START + 20 * MINUTE;
    const points = await metrics.points();
    const value = (metric: string, attributes: Attributes = {}) =>
      points.find(
        (p) => p.metric === metric && JSON.stringify(p.attributes) === JSON.stringify(attributes),
      )?.value;
    expect(value('schoolhooks.watchdog.last_success_age')).toBe(20 * 60);
    expect(value('schoolhooks.watchdog.at_risk')).toBe(1);
    // The platform disables an endpoint 14 days after its last success.
    expect(value('schoolhooks.watchdog.disables_in')).toBe((14 * DAY - 20 * MINUTE) / 1000);
    const statuses = Object.fromEntries(
      points
        .filter((p) => p.metric === 'schoolhooks.watchdog.status')
        .map((p) => [p.attributes['schoolhooks.health.status'], p.value]),
    );
    expect(statuses).toEqual({ ok: 0, at_risk: 1, failing: 0, silent: 0 });
    expect(Object.fromEntries(points.map((p) => [p.metric, p.unit]))).toEqual({
      'schoolhooks.watchdog.last_success_age': 's',
      'schoolhooks.watchdog.at_risk': '{delivery}',
      'schoolhooks.watchdog.disables_in': 's',
      'schoolhooks.watchdog.status': '',
    });
  });

  it('checks again at a collection that finds its last check older than refreshAfterMs', async () => {
    const metrics = metricsHarness();
    const { clock, state, watchdog, deliver } = watched();
    let checks = 0;
    const counted = { check: () => (checks++, watchdog.check()) };
    const observed = otelWatchdog(counted, {
      meterProvider: metrics.meterProvider,
      now: () => clock.now,
      refreshAfterMs: 5 * MINUTE,
    });
    await deliver();
    await observed.check();
    const status = async () =>
      (await metrics.points())
        .filter((p) => p.metric === 'schoolhooks.watchdog.status' && p.value === 1)
        .map((p) => p.attributes['schoolhooks.health.status']);
    // Another process runs the ticks now; this one's delivery fails meanwhile.
    clock.now = START + MINUTE;
    state.failing = true;
    await deliver();
    clock.now = START + 5 * MINUTE;
    expect(await status()).toEqual(['ok']);
    expect(checks).toBe(1);
    clock.now = START + 5 * MINUTE + 1;
    expect(await status()).toEqual(['at_risk']);
    expect(checks).toBe(2);
  });

  it('keeps a series per tenant on one meter provider, and never exports a delivery key', async () => {
    const metrics = metricsHarness();
    const a = watched();
    const b = watched();
    const options = { meterProvider: metrics.meterProvider, now: () => a.clock.now };
    const schoolA = otelWatchdog(a.watchdog, { ...options, tenant: 'school-a' });
    const schoolB = otelWatchdog(b.watchdog, { ...options, tenant: 'school-b' });
    b.state.failing = true;
    await a.deliver();
    const { idempotencyKey } = await b.deliver();
    await schoolA.check();
    await schoolB.check();
    const atRisk = (await metrics.points()).filter(
      (p) => p.metric === 'schoolhooks.watchdog.at_risk',
    );
    expect(atRisk).toEqual([
      expect.objectContaining({ attributes: { 'schoolhooks.tenant': 'school-a' }, value: 0 }),
      expect.objectContaining({ attributes: { 'schoolhooks.tenant': 'school-b' }, value: 1 }),
    ]);
    expect(await metrics.serialised()).not.toContain(idempotencyKey);
  });

  it('refuses what is not a watchdog, and a staleAfterMs it cannot keep', () => {
    expect(() => otelWatchdog({} as Watchdog)).toThrow(ConfigError);
    const { watchdog } = watched();
    for (const refreshAfterMs of [0, -1, Number.NaN, Infinity]) {
      expect(() => otelWatchdog(watchdog, { refreshAfterMs })).toThrow(ConfigError);
    }
  });
});
