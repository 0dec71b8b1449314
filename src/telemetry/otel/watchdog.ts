/**
 * The watchdog's OpenTelemetry gauges: observable gauges fed by the latest health a watchdog's
 * `check()` gave in this process (docs/watchdog.md), read at each collection.
 * @module
 */

import {
  metrics,
  type Attributes,
  type BatchObservableResult,
  type Meter,
  type MeterProvider,
  type ObservableGauge,
} from '@opentelemetry/api';
import { ConfigError } from '../../errors.js';
import { VERSION } from '../../version.js';
import type { Watchdog } from '../../watchdog/create-watchdog.js';
import type { Health, HealthStatus } from '../../watchdog/health.js';
import { ATTRIBUTES, METRICS, SCOPE } from './names.js';

/** Options of {@link otelWatchdog}. */
export interface OtelWatchdogOptions {
  /**
   * Where the gauges go. Default: the global meter provider (`metrics.getMeterProvider()`),
   * looked up at each check, so the SDK may be started after this call.
   */
  meterProvider?: MeterProvider;
  /** The school the watchdog watches (its `tenant`): the gauges' `schoolhooks.tenant`. */
  tenant?: string;
  /**
   * A collection that finds this process's latest health older than this checks again first:
   * `inbox.watch` runs each tick's check in one process only, and the gauges of the others must
   * not go stale. Default 15 min; make it two or three times `inbox.watch`'s `every`.
   */
  refreshAfterMs?: number;
  /** The clock, in ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** Every status, once (a status added to `HealthStatus` and not here fails to compile). */
const STATUSES = Object.keys({
  ok: true,
  at_risk: true,
  failing: true,
  silent: true,
} satisfies Record<HealthStatus, true>) as HealthStatus[];

/** One watchdog's series: its attributes, its clock, and the latest health it gave, with when. */
interface Watched {
  readonly attributes: Attributes;
  readonly refreshAfterMs: number;
  readonly now: () => number;
  /** A check of its own, made when a collection finds the latest health stale. */
  readonly refresh: () => Promise<unknown>;
  latest?: { readonly health: Health; readonly at: number };
}

/** The gauges of one meter provider and the watchdogs they report. */
interface Gauges {
  readonly watched: Set<Watched>;
}

const GAUGES = new WeakMap<MeterProvider, Gauges>();

/**
 * A watchdog whose every `check()` also feeds OpenTelemetry gauges: `schoolhooks.watchdog.last_success_age`
 * (s since the last 2xx answer), `schoolhooks.watchdog.at_risk` (deliveries),
 * `schoolhooks.watchdog.disables_in` (s until the platform disables the endpoint, below 0 once
 * past) and `schoolhooks.watchdog.status` (1 for the current status, 0 for the others, by
 * `schoolhooks.health.status`). Ages are counted at each collection; a collection that finds the
 * latest health older than `refreshAfterMs` checks first. Give it to `inbox.watch` so it is
 * checked on a schedule.
 *
 * @example
 * ```ts
 * import { createWatchdog } from 'schoolhooks/watchdog';
 * import { otelWatchdog } from 'schoolhooks/otel';
 *
 * inbox.watch(otelWatchdog(createWatchdog({ receiver })), { every: '5m', onAlert: page });
 * ```
 */
export function otelWatchdog(
  watchdog: Pick<Watchdog, 'check'>,
  { meterProvider, tenant, refreshAfterMs = 15 * 60_000, now = Date.now }: OtelWatchdogOptions = {},
): Watchdog {
  if (typeof (watchdog as Partial<Watchdog> | null)?.check !== 'function') {
    throw new ConfigError('otelWatchdog needs a watchdog (createWatchdog of schoolhooks/watchdog)');
  }
  if (!(refreshAfterMs > 0) || !Number.isFinite(refreshAfterMs)) {
    throw new ConfigError('otelWatchdog: refreshAfterMs must be a positive number of ms');
  }
  const watched: Watched = {
    attributes: tenant === undefined ? {} : { [ATTRIBUTES.tenant]: tenant },
    refreshAfterMs,
    now,
    refresh: () => (refreshing ??= checkObserved().finally(() => (refreshing = undefined))),
  };
  let registered: MeterProvider | undefined;
  let refreshing: Promise<Health> | undefined;
  async function checkObserved(): Promise<Health> {
    const health = await watchdog.check();
    watched.latest = { health, at: now() };
    const provider = meterProvider ?? metrics.getMeterProvider();
    if (registered !== provider) {
      if (registered !== undefined) GAUGES.get(registered)?.watched.delete(watched);
      gaugesOf(provider).watched.add(watched);
      registered = provider;
    }
    return health;
  }
  return { check: checkObserved };
}

/** The gauges on a provider, made with its batch callback the first time. */
function gaugesOf(provider: MeterProvider): Gauges {
  const known = GAUGES.get(provider);
  if (known !== undefined) return known;
  const gauges: Gauges = { watched: new Set() };
  const meter = provider.getMeter(SCOPE, VERSION);
  const instruments = createGauges(meter);
  meter.addBatchObservableCallback(async (result) => {
    await Promise.all(
      [...gauges.watched].map(async (one) => {
        const { latest, now, refreshAfterMs } = one;
        // A check that fails (the store down) leaves the last health, whose ages still grow.
        if (latest !== undefined && now() - latest.at > refreshAfterMs) {
          await one.refresh().catch(() => {});
        }
        observe(result, instruments, one);
      }),
    );
  }, Object.values(instruments));
  GAUGES.set(provider, gauges);
  return gauges;
}

/** The four gauges of the watchdog. */
interface WatchdogGauges {
  readonly lastSuccessAge: ObservableGauge;
  readonly atRisk: ObservableGauge;
  readonly disablesIn: ObservableGauge;
  readonly status: ObservableGauge;
}

function createGauges(meter: Meter): WatchdogGauges {
  return {
    lastSuccessAge: meter.createObservableGauge(METRICS.watchdogLastSuccessAge, {
      description: 'Seconds since the receiver last answered the platform 2xx',
      unit: 's',
    }),
    atRisk: meter.createObservableGauge(METRICS.watchdogAtRisk, {
      description:
        'Deliveries answered non-2xx whose retries are not over: lost unless one succeeds',
      unit: '{delivery}',
    }),
    disablesIn: meter.createObservableGauge(METRICS.watchdogDisablesIn, {
      description: 'Seconds until the platform disables the endpoint (14 days after the last 2xx)',
      unit: 's',
    }),
    status: meter.createObservableGauge(METRICS.watchdogStatus, {
      description: "The watchdog's status: 1 for the current one, 0 for the others",
    }),
  };
}

/** One watchdog's points now, from its latest health (none before its first check). */
function observe(
  result: BatchObservableResult,
  gauges: WatchdogGauges,
  { attributes, latest, now }: Watched,
): void {
  const at = now();
  if (latest === undefined) return;
  const { health } = latest;
  result.observe(gauges.atRisk, health.atRisk.length, attributes);
  if (health.lastSuccessAt !== undefined) {
    const age = (at - Date.parse(health.lastSuccessAt)) / 1000;
    result.observe(gauges.lastSuccessAge, age, attributes);
  }
  if (health.disablesAt !== undefined) {
    result.observe(gauges.disablesIn, (Date.parse(health.disablesAt) - at) / 1000, attributes);
  }
  for (const status of STATUSES) {
    const value = status === health.status ? 1 : 0;
    result.observe(gauges.status, value, { ...attributes, [ATTRIBUTES.healthStatus]: status });
  }
}
