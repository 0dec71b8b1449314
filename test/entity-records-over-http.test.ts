/**
 * Reconciliation's records, written by the receiver over real HTTP (the node adapter on a loopback
 * port, signed deliveries) on memoryStore, redisStore and postgresStore (docs/reconcile.md):
 * a processed or queued delivery about a listed entity (an invoice, an access) leaves its entity
 * recorded, so a reconcile run's claim of it finds it done; a failed one leaves it free for a run;
 * a delivery for an entity a run recovered runs nothing (200 duplicate), one while a run holds it
 * waits (409 in_flight); two events about one access both run (webhooks stay deduplicated by
 * their idempotencyKey alone).
 */

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { nodeListener } from '../src/adapters/node.js';
import { RECORDED_BY_WEBHOOK, recordKeyOf, RECOVERED_BY_RUN } from '../src/keys/delivery-key.js';
import { memoryInbox } from '../src/inbox/memory.js';
import { createReceiver, type ReceiverOptions } from '../src/receiving/receiver.js';
import { memoryStore } from '../src/stores/memory.js';
import { postgresStore } from '../src/stores/postgres.js';
import { redisStore } from '../src/stores/redis.js';
import type { Claim, IdempotencyStore } from '../src/stores/types.js';
import { heldOf, requestFor } from './stores/contract.js';
import { listen, post, type Answer } from './adapters/suite.js';
import { deferred, fixtureDelivery, SECRET, type Delivery } from './helpers/deliveries.js';
import { usePostgresPool } from './helpers/postgres.js';
import { keysMatching, useTestRedis, type TestRedis } from './helpers/redis.js';

const postgres = usePostgresPool('sh_records');
let redis: TestRedis;
let client: Redis;
const run = randomUUID();
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  redis = await useTestRedis();
  client = new Redis(redis.url);
}, 60_000);

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

afterAll(async () => {
  const keys = await keysMatching(client, `records-http-${run}*`);
  if (keys.length > 0) await client.del(...keys);
  client.disconnect();
  await redis?.close();
});

const stores: [string, () => IdempotencyStore][] = [
  ['memoryStore', () => memoryStore()],
  ['redisStore', () => redisStore({ client, prefix: `records-http-${run}:${randomUUID()}:` })],
  ['postgresStore', () => postgresStore({ pool: postgres.pool, table: postgres.table() })],
];

/** A PaymentCompleted of invoice `invoiceId`, as the platform sends it. */
function payment(invoiceId: number, idempotencyKey = randomUUID()): Delivery {
  return fixtureDelivery(
    'PaymentCompleted',
    (data) => {
      const { invoice } = data['payment'] as { invoice: Record<string, unknown> };
      invoice['id'] = invoiceId;
    },
    { idempotencyKey },
  );
}

/** An enrollment event of access `accessId`. */
function enrollment(event: string, accessId: number): Delivery {
  return fixtureDelivery(event, (data) => {
    (data['access'] as Record<string, unknown>)['id'] = accessId;
  });
}

/** A receiver behind the node adapter, whose handlers count their runs per event and key. */
async function serve(
  store: IdempotencyStore,
  {
    failing = false,
    gate,
    started,
    options = {},
  }: {
    failing?: boolean;
    gate?: Promise<void>;
    /** Called when a handler starts (the delivery holds its key and its record by then). */
    started?: () => void;
    options?: Partial<ReceiverOptions>;
  } = {},
): Promise<{ url: string; runs: string[] }> {
  const runs: string[] = [];
  const receiver = createReceiver({ secret: SECRET, store, logger: false, ...options });
  receiver.onAny(async (event) => {
    started?.();
    if (gate) await gate;
    if (failing) throw new Error('crm hiccup');
    runs.push(`${event.event}:${event.idempotencyKey}`);
  });
  const server = await listen(createServer(nodeListener(receiver)).listen(0, '127.0.0.1'), '');
  cleanups.push(() => server.close());
  return { url: server.url, runs };
}

/** What a reconcile run's claim of the entity's record finds (and gives the record back). */
async function probe(store: IdempotencyStore, entity: string): Promise<Claim['state'] | string> {
  const record = recordKeyOf(entity, undefined);
  const answer = await store.claim(requestFor(record, { leaseMs: 5_000 }));
  if (answer.state === 'claimed') {
    await store.settle(answer, 'release');
    return 'free';
  }
  return answer.state === 'done' ? `done:${answer.fingerprint}` : answer.state;
}

/** Recover `entity` as a reconcile run does: claim its record and complete it `reconciled`. */
async function recover(store: IdempotencyStore, entity: string): Promise<void> {
  const record = recordKeyOf(entity, undefined);
  const request = requestFor(record, { leaseMs: 5_000, fingerprint: RECOVERED_BY_RUN });
  await store.settle(heldOf(await store.claim(request)), 'complete');
}

function outcomeOf(answer: Answer): unknown {
  return (answer.body as { outcome?: unknown }).outcome;
}

describe.each(stores)('records on %s', (_name, makeStore) => {
  it('records a processed payment, and a run then finds its invoice handled', async () => {
    const store = makeStore();
    const { url } = await serve(store);
    const answer = await post(url, payment(877051));
    expect([answer.status, outcomeOf(answer)]).toEqual([200, 'processed']);
    expect(await probe(store, 'invoice:877051')).toBe(`done:${RECORDED_BY_WEBHOOK}`);
    // Another invoice, never delivered, is free for a run.
    expect(await probe(store, 'invoice:877052')).toBe('free');
  });

  it('leaves the invoice free for a run when the handler failed', async () => {
    const store = makeStore();
    const { url } = await serve(store, { failing: true });
    const answer = await post(url, payment(877061));
    expect(answer.status).toBe(500);
    expect(await probe(store, 'invoice:877061')).toBe('free');
  });

  it('runs nothing for an invoice a run recovered: 200 duplicate, its resend too', async () => {
    const store = makeStore();
    const { url, runs } = await serve(store);
    await recover(store, 'invoice:877071');
    const delivery = payment(877071);
    for (let attempt = 0; attempt < 2; attempt++) {
      const answer = await post(url, delivery);
      expect([answer.status, outcomeOf(answer)]).toEqual([200, 'duplicate']);
    }
    expect(runs).toEqual([]);
    // The record still says a run recovered it.
    expect(await probe(store, 'invoice:877071')).toBe(`done:${RECOVERED_BY_RUN}`);
  });

  it('answers 409 in_flight while a run holds the invoice, and processes the retry after', async () => {
    const store = makeStore();
    const { url, runs } = await serve(store);
    const record = recordKeyOf('invoice:877081', undefined);
    const held = heldOf(await store.claim(requestFor(record, { leaseMs: 30_000 })));
    const delivery = payment(877081);
    const first = await post(url, delivery);
    expect([first.status, outcomeOf(first)]).toEqual([409, 'in_flight']);
    expect(runs).toEqual([]);
    // The run's handler failed: it gives the record back; the platform's retry runs.
    await store.settle(held, 'release');
    const retry = await post(url, delivery);
    expect([retry.status, outcomeOf(retry)]).toEqual([200, 'processed']);
    expect(runs).toEqual([`PaymentCompleted:${delivery.idempotencyKey}`]);
  });

  it('holds the record while the handler runs, so a run cannot recover it meanwhile', async () => {
    const store = makeStore();
    const gate = deferred();
    const running = deferred();
    const { url } = await serve(store, { gate: gate.promise, started: running.resolve });
    const answer = post(url, payment(877091));
    // Once the handler runs, a run's claim of the invoice finds it in flight.
    await running.promise;
    expect(await probe(store, 'invoice:877091')).toBe('in_flight');
    gate.resolve();
    expect((await answer).status).toBe(200);
    expect(await probe(store, 'invoice:877091')).toBe(`done:${RECORDED_BY_WEBHOOK}`);
  });

  it('runs both events about one access: webhooks stay deduplicated by their key alone', async () => {
    const store = makeStore();
    const { url, runs } = await serve(store);
    const free = enrollment('ProductEnrolledToFree', 551201);
    const invite = enrollment('ProductEnrolledByInviteLink', 551201);
    expect((await post(url, free)).status).toBe(200);
    expect((await post(url, invite)).status).toBe(200);
    expect(runs.sort()).toEqual(
      [
        `ProductEnrolledByInviteLink:${invite.idempotencyKey}`,
        `ProductEnrolledToFree:${free.idempotencyKey}`,
      ].sort(),
    );
    expect(await probe(store, 'access:551201')).toBe(`done:${RECORDED_BY_WEBHOOK}`);
  });

  it('runs two events about one access sent at once, both now (the second waits for the first)', async () => {
    const store = makeStore();
    const gate = new Promise<void>((resolve) => setTimeout(resolve, 100));
    const { url, runs } = await serve(store, { gate });
    const free = enrollment('ProductEnrolledToFree', 551301);
    const invite = enrollment('ProductEnrolledByInviteLink', 551301);
    const answers = await Promise.all([post(url, free), post(url, invite)]);
    expect(answers.map((answer) => [answer.status, outcomeOf(answer)])).toEqual([
      [200, 'processed'],
      [200, 'processed'],
    ]);
    expect(runs).toHaveLength(2);
  });

  it('records nothing with recordEntities: false', async () => {
    const store = makeStore();
    const { url } = await serve(store, { options: { recordEntities: false } });
    expect((await post(url, payment(877101))).status).toBe(200);
    expect(await probe(store, 'invoice:877101')).toBe('free');
  });

  it('records a queued payment when the inbox took it', async () => {
    const store = makeStore();
    const inbox = memoryInbox();
    cleanups.push(() => inbox.close());
    const { url } = await serve(store, { options: { inbox } });
    const answer = await post(url, payment(877111));
    expect([answer.status, outcomeOf(answer)]).toEqual([202, 'queued']);
    expect(await probe(store, 'invoice:877111')).toBe(`done:${RECORDED_BY_WEBHOOK}`);
  });
});

describe('records on postgresStore, in the handlers transaction', () => {
  it('commits the record with the handlers writes, and neither when the handler fails after writing', async () => {
    const { pool } = postgres;
    const table = postgres.table();
    const grants = postgres.table('sh_records_grants');
    await pool.query(`CREATE TABLE ${grants} (invoice bigint PRIMARY KEY)`);
    const store = postgresStore({ pool, table });
    const receiver = createReceiver({ secret: SECRET, store, logger: false });
    let failNext = false;
    receiver.on('PaymentCompleted', async (event, ctx) => {
      await ctx.transaction!.query(`INSERT INTO ${grants} VALUES ($1)`, [
        event.data.payment.invoice.id,
      ]);
      // The grant is written, then the handler fails: neither it nor the record may commit.
      if (failNext) throw new Error('crm hiccup after the grant');
    });
    const server = await listen(createServer(nodeListener(receiver)).listen(0, '127.0.0.1'), '');
    cleanups.push(() => server.close());
    expect((await post(server.url, payment(877121))).status).toBe(200);
    expect(await probe(store, 'invoice:877121')).toBe(`done:${RECORDED_BY_WEBHOOK}`);
    failNext = true;
    expect((await post(server.url, payment(877122))).status).toBe(500);
    expect(await probe(store, 'invoice:877122')).toBe('free');
    const rows = await pool.query<{ invoice: string }>(`SELECT invoice FROM ${grants} ORDER BY 1`);
    expect(rows.rows.map((row) => Number(row.invoice))).toEqual([877121]);
  });
});
