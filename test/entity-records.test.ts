/**
 * Reconciliation's records when the store fails them (src/entity-records.ts, the pipeline's
 * `record` step): a record that cannot be taken is a 503 the platform retries, with the key
 * given back; one that cannot be written or freed after the handlers is told to `onError` in
 * the seller's words, and the delivery's answer is what its handlers earned. Which events take a
 * record at all: those about an entity the platform lists, and no other.
 */

import { describe, expect, it } from 'vitest';
import { recordKeyOf } from '../src/delivery-key.js';
import { recordOf, recordMethodsOf, RECOVERED_BY_RUN } from '../src/entity-records.js';
import { createReceiver, type SchoolhooksError } from '../src/index.js';
import { memoryStore } from '../src/stores/memory.js';
import type { IdempotencyStore } from '../src/stores/types.js';
import { fixtureDelivery } from './helpers/deliveries.js';
import { SECRET } from './helpers/signed.js';

type RecordMethod = 'claimRecord' | 'completeRecord' | 'releaseRecord';

/** A memoryStore whose record method `failing` throws, the others made of its keys. */
function storeFailing(failing: RecordMethod): { store: IdempotencyStore; calls: string[] } {
  const inner = memoryStore();
  const records = recordMethodsOf(inner);
  const calls: string[] = [];
  const wrap =
    <A extends unknown[], R>(name: RecordMethod, method: (...args: A) => R) =>
    (...args: A): R => {
      calls.push(name);
      if (name === failing) throw new Error(`redis went away during ${name}`);
      return method(...args);
    };
  const store: IdempotencyStore = {
    claim: (key, leaseMs) => inner.claim(key, leaseMs),
    complete: (key, token, ttlMs, fingerprint) => inner.complete(key, token, ttlMs, fingerprint),
    release: (key, token) => inner.release(key, token),
    claimRecord: wrap('claimRecord', records.claimRecord),
    completeRecord: wrap('completeRecord', records.completeRecord),
    releaseRecord: wrap('releaseRecord', records.releaseRecord),
  };
  return { store, calls };
}

function payment(invoiceId = 877051) {
  const delivery = fixtureDelivery('PaymentCompleted', (data) => {
    ((data['payment'] as Record<string, unknown>)['invoice'] as Record<string, unknown>)['id'] =
      invoiceId;
  });
  return { method: 'POST', headers: delivery.headers, body: delivery.body };
}

describe('the record step when the store fails', () => {
  it('answers 503 store_unavailable when the record cannot be taken, and the retry runs', async () => {
    const { store } = storeFailing('claimRecord');
    const errors: SchoolhooksError[] = [];
    const runs: string[] = [];
    const receiver = createReceiver({ secret: SECRET, store, logger: false })
      .on('PaymentCompleted', (event) => void runs.push(event.idempotencyKey))
      .onError((error) => void errors.push(error));
    const request = payment();
    const first = await receiver.handle(request);
    expect([first.status, first.outcome]).toEqual([503, 'store_unavailable']);
    expect(runs).toEqual([]);
    expect(errors.map((error) => [error.code, error.message])).toEqual([
      [
        'store_unavailable',
        "the idempotency store failed to take the entity's record: redis went away during claimRecord",
      ],
    ]);
    // The key was given back: with the store healed, the platform's retry is processed.
    store.claimRecord = recordMethodsOf(memoryStore()).claimRecord;
    const retry = await receiver.handle(request);
    expect([retry.status, retry.outcome]).toEqual([200, 'processed']);
  });

  it('tells onError when the record cannot be written after the handlers, and still answers 200', async () => {
    const { store } = storeFailing('completeRecord');
    const errors: SchoolhooksError[] = [];
    const receiver = createReceiver({ secret: SECRET, store, logger: false })
      .on('PaymentCompleted', () => {})
      .onError((error) => void errors.push(error));
    const request = payment();
    const answer = await receiver.handle(request);
    expect([answer.status, answer.outcome]).toEqual([200, 'processed']);
    expect(errors.map((error) => [error.code, error.message])).toEqual([
      [
        'store_unavailable',
        'the idempotency store failed to record the entity as handled: redis went away during completeRecord',
      ],
    ]);
    // The key itself was completed: a resend is a duplicate.
    expect((await receiver.handle(request)).outcome).toBe('duplicate');
  });

  it('tells onError when the record cannot be freed after a handler failed, and still answers 500', async () => {
    const { store } = storeFailing('releaseRecord');
    const errors: SchoolhooksError[] = [];
    const receiver = createReceiver({ secret: SECRET, store, logger: false })
      .on('PaymentCompleted', () => {
        throw new Error('crm hiccup');
      })
      .onError((error) => void errors.push(error));
    const answer = await receiver.handle(payment());
    expect([answer.status, answer.outcome]).toEqual([500, 'handler_failed']);
    // Both told: the store's failure as it happens, the handler's with the answer.
    expect(errors.map((error) => error.code).sort()).toEqual([
      'handler_failed',
      'store_unavailable',
    ]);
    expect(errors.find((error) => error.code === 'store_unavailable')?.message).toBe(
      "the idempotency store failed to release the entity's record: redis went away during releaseRecord",
    );
  });
});

describe('which deliveries take a record', () => {
  it('those about an invoice, an access, a certificate or a user; no progress, no other event', async () => {
    const { store, calls } = storeFailing('completeRecord');
    const receiver = createReceiver({ secret: SECRET, store, logger: false }).onAny(() => {});
    receiver.onError(() => {});
    const events = [
      'PaymentCompleted',
      'ProductEnrolledToFree',
      'CertificateIssued',
      'UserSignedUp',
      'CourseProgressChanged',
      'CourseCompleted',
      'UserAcquainted',
    ];
    const taken: string[] = [];
    for (const event of events) {
      calls.length = 0;
      const delivery = fixtureDelivery(event);
      const answer = await receiver.handle({
        method: 'POST',
        headers: delivery.headers,
        body: delivery.body,
      });
      // Every one is processed, with a record or without.
      expect([event, answer.outcome]).toEqual([event, 'processed']);
      if (calls.includes('claimRecord')) taken.push(event);
    }
    expect(taken).toEqual([
      'PaymentCompleted',
      'ProductEnrolledToFree',
      'CertificateIssued',
      'UserSignedUp',
    ]);
  });

  it('names the record by the entity and the tenant, never one for two', () => {
    const event = (id: number) => ({
      event: 'PaymentCompleted',
      data: { payment: { invoice: { id } } },
    });
    expect(recordOf(event(5), undefined)).toBe(recordKeyOf('invoice:5', undefined));
    expect(recordOf(event(5), 'school-a')).toBe(recordKeyOf('invoice:5', 'school-a'));
    expect(recordOf(event(5), 'school-a')).not.toBe(recordOf(event(5), 'school-b'));
    expect(recordOf(event(5), undefined)).not.toBe(recordOf(event(6), undefined));
    expect(
      recordOf(
        { event: 'CourseCompleted', data: { user: { id: 1 }, course: { id: 2 } } },
        undefined,
      ),
    ).toBeUndefined();
  });

  const METHODS = ['claimRecord', 'completeRecord', 'releaseRecord'] as const;
  it.each([
    ...METHODS.map((only) => [only]),
    ...METHODS.map((left) => METHODS.filter((m) => m !== left)),
  ])(
    'makes all three of its key methods for a store that has only %s, and calls none of its own',
    async (...own) => {
      const called: string[] = [];
      const store: IdempotencyStore = { ...memoryStore() };
      for (const name of own) {
        store[name] = () => {
          called.push(name);
          throw new Error(`a half-made ${name}`);
        };
      }
      const records = recordMethodsOf(store);
      const record = recordKeyOf('invoice:9', undefined);
      const first = await records.claimRecord(record, 1000, { key: 'k', token: 't' });
      if (first.state !== 'claimed') throw new Error(`expected a claim, got ${first.state}`);
      await records.completeRecord(record, first.token, 1000);
      const again = store.claim(record, 1000);
      expect(again).toEqual({ state: 'done', fingerprint: 'webhook' });
      await records.releaseRecord(recordKeyOf('invoice:10', undefined), 'no-token');
      expect(called).toEqual([]);
    },
  );

  it("reads a run's recovery as recovered and a webhook's record as recorded, on any store", async () => {
    const store = memoryStore();
    const records = recordMethodsOf(store);
    const held = { key: 'k', token: 't' };
    const first = records.claimRecord('~["record",null,"invoice:1"]', 1000, held);
    expect(first).toMatchObject({ state: 'claimed' });
    expect(records.claimRecord('~["record",null,"invoice:1"]', 1000, held)).toEqual({
      state: 'in_flight',
    });
    await records.completeRecord(
      '~["record",null,"invoice:1"]',
      (first as { token: string }).token,
      1000,
    );
    expect(records.claimRecord('~["record",null,"invoice:1"]', 1000, held)).toEqual({
      state: 'recorded',
    });
    const run = store.claim('~["record",null,"invoice:2"]', 1000);
    if (!('token' in run)) throw new Error('free');
    store.complete('~["record",null,"invoice:2"]', run.token, 1000, RECOVERED_BY_RUN);
    expect(records.claimRecord('~["record",null,"invoice:2"]', 1000, held)).toEqual({
      state: 'recovered',
    });
  });
});
