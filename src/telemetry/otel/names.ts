/**
 * The names `schoolhooks/otel` reports under: spans, metrics and attributes (docs/telemetry.md).
 * They are the contract dashboards and alerts are written against.
 * @module
 */

/** The instrumentation scope: the tracer's and the meter's name. */
export const SCOPE = 'schoolhooks';

/**
 * The span names.
 *
 * @example
 * ```ts
 * import { SPANS } from 'schoolhooks/otel';
 *
 * const deliveries = exporter.getFinishedSpans().filter((span) => span.name === SPANS.delivery);
 * ```
 */
export const SPANS = Object.freeze({
  /** One HTTP delivery, from the request to the answer. */
  delivery: 'schoolhooks.delivery',
  /** The handlers of one delivery or job, until they settle (even after a timeout answered). */
  handlers: 'schoolhooks.handlers',
  /** A worker's run of an inbox job, linked to the delivery that stored it. */
  job: 'schoolhooks.job',
});

/**
 * The metric names: a counter and two histograms in ms for deliveries, and the watchdog's
 * gauges (`otelWatchdog`): seconds since the last 2xx answer, deliveries at risk, seconds until
 * the platform disables the endpoint, and its status (1 for the current one, 0 for the others).
 *
 * @example
 * ```ts
 * import { METRICS } from 'schoolhooks/otel';
 *
 * const view = { instrumentName: METRICS.handlersDuration, aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM } };
 * ```
 */
export const METRICS = Object.freeze({
  deliveries: 'schoolhooks.deliveries',
  deliveryDuration: 'schoolhooks.delivery.duration',
  handlersDuration: 'schoolhooks.handlers.duration',
  watchdogLastSuccessAge: 'schoolhooks.watchdog.last_success_age',
  watchdogAtRisk: 'schoolhooks.watchdog.at_risk',
  watchdogDisablesIn: 'schoolhooks.watchdog.disables_in',
  watchdogStatus: 'schoolhooks.watchdog.status',
});

/**
 * The attribute names. None of them ever holds a secret, a signature, a body or a token.
 *
 * @example
 * ```ts
 * import { ATTRIBUTES } from 'schoolhooks/otel';
 *
 * const failed = spans.filter((span) => span.attributes[ATTRIBUTES.outcome] === 'handler_failed');
 * ```
 */
export const ATTRIBUTES = Object.freeze({
  event: 'schoolhooks.event',
  outcome: 'schoolhooks.outcome',
  idempotencyKey: 'schoolhooks.idempotency_key',
  /** The tenant the route named (many schools on one endpoint), or a watchdog's tenant. */
  tenant: 'schoolhooks.tenant',
  /** On `schoolhooks.watchdog.status`: `ok`, `at_risk`, `failing` or `silent`. */
  healthStatus: 'schoolhooks.health.status',
  /** `delivery` or `job`, on metrics, to tell HTTP answers from inbox runs. */
  kind: 'schoolhooks.kind',
  attempt: 'schoolhooks.attempt',
  handlersResult: 'schoolhooks.handlers.result',
  /** After a timeout: how the handlers ended at last, `succeeded` or `failed`. */
  handlersLateResult: 'schoolhooks.handlers.late_result',
  /** On an `invalid_signature` span: `missing`, `malformed` or `mismatch` (`SignatureError.reason`). */
  signatureReason: 'schoolhooks.signature.reason',
  statusCode: 'http.response.status_code',
  errorType: 'error.type',
});
