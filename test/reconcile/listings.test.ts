/**
 * What a reconcile run lists of each kind, on its own: the list call and its filter over the
 * window (paid invoices by issue date from `lookbackMs` before `since`; accesses and users by
 * creation date, certificates by issue date, from `since`), and the entity each item names, the
 * one the webhook about it names (`entityOf`). The module is loaded afresh in each test
 * (`vi.resetModules()` and `import()`), so a mutation tool that changes its module-level table
 * sees it (docs/maintainers/mutation-testing.md); the same lists are read over real HTTP in
 * reconciler.test.ts.
 */

import { recordKeyOf } from '../../src/keys/delivery-key.js';
import { describe, expect, it, vi } from 'vitest';
import { entityOf } from '../../src/platform/entity-of.js';
import type { ListingOptions } from '../../src/reconcile/listings.js';
import type { ReconcileApi } from '../../src/reconcile/types.js';
import type { ReconcileWindow } from '../../src/reconcile/window.js';
import { DAY, HOUR, NOW } from './helpers.js';

async function freshListings() {
  vi.resetModules();
  return import('../../src/reconcile/listings.js');
}

const window: ReconcileWindow = {
  from: NOW - 2 * DAY,
  to: NOW - 5 * HOUR,
  invoicesFrom: NOW - 9 * DAY,
};
const options: ListingOptions = { take: 50, onInvalidItem: () => {} };
/** The window's dates from `from` (ms since the epoch) to its end, as the list calls take them. */
const range = (from: number) => ({ from: new Date(from), to: new Date(NOW - 5 * HOUR) });

/** An API whose four lists each yield `items` and record the options they were called with. */
function recordingApi(items: Record<string, readonly object[]>) {
  const calls: [string, Record<string, unknown>][] = [];
  const list = (name: string) =>
    async function* (filter: Record<string, unknown>): AsyncGenerator<object> {
      calls.push([name, filter]);
      yield* items[name] ?? [];
    };
  const api = {
    invoices: list('invoices'),
    productAccesses: list('productAccesses'),
    certificates: list('certificates'),
    users: list('users'),
  } as unknown as ReconcileApi;
  return { api, calls };
}

describe('listEntities, loaded afresh', () => {
  it('lists the four kinds in this order: invoice, access, certificate, user', async () => {
    const { RECONCILE_KINDS } = await freshListings();
    expect(RECONCILE_KINDS).toEqual(['invoice', 'access', 'certificate', 'user']);
  });

  it.each([
    [
      'invoice',
      'invoices',
      { invoiceId: 877051 },
      { paid: true, createdAt: range(NOW - 9 * DAY) },
      { event: 'PaymentCompleted', data: { payment: { invoice: { id: 877051 } } } },
    ],
    [
      'access',
      'productAccesses',
      { accessId: 31, productId: 5, user: { id: 9 } },
      { createdAt: range(NOW - 2 * DAY) },
      { event: 'ProductEnrolledViaPayment', data: { access: { id: 31 } } },
    ],
    [
      'certificate',
      'certificates',
      { certificateId: 4411 },
      { issuedAt: range(NOW - 2 * DAY) },
      { event: 'CertificateIssued', data: { certificate: { id: 4411 } } },
    ],
    [
      'user',
      'users',
      { id: 1937465 },
      { createdAt: range(NOW - 2 * DAY) },
      { event: 'UserSignedUp', data: { user: { id: 1937465 } } },
    ],
  ] as const)(
    'lists %s with %s over the window, naming the entity its webhook names',
    async (kind, method, item, filter, webhook) => {
      const { listEntities } = await freshListings();
      const { api, calls } = recordingApi({ [method]: [item] });
      const listed = [];
      for await (const entity of listEntities(kind, api, window, options, undefined)) {
        listed.push(entity);
      }
      const [id] = Object.values(item);
      const entity = entityOf(webhook)!.key;
      // An access is also checked under the enrollment a webhook without it records.
      const also = kind === 'access' ? [recordKeyOf('enrollment:9:5', undefined)] : [];
      expect(listed).toEqual([
        { item, id: String(id), entity, records: [recordKeyOf(entity, undefined), ...also] },
      ]);
      expect(calls).toEqual([[method, { ...filter, ...options }]]);
    },
  );
});
