import { readFileSync } from 'node:fs';
import {
  context,
  metrics,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
} from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  memoryInbox,
  memoryStore,
  OUTCOME_STATUS,
  type Inbox,
  type Outcome,
  type WebhookResult,
} from '../../src/index.js';
import { openTelemetry } from '../../src/telemetry/otel/index.js';
import { OUTCOMES } from '../../src/receiving/outcome.js';
import { VERSION } from '../../src/version.js';
import { OUTCOME_SCENARIOS } from '../helpers/outcome-scenarios.js';
import { deferred, SECRET, signedRequest } from '../helpers/signed.js';
import {
  telemetryHarness,
  useAsyncContext,
  type SpanRecord,
  type TelemetryHarness,
} from './harness.js';

let restoreContext: () => void;
beforeAll(() => {
  restoreContext = useAsyncContext();
});
afterAll(() => restoreContext());

/** Outcomes decided before the envelope is read: no event, no key. */
const BEFORE_PARSE: ReadonlySet<Outcome> = new Set([
  'method_not_allowed',
  'unsupported_media_type',
  'body_unavailable',
  'too_large',
  'unknown_tenant',
  'secret_unavailable',
  'invalid_signature',
  'malformed',
]);

/** The outcomes whose scenario names a tenant (test/helpers/outcome-scenarios.ts). */
const WITH_TENANT: ReadonlySet<Outcome> = new Set(['unknown_tenant', 'secret_unavailable']);

const deliverySpans = (spans: SpanRecord[]) =>
  spans.filter((span) => span.name === 'schoolhooks.delivery');

/** Each outcome's scenario, run on a receiver that reports to the harness's telemetry. */
const scenarios = Object.fromEntries(
  Object.entries(OUTCOME_SCENARIOS).map(([outcome, scenario]) => [
    outcome,
    (t: TelemetryHarness) => scenario((options) => t.receiver(options)),
  ]),
) as Record<Outcome, (t: TelemetryHarness) => Promise<WebhookResult[]>>;

describe('openTelemetry(): every outcome of the status table', () => {
  it('has a scenario for every outcome', () => {
    expect(Object.keys(scenarios).sort()).toEqual(Object.keys(OUTCOME_STATUS).sort());
  });

  it.each(Object.keys(scenarios) as Outcome[])(
    '%s: its span, its status and its counter point',
    async (outcome) => {
      const t = telemetryHarness();
      const results = await scenarios[outcome](t);
      const last = results.at(-1)!;
      expect(last.outcome).toBe(outcome);
      const status = OUTCOME_STATUS[outcome];

      // One delivery span per delivery; the one under test carries the outcome's attributes.
      const spans = deliverySpans(t.spans());
      expect(spans).toHaveLength(results.length);
      const span = spans.find((one) => one.attributes['schoolhooks.outcome'] === outcome)!;
      const known = BEFORE_PARSE.has(outcome)
        ? {}
        : {
            'schoolhooks.event': expect.any(String),
            'schoolhooks.idempotency_key': last.body.idempotencyKey,
          };
      const failed = OUTCOMES[outcome].spanError;
      expect(span).toMatchObject({
        kind: SpanKind.SERVER,
        parentSpanId: undefined,
        // 4xx is the sender's mistake: an HTTP server span is an error only on 5xx.
        status: failed ? SpanStatusCode.ERROR : SpanStatusCode.UNSET,
        events: [],
        links: [],
      });
      expect(span.attributes).toEqual({
        'schoolhooks.outcome': outcome,
        'http.response.status_code': status,
        ...known,
        ...(WITH_TENANT.has(outcome) && { 'schoolhooks.tenant': expect.any(String) }),
        ...(failed && { 'error.type': outcome }),
        ...(outcome === 'invalid_signature' && {
          'schoolhooks.signature.reason': expect.stringMatching(/^(missing|malformed|mismatch)$/),
        }),
      });

      // The counter counts every delivery by outcome, and the duration histogram each too.
      const tally = new Map<Outcome, number>();
      for (const result of results) tally.set(result.outcome, (tally.get(result.outcome) ?? 0) + 1);
      const points = await t.points();
      const counted = points.filter((point) => point.metric === 'schoolhooks.deliveries');
      expect(
        counted.map((point) => [point.attributes['schoolhooks.outcome'], point.value]).sort(),
      ).toEqual([...tally].sort());
      const point = counted.find((one) => one.attributes['schoolhooks.outcome'] === outcome)!;
      expect(point.attributes).toEqual({
        'schoolhooks.kind': 'delivery',
        'schoolhooks.outcome': outcome,
        ...(!BEFORE_PARSE.has(outcome) && { 'schoolhooks.event': expect.any(String) }),
      });
      const durations = points.filter((one) => one.metric === 'schoolhooks.delivery.duration');
      expect(durations.reduce((sum, one) => sum + one.value, 0)).toBe(results.length);
      expect(durations.every((one) => one.unit === 'ms')).toBe(true);
    },
  );

  it('names the event of a verified delivery, and nothing of one that did not verify', async () => {
    const t = telemetryHarness();
    const receiver = t.receiver().on('CourseCompleted', () => {});
    const request = signedRequest({ event: 'CourseCompleted', data: {} });
    await receiver.handle(request);
    await receiver.handle({
      ...request,
      headers: { ...request.headers, signature: 'f'.repeat(64) },
    });
    const [accepted, refused] = deliverySpans(t.spans());
    expect(accepted!.attributes).toMatchObject({
      'schoolhooks.outcome': 'invalid_payload',
      'schoolhooks.event': 'CourseCompleted',
      'schoolhooks.idempotency_key': request.idempotencyKey,
    });
    expect(refused!.attributes).toEqual({
      'schoolhooks.outcome': 'invalid_signature',
      'http.response.status_code': 401,
      'schoolhooks.signature.reason': 'mismatch',
    });
  });
});

describe('openTelemetry(): the handlers', () => {
  it('runs them inside schoolhooks.handlers, so the spans they make nest under it', async () => {
    const t = telemetryHarness();
    const tracer = t.tracerProvider.getTracer('my-app');
    const receiver = t.receiver().on('UserSignedIn', async () => {
      // After an await, as a real handler's database call would be.
      await new Promise((resolve) => setTimeout(resolve, 1));
      await tracer.startActiveSpan('db.insert', async (span) => {
        await Promise.resolve();
        span.end();
      });
    });
    expect((await receiver.handle(signedRequest())).outcome).toBe('processed');
    const spans = t.spans();
    const delivery = spans.find((span) => span.name === 'schoolhooks.delivery')!;
    const handlers = spans.find((span) => span.name === 'schoolhooks.handlers')!;
    const db = spans.find((span) => span.name === 'db.insert')!;
    expect(handlers).toMatchObject({
      kind: SpanKind.INTERNAL,
      traceId: delivery.traceId,
      parentSpanId: delivery.spanId,
      status: SpanStatusCode.UNSET,
      attributes: { 'schoolhooks.handlers.result': 'succeeded' },
    });
    expect(db).toMatchObject({ traceId: delivery.traceId, parentSpanId: handlers.spanId });
    expect(spans.map((span) => span.name)).toEqual([
      'db.insert',
      'schoolhooks.handlers',
      'schoolhooks.delivery',
    ]);
  });

  it('marks failed handlers, and records their duration by event and result', async () => {
    const t = telemetryHarness();
    const receiver = t.receiver().on('UserSignedIn', () => {
      throw new Error('database down');
    });
    receiver.on('CourseCompleted', () => {});
    await receiver.handle(signedRequest());
    await receiver.handle(signedRequest({ event: 'CourseCompleted', data: fixtureCourse() }));
    const handlers = t.spans().filter((span) => span.name === 'schoolhooks.handlers');
    expect(handlers.map((span) => [span.attributes, span.status])).toEqual([
      [{ 'schoolhooks.handlers.result': 'failed', 'error.type': 'failed' }, SpanStatusCode.ERROR],
      [{ 'schoolhooks.handlers.result': 'succeeded' }, SpanStatusCode.UNSET],
    ]);
    const durations = (await t.points()).filter(
      (point) => point.metric === 'schoolhooks.handlers.duration',
    );
    expect(durations.map((point) => [point.attributes, point.value, point.unit])).toEqual([
      [
        {
          'schoolhooks.kind': 'delivery',
          'schoolhooks.event': 'UserSignedIn',
          'schoolhooks.handlers.result': 'failed',
        },
        1,
        'ms',
      ],
      [
        {
          'schoolhooks.kind': 'delivery',
          'schoolhooks.event': 'CourseCompleted',
          'schoolhooks.handlers.result': 'succeeded',
        },
        1,
        'ms',
      ],
    ]);
  });

  it('ends schoolhooks.handlers only when handlers outliving a timeout settle', async () => {
    const t = telemetryHarness();
    const gate = deferred();
    const receiver = t.receiver({ handlerTimeoutMs: 20 }).on('UserSignedIn', () => gate.promise);
    expect((await receiver.handle(signedRequest())).outcome).toBe('timeout');
    // Answered: the delivery's span ended, the handlers' has not, nor their duration.
    expect(t.spans().map((span) => span.name)).toEqual(['schoolhooks.delivery']);
    const before = await t.points();
    expect(before.filter((point) => point.metric === 'schoolhooks.handlers.duration')).toEqual([]);

    gate.resolve();
    await vi.waitFor(() => expect(t.spans()).toHaveLength(2));
    const [delivery, handlers] = t.spans();
    expect(handlers).toMatchObject({
      name: 'schoolhooks.handlers',
      parentSpanId: delivery!.spanId,
      status: SpanStatusCode.ERROR,
      attributes: {
        'schoolhooks.handlers.result': 'timeout',
        'schoolhooks.handlers.late_result': 'succeeded',
        'error.type': 'timeout',
      },
    });
    const duration = (await t.points()).find(
      (point) => point.metric === 'schoolhooks.handlers.duration',
    )!;
    expect(duration.attributes).toEqual({
      'schoolhooks.kind': 'delivery',
      'schoolhooks.event': 'UserSignedIn',
      'schoolhooks.handlers.result': 'timeout',
    });
    // They ran past the 20 ms deadline until the gate opened.
    expect(duration.sum).toBeGreaterThanOrEqual(20);
  });
});

describe('openTelemetry(): where the delivery span sits', () => {
  it('nests under an HTTP instrumentation server span as INTERNAL', async () => {
    const t = telemetryHarness();
    const outer = t.tracerProvider.getTracer('http').startSpan('POST /webhooks', {
      kind: SpanKind.SERVER,
    });
    const receiver = t.receiver();
    await context.with(trace.setSpan(context.active(), outer), () =>
      receiver.handle(signedRequest()),
    );
    outer.end();
    const delivery = deliverySpans(t.spans())[0]!;
    expect(delivery).toMatchObject({
      kind: SpanKind.INTERNAL,
      traceId: outer.spanContext().traceId,
      parentSpanId: outer.spanContext().spanId,
    });
  });

  it('is the SERVER span under a remote parent extracted from the request', async () => {
    const t = telemetryHarness();
    const remote = {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    };
    const receiver = t.receiver();
    await context.with(trace.setSpanContext(ROOT_CONTEXT, remote), () =>
      receiver.handle(signedRequest()),
    );
    expect(deliverySpans(t.spans())[0]).toMatchObject({
      kind: SpanKind.SERVER,
      traceId: remote.traceId,
      parentSpanId: remote.spanId,
    });
  });
});

describe('openTelemetry(): the global providers', () => {
  it('reports to the providers registered after it was made, under the package version', async () => {
    const t = telemetryHarness();
    const telemetry = openTelemetry();
    const receiver = t.receiver({ telemetry }).on('UserSignedIn', () => {});
    // Before the SDK starts, nothing is recorded and nothing fails.
    expect((await receiver.handle(signedRequest())).outcome).toBe('processed');
    trace.setGlobalTracerProvider(t.tracerProvider);
    metrics.setGlobalMeterProvider(t.meterProvider);
    try {
      expect((await receiver.handle(signedRequest())).outcome).toBe('processed');
      const spans = t.spans();
      expect(spans.map((span) => span.name)).toEqual([
        'schoolhooks.handlers',
        'schoolhooks.delivery',
      ]);
      expect(spans[1]!.scope).toEqual({ name: 'schoolhooks', version: VERSION });
      const points = await t.points();
      expect(points.find((point) => point.metric === 'schoolhooks.deliveries')?.value).toBe(1);
    } finally {
      trace.disable();
      metrics.disable();
    }
  });

  it('names the package version package.json has', () => {
    const pkg = JSON.parse(
      readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    expect(VERSION).toBe(pkg.version);
  });
});

describe('openTelemetry() in inbox mode', () => {
  it('runs each job in a schoolhooks.job span linked to the delivery that stored it', async () => {
    const t = telemetryHarness();
    const inbox = memoryInbox({ backoffMs: 1 });
    const tracer = t.tracerProvider.getTracer('my-app');
    let calls = 0;
    const receiver = t.receiver({ inbox }).on('UserSignedIn', async () => {
      calls += 1;
      tracer.startSpan('db.insert').end();
      if (calls === 1) throw new Error('database down');
    });
    const request = signedRequest();
    expect((await receiver.handle(request)).outcome).toBe('queued');
    const worker = inbox.work(receiver);
    await inbox.idle();
    await worker.close();

    const spans = t.spans();
    const delivery = deliverySpans(spans)[0]!;
    const jobs = spans.filter((span) => span.name === 'schoolhooks.job');
    expect(jobs).toHaveLength(2);
    for (const [index, job] of jobs.entries()) {
      const attempt = index + 1;
      expect(job).toMatchObject({
        kind: SpanKind.CONSUMER,
        // A trace of its own (it may run hours later), linked to the delivery's span.
        parentSpanId: undefined,
        links: [{ traceId: delivery.traceId, spanId: delivery.spanId }],
        status: attempt === 1 ? SpanStatusCode.ERROR : SpanStatusCode.UNSET,
      });
      expect(job.traceId).not.toBe(delivery.traceId);
      expect(job.attributes).toEqual({
        'schoolhooks.attempt': attempt,
        'schoolhooks.event': 'UserSignedIn',
        'schoolhooks.idempotency_key': request.idempotencyKey,
        'schoolhooks.outcome': attempt === 1 ? 'handler_failed' : 'processed',
        ...(attempt === 1 && { 'error.type': 'handler_failed' }),
      });
      // Each run's handlers, and the spans they make, nest under the run.
      const handlers = spans.find(
        (span) => span.name === 'schoolhooks.handlers' && span.parentSpanId === job.spanId,
      )!;
      expect(handlers.traceId).toBe(job.traceId);
      expect(
        spans.filter((span) => span.name === 'db.insert' && span.parentSpanId === handlers.spanId),
      ).toHaveLength(1);
    }

    const counted = (await t.points())
      .filter((point) => point.metric === 'schoolhooks.deliveries')
      .map((point) => [
        point.attributes['schoolhooks.kind'],
        point.attributes['schoolhooks.outcome'],
        point.value,
      ]);
    expect(counted.sort()).toEqual([
      ['delivery', 'queued', 1],
      ['job', 'handler_failed', 1],
      ['job', 'processed', 1],
    ]);
  });

  it('stores the delivery span as a W3C traceparent with the job, and nothing else', async () => {
    const t = telemetryHarness();
    const stored: unknown[] = [];
    const inbox: Inbox = {
      enqueue: async (delivery) => {
        stored.push(delivery.trace);
      },
    };
    await t.receiver({ inbox }).handle(signedRequest());
    const delivery = deliverySpans(t.spans())[0]!;
    expect(stored).toEqual([{ traceparent: `00-${delivery.traceId}-${delivery.spanId}-01` }]);
  });

  it('marks a job whose payload is refused as an error, and runs a job stored without a trace', async () => {
    const t = telemetryHarness();
    const receiver = t.receiver({ store: memoryStore() });
    const request = signedRequest({ event: 'PaymentCompleted', data: { payment: { id: 'x' } } });
    const { event, idempotencyKey } = JSON.parse(request.body) as Record<string, string>;
    const result = await receiver.processStored(
      {
        body: request.body,
        signature: request.headers['signature']!,
        event: event!,
        idempotencyKey: idempotencyKey!,
        receivedAt: new Date().toISOString(),
        trace: { traceparent: 'not a traceparent' },
      },
      { attempt: 3 },
    );
    expect(result.outcome).toBe('invalid_payload');
    expect(t.spans()).toEqual([
      expect.objectContaining({
        name: 'schoolhooks.job',
        links: [],
        status: SpanStatusCode.ERROR,
        attributes: expect.objectContaining({
          'schoolhooks.attempt': 3,
          'schoolhooks.outcome': 'invalid_payload',
          'error.type': 'invalid_payload',
        }),
      }),
    ]);
  });
});

describe('openTelemetry(): secrets', () => {
  it('never exports the secret, a signature, a body, or what a failure said', async () => {
    const t = telemetryHarness();
    const secretData = { user: { id: 1, email: 'private-student@example.com' } };
    const signatures: string[] = [];
    const bodies: string[] = [];
    const record = (request: { body: string; headers: Record<string, string> }) => {
      bodies.push(request.body);
      signatures.push(request.headers['signature']!);
      return request;
    };
    for (const outcome of Object.keys(scenarios) as Outcome[]) await scenarios[outcome](t);
    const inbox = memoryInbox({ attempts: 1 });
    const receiver = t.receiver({ inbox }).on('UserSignedIn', () => {
      throw new Error('token sk_live_leaked');
    });
    await receiver.handle(record(signedRequest({ data: secretData })));
    const plain = t.receiver().on('UserSignedIn', () => {});
    await plain.handle(record(signedRequest({ data: secretData })));
    await plain.handle(
      record({ ...signedRequest({ data: secretData }), headers: { signature: 'a'.repeat(64) } }),
    );
    const worker = inbox.work(receiver);
    await inbox.idle();
    await worker.close();

    const exported = await t.serialised();
    // What is allowed is there: the search reads every attribute value.
    expect(exported).toContain(JSON.parse(bodies[0]!).idempotencyKey);
    expect(exported).toContain('schoolhooks.delivery');
    expect(exported).toContain('schoolhooks.job');
    for (const needle of [
      SECRET,
      ...signatures,
      'a'.repeat(64),
      ...bodies,
      'private-student@example.com',
      'hunter2',
      'sk_live_leaked',
      'database down',
    ]) {
      expect(exported).not.toContain(needle);
    }
  });
});

/** CourseCompleted data that passes its schema. */
function fixtureCourse(): Record<string, unknown> {
  const file = new URL('../../fixtures/CourseCompleted.json', import.meta.url);
  return (JSON.parse(readFileSync(file, 'utf8')) as { data: Record<string, unknown> }).data;
}
