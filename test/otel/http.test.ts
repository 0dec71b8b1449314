/**
 * schoolhooks/otel behind a real adapter: node:http on loopback, deliveries sent with fetch.
 */

import { createServer } from 'node:http';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { nodeListener } from '../../src/adapters/node.js';
import {
  memoryInbox,
  OUTCOME_STATUS,
  type Inbox,
  type Outcome,
  type Receiver,
} from '../../src/index.js';
import { createTestDelivery, deferred } from '../helpers/deliveries.js';
import { listen, post, type AdapterServer } from '../adapters/suite.js';
import { telemetryHarness, useAsyncContext, type TelemetryHarness } from './harness.js';

let restoreContext: () => void;
beforeAll(() => {
  restoreContext = useAsyncContext();
});
afterAll(() => restoreContext());

const servers: AdapterServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(receiver: Receiver): Promise<string> {
  const server = await listen(
    createServer(nodeListener(receiver, { path: '/webhooks' })).listen(0, '127.0.0.1'),
  );
  servers.push(server);
  return server.url;
}

const brokenInbox: Inbox = { enqueue: () => Promise.reject(new Error('READONLY')) };

/** How each outcome is provoked over HTTP: the receiver, and what is posted to it. */
const cases: [Outcome, (t: TelemetryHarness) => Receiver, () => Parameters<typeof post>[1]][] = [
  ['processed', (t) => t.receiver().on('UserSignedIn', () => {}), () => createTestDelivery()],
  [
    'invalid_signature',
    (t) => t.receiver(),
    () => createTestDelivery('UserSignedIn', {}, { secret: 'another secret' }),
  ],
  [
    'unsupported_media_type',
    (t) => t.receiver(),
    () => {
      const delivery = createTestDelivery();
      return { ...delivery, headers: { ...delivery.headers, 'content-type': 'text/plain' } };
    },
  ],
  [
    'handler_failed',
    (t) =>
      t.receiver().on('UserSignedIn', () => {
        throw new Error('database down');
      }),
    () => createTestDelivery(),
  ],
  ['queued', (t) => t.receiver({ inbox: memoryInbox() }), () => createTestDelivery()],
  ['inbox_unavailable', (t) => t.receiver({ inbox: brokenInbox }), () => createTestDelivery()],
];

describe('openTelemetry() behind the node:http adapter', () => {
  it.each(cases)('%s: the answer, its span and its counter point', async (outcome, make, send) => {
    const t = telemetryHarness();
    const url = await serve(make(t));
    const answer = await post(url, send());
    const status = OUTCOME_STATUS[outcome];
    expect(answer).toMatchObject({ status, body: { outcome } });
    const [span] = t.spans().filter((one) => one.name === 'schoolhooks.delivery');
    expect(span).toMatchObject({
      kind: SpanKind.SERVER,
      status: status >= 500 ? SpanStatusCode.ERROR : SpanStatusCode.UNSET,
      attributes: { 'schoolhooks.outcome': outcome, 'http.response.status_code': status },
    });
    const counted = (await t.points()).filter((point) => point.metric === 'schoolhooks.deliveries');
    expect(counted).toMatchObject([
      { value: 1, attributes: { 'schoolhooks.kind': 'delivery', 'schoolhooks.outcome': outcome } },
    ]);
  });

  it("nests a handler's own spans under schoolhooks.handlers, in the delivery's trace", async () => {
    const t = telemetryHarness();
    const tracer = t.tracerProvider.getTracer('my-app');
    const receiver = t.receiver().on('UserSignedIn', async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      tracer.startSpan('db.insert').end();
    });
    const delivery = createTestDelivery();
    expect((await post(await serve(receiver), delivery)).status).toBe(200);
    const spans = t.spans();
    const byName = new Map(spans.map((span) => [span.name, span]));
    const root = byName.get('schoolhooks.delivery')!;
    expect(root.attributes['schoolhooks.idempotency_key']).toBe(delivery.idempotencyKey);
    expect(byName.get('schoolhooks.handlers')).toMatchObject({
      traceId: root.traceId,
      parentSpanId: root.spanId,
    });
    expect(byName.get('db.insert')).toMatchObject({
      traceId: root.traceId,
      parentSpanId: byName.get('schoolhooks.handlers')!.spanId,
    });
  });

  it('links the worker run of a queued delivery to the span of its HTTP delivery', async () => {
    const t = telemetryHarness();
    const inbox = memoryInbox();
    const ran = deferred();
    const receiver = t.receiver({ inbox }).on('UserSignedIn', () => ran.resolve());
    expect((await post(await serve(receiver), createTestDelivery())).status).toBe(202);
    const worker = inbox.work(receiver);
    await ran.promise;
    await inbox.idle();
    await worker.close();
    const delivery = t.spans().find((span) => span.name === 'schoolhooks.delivery')!;
    const job = t.spans().find((span) => span.name === 'schoolhooks.job')!;
    expect(job).toMatchObject({
      kind: SpanKind.CONSUMER,
      links: [{ traceId: delivery.traceId, spanId: delivery.spanId }],
      attributes: { 'schoolhooks.outcome': 'processed', 'schoolhooks.attempt': 1 },
    });
  });
});
