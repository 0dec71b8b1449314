/**
 * Reconciliation's records (`recordOf` in src/keys/delivery-key.ts): which deliveries take a record in their claim
 * (those about an entity the platform lists, and an enrollment without `access` under its user
 * and product), how it is named, what it is completed with, and what a delivery answers when a
 * run recovered its entity or another delivery holds it.
 */

import { describe, expect, it } from 'vitest';
import {
  enrollmentRecordOf,
  RECORDED_BY_WEBHOOK,
  recordKeyOf,
  RECOVERED_BY_RUN,
  recordOf,
} from '../src/keys/delivery-key.js';
import { createReceiver } from '../src/index.js';
import { memoryStore } from '../src/stores/memory.js';
import type { ClaimRequest, IdempotencyStore } from '../src/stores/types.js';
import { fixtureDelivery } from './helpers/deliveries.js';
import { SECRET } from './helpers/signed.js';
import { heldOf, requestFor } from './stores/contract.js';

/** A memoryStore that keeps every claim request it is given. */
function watchedStore(): { store: IdempotencyStore; requests: ClaimRequest[] } {
  const inner = memoryStore();
  const requests: ClaimRequest[] = [];
  const store: IdempotencyStore = {
    ...inner,
    claim: (request) => (requests.push(request), inner.claim(request)),
  };
  return { store, requests };
}

function deliveryOf(event: string, edit?: (data: Record<string, unknown>) => void) {
  const delivery = fixtureDelivery(event, edit);
  return { method: 'POST', headers: delivery.headers, body: delivery.body };
}

describe('which deliveries take a record in their claim', () => {
  it('those about an invoice, an access, a certificate or a user; no progress, no other event', async () => {
    const { store, requests } = watchedStore();
    const receiver = createReceiver({ secret: SECRET, store, logger: false }).onAny(() => {});
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
      requests.length = 0;
      const answer = await receiver.handle(deliveryOf(event));
      // Every one is processed, with a record or without.
      expect([event, answer.outcome]).toEqual([event, 'processed']);
      expect(requests).toHaveLength(1);
      if (requests[0]!.records !== undefined) taken.push(event);
    }
    expect(taken).toEqual([
      'PaymentCompleted',
      'ProductEnrolledToFree',
      'CertificateIssued',
      'UserSignedUp',
    ]);
  });

  it('completes the record `webhook` with the key, in the same settle', async () => {
    const { store, requests } = watchedStore();
    const receiver = createReceiver({ secret: SECRET, store, logger: false }).onAny(() => {});
    await receiver.handle(deliveryOf('PaymentCompleted'));
    const [request] = requests;
    expect(request!.records).toHaveLength(1);
    expect(await store.peek(request!.records!)).toEqual([
      { state: 'done', fingerprint: RECORDED_BY_WEBHOOK },
    ]);
  });

  it('takes none with recordEntities: false', async () => {
    const { store, requests } = watchedStore();
    const receiver = createReceiver({
      secret: SECRET,
      store,
      logger: false,
      recordEntities: false,
    }).onAny(() => {});
    await receiver.handle(deliveryOf('PaymentCompleted'));
    expect(requests.map((request) => request.records)).toEqual([undefined]);
  });

  it('records an enrollment without access under its user and product', async () => {
    const { store, requests } = watchedStore();
    const receiver = createReceiver({ secret: SECRET, store, logger: false }).onAny(() => {});
    await receiver.handle(
      deliveryOf('ProductEnrolledToFree', (data) => {
        delete data['access'];
        data['user'] = { ...(data['user'] as object), id: 5150 };
        data['product'] = { ...(data['product'] as object), id: 31 };
      }),
    );
    expect(requests[0]!.records).toEqual([recordKeyOf('enrollment:5150:31', undefined)]);
  });
});

describe('a record as the receiver names it', () => {
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

  it("names an enrollment without access by its user and product, as an access list item's second record", () => {
    const enrollment = (data: unknown) => recordOf({ event: 'ProductEnrolledViaLms', data }, 't');
    const named = enrollment({ user: { id: 7 }, product: { id: 31 } });
    expect(named).toBe(recordKeyOf('enrollment:7:31', 't'));
    expect(named).toBe(enrollmentRecordOf(7, 31, 't'));
    // The access wins when there is one; without a user or a product there is nothing to name.
    expect(enrollment({ user: { id: 7 }, product: { id: 31 }, access: { id: 9 } })).toBe(
      recordKeyOf('access:9', 't'),
    );
    expect(enrollment({ user: { id: 7 } })).toBeUndefined();
    expect(enrollment({ product: { id: 31 } })).toBeUndefined();
    // Two enrollments of one user in two products, or two users in one, are two records.
    expect(enrollment({ user: { id: 7 }, product: { id: 32 } })).not.toBe(named);
    expect(enrollment({ user: { id: 71 }, product: { id: 31 } })).not.toBe(named);
    // Ids with the separator are escaped: 1:23 and 12:3 stay apart.
    expect(enrollmentRecordOf('1:2', 3, undefined)).not.toBe(
      enrollmentRecordOf(1, '2:3', undefined),
    );
    // Another event without an entity has no record, even one that names a user and a product:
    // only an enrollment is about the pair.
    expect(recordOf({ event: 'UserAcquainted', data: { user: { id: 7 } } }, 't')).toBeUndefined();
    expect(
      recordOf({ event: 'UserAcquainted', data: { user: { id: 7 }, product: { id: 31 } } }, 't'),
    ).toBeUndefined();
    // An access list item without its user or its product has no second record.
    expect(enrollmentRecordOf(undefined, 31, 't')).toBeUndefined();
    expect(enrollmentRecordOf(7, null, 't')).toBeUndefined();
  });
});

describe('a delivery about an entity a run took', () => {
  it('answers 200 duplicate for an entity a run recovered, completing its key and running nothing', async () => {
    const store = memoryStore();
    const ran: string[] = [];
    const receiver = createReceiver({ secret: SECRET, store, logger: false }).on(
      'PaymentCompleted',
      (event) => void ran.push(event.idempotencyKey),
    );
    const request = deliveryOf('PaymentCompleted', (data) => {
      ((data['payment'] as Record<string, unknown>)['invoice'] as Record<string, unknown>)['id'] =
        424242;
    });
    const record = recordKeyOf('invoice:424242', undefined);
    const run = heldOf(await store.claim(requestFor(record, { fingerprint: RECOVERED_BY_RUN })));
    await store.settle(run, 'complete');
    expect((await receiver.handle(request)).outcome).toBe('duplicate');
    expect((await receiver.handle(request)).outcome).toBe('duplicate');
    expect(ran).toEqual([]);
    expect(await store.peek([record])).toEqual([{ state: 'done', fingerprint: RECOVERED_BY_RUN }]);
  });

  it('tries again for about 0.6 s while another claim holds the record, then answers 409 in_flight', async () => {
    const store = memoryStore();
    const receiver = createReceiver({ secret: SECRET, store, logger: false }).onAny(() => {});
    const request = deliveryOf('PaymentCompleted', (data) => {
      ((data['payment'] as Record<string, unknown>)['invoice'] as Record<string, unknown>)['id'] =
        434343;
    });
    const record = recordKeyOf('invoice:434343', undefined);
    const held = heldOf(await store.claim(requestFor(record)));
    const started = performance.now();
    expect((await receiver.handle(request)).outcome).toBe('in_flight');
    expect(performance.now() - started).toBeGreaterThanOrEqual(550);
    // Freed within the wait: the delivery takes it and runs.
    const again = receiver.handle(request);
    setTimeout(() => void store.settle(held, 'release'), 100);
    expect((await again).outcome).toBe('processed');
  });
});
