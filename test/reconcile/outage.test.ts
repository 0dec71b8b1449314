/**
 * A long outage, offline and over real HTTP: the platform simulator sends 500
 * PaymentCompleted and 200 enrollments while the seller's server (a receiver behind the node
 * adapter on a loopback port) is down longer than the platform's retry span, so it gives every one
 * of them up. When the server is back, reconcile runs against the mock API's lists recover every
 * missed invoice and access exactly once (two runs at once on one Redis and on one Postgres, as
 * two processes would), none the webhooks delivered and no unpaid invoice; a second run recovers
 * nothing; a late PaymentCompleted for a recovered invoice runs nothing.
 */

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { nodeListener } from '../../src/adapters/node.js';
import { createSchoolApi } from '../../src/api/index.js';
import { PLATFORM_LIMITS } from '../../src/platform/platform-contract.js';
import { createReceiver } from '../../src/receiving/receiver.js';
import { createReconciler, type ReconcileReport } from '../../src/reconcile/index.js';
import { memoryStore } from '../../src/stores/memory.js';
import { postgresStore } from '../../src/stores/postgres.js';
import { redisStore } from '../../src/stores/redis.js';
import type { IdempotencyStore } from '../../src/stores/types.js';
import { fixtures } from '../../src/testing/fixtures.js';
import type { MockInvoice } from '../../src/testing/mock-lists.js';
import { createMockSchoolApi } from '../../src/testing/mock-school-api.js';
import { createPlatformSimulator } from '../../src/testing/platform-simulator.js';
import { createVirtualClock } from '../../src/testing/virtual-clock.js';
import { listen } from '../adapters/suite.js';
import { usePostgresPool } from '../helpers/postgres.js';
import { keysMatching, useTestRedis, type TestRedis } from '../helpers/redis.js';

const SECRET = 'outage-endpoint-secret-2f6c9a41d7e3b805';
const HOUR = 3_600_000;
const START = '2026-03-06T16:00:00.000Z';
const postgres = usePostgresPool('sh_outage', 30);
let redis: TestRedis;
let clients: Redis[] = [];
const run = randomUUID();
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  redis = await useTestRedis();
  clients = [new Redis(redis.url), new Redis(redis.url), new Redis(redis.url)];
}, 60_000);

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

afterAll(async () => {
  const [first] = clients;
  const keys = first ? await keysMatching(first, `outage-${run}*`) : [];
  if (keys.length > 0) await first!.del(...keys);
  for (const client of clients) client.disconnect();
  await redis?.close();
});

/**
 * The receiver's store and the two reconcilers' (one backend, a client each: three processes).
 * memoryStore lives in one process, so its two reconcilers share the receiver's store.
 */
type Stores = () => [IdempotencyStore, IdempotencyStore, IdempotencyStore];

const backends: [string, Stores][] = [
  [
    'memoryStore',
    () => {
      const store = memoryStore();
      return [store, store, store];
    },
  ],
  [
    'redisStore',
    () => {
      const prefix = `outage-${run}:${randomUUID()}:`;
      const [a, b, c] = clients.map((client) => redisStore({ client, prefix }));
      return [a!, b!, c!];
    },
  ],
  [
    'postgresStore',
    () => {
      const table = postgres.table();
      const make = () => postgresStore({ pool: postgres.pool, table });
      return [make(), make(), make()];
    },
  ],
];

/** Ids `from`, `from + 1`, … `count` of them. */
function ids(from: number, count: number): number[] {
  return Array.from({ length: count }, (_, n) => from + n);
}

/** A paid (or unpaid) invoice as the platform lists it, issued at `createdAt`. */
function listed(invoiceId: number, createdAt: string, paid = true): MockInvoice {
  return {
    invoiceId,
    status: 'Active',
    totalAmount: 4900,
    currency: 'Rub',
    createdAt,
    user: { id: 900_000 + invoiceId },
    products: [{ productId: 31, totalPrice: 4900, discountAmount: 0 }],
    ...(paid ? { paymentStatus: 'Completed' } : {}),
  };
}

describe.each(backends)(
  'an outage past the retries, then reconciliation, on %s',
  (_name, makeStores) => {
    it('recovers every missed invoice and access exactly once, and nothing else', async () => {
      const clock = createVirtualClock({ start: START });
      const [receiverStore, storeA, storeB] = makeStores();

      // The seller's server: grants by webhook, counted per entity.
      const byWebhook = new Map<string, number>();
      const count = (map: Map<string, number>, key: string) =>
        map.set(key, (map.get(key) ?? 0) + 1);
      const receiver = createReceiver({
        secret: SECRET,
        store: receiverStore,
        now: clock.now,
        logger: false,
      });
      receiver.on('PaymentCompleted', (event) => {
        count(byWebhook, `invoice:${event.data.payment.invoice.id}`);
      });
      receiver.on('ProductEnrolledToFree', (event) => {
        count(byWebhook, `access:${event.data.access?.id}`);
      });
      const server = await listen(createServer(nodeListener(receiver)).listen(0, '127.0.0.1'), '');
      cleanups.push(() => server.close());
      const platform = createPlatformSimulator({
        clock,
        endpoints: [
          {
            id: 'shop',
            url: server.url,
            secret: SECRET,
            events: ['PaymentCompleted', 'ProductEnrolledToFree'],
          },
        ],
      });
      const sendPayment = (id: number) =>
        platform.send(
          'PaymentCompleted',
          fixtures.PaymentCompleted({ payment: { invoice: { id } } }),
        );
      const sendEnrollment = (id: number) =>
        platform.send('ProductEnrolledToFree', fixtures.ProductEnrolledToFree({ access: { id } }));

      // Before the outage: 50 payments and 20 enrollments delivered.
      const delivered = { invoices: ids(1, 50), accesses: ids(1, 20) };
      delivered.invoices.forEach(sendPayment);
      delivered.accesses.forEach(sendEnrollment);
      await platform.run();
      expect(platform.deliveries.every((delivery) => delivery.state === 'delivered')).toBe(true);

      // The outage: 6 h down, past the platform's retry span; 500 payments and 200 enrollments.
      expect(6 * HOUR).toBeGreaterThan(PLATFORM_LIMITS.retrySpanMs);
      const outageStart = clock.now();
      platform.takeDown('shop', { forMs: 6 * HOUR });
      const missed = { invoices: ids(1001, 500), accesses: ids(2001, 200) };
      missed.invoices.forEach(sendPayment);
      missed.accesses.forEach(sendEnrollment);
      await platform.run();
      const lost = platform.deliveries.filter((delivery) => delivery.state === 'failed');
      expect(lost).toHaveLength(700);
      expect(lost.every((delivery) => delivery.attempts === 5)).toBe(true);

      // The server is back; the platform's lists hold every invoice (and 30 unpaid ones) and access.
      await clock.advance(outageStart + 6 * HOUR + 60_000 - clock.now());
      const issued = new Date(outageStart - HOUR).toISOString();
      const created = new Date(outageStart).toISOString();
      const unpaid = ids(3001, 30);
      const mock = await createMockSchoolApi({
        apiKey: 'sk_test_outage',
        lists: {
          invoices: [
            ...[...delivered.invoices, ...missed.invoices].map((id) => listed(id, issued)),
            ...unpaid.map((id) => listed(id, issued, false)),
          ],
          productAccesses: [...delivered.accesses, ...missed.accesses].map((accessId) => ({
            accessId,
            productId: 31,
            active: true,
            createdAt: created,
            user: { id: 800_000 + accessId },
          })),
        },
      });
      cleanups.push(() => mock.close());
      const api = createSchoolApi({
        baseUrl: mock.url,
        apiKey: 'sk_test_outage',
        sellerId: 1,
        schoolId: 1,
      });

      // Two reconcilers at once, each on its own client of the store (two processes).
      const byRun = new Map<string, number>();
      const reconcilerOn = (store: IdempotencyStore) =>
        createReconciler({ api, store, now: clock.now })
          .on('invoice', (invoice) => void count(byRun, `invoice:${invoice.invoiceId}`))
          .on('access', (access) => void count(byRun, `access:${access.accessId}`));
      const reconcilers = [reconcilerOn(storeA), reconcilerOn(storeB)];
      const reports = await Promise.all(reconcilers.map((r) => r.run({ since: '24h' })));

      const expected = [
        ...missed.invoices.map((id) => `invoice:${id}`),
        ...missed.accesses.map((id) => `access:${id}`),
      ].sort();
      expect([...byRun.keys()].sort()).toEqual(expected);
      expect([...byRun.values()].every((times) => times === 1)).toBe(true);
      const sum = (pick: (report: ReconcileReport) => number) =>
        reports.reduce((total, report) => total + pick(report), 0);
      expect(sum((report) => report.recovered)).toBe(700);
      for (const report of reports) {
        // Each listed the 550 paid invoices (not the unpaid ones) and the 220 accesses.
        expect(report.checked).toMatchObject({ invoice: 550, access: 220 });
        expect(report.recovered + report.handled).toBe(770);
        expect(report.failed).toEqual([]);
      }

      // A second run recovers nothing.
      const again = await reconcilers[0]!.run({ since: '24h' });
      expect([again.recovered, again.handled, again.failed.length]).toEqual([0, 770, 0]);

      // A late PaymentCompleted for a recovered invoice runs nothing: 200 duplicate.
      const late = sendPayment(1001);
      await platform.run();
      const answer = platform.log.find((entry) => entry.idempotencyKey === late.idempotencyKey);
      expect([answer?.status, answer?.outcome]).toEqual([200, 'duplicate']);
      expect(byWebhook.get('invoice:1001')).toBeUndefined();
      expect(byRun.get('invoice:1001')).toBe(1);
      // The webhooks ran each delivered entity once, and none of the missed ones.
      expect(byWebhook.size).toBe(70);
    }, 120_000);
  },
);
