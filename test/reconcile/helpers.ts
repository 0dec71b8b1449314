/**
 * What the reconcile tests share: a fixed clock, the platform's list items around it, the mock
 * API and a client of it, and the records a webhook leaves.
 * @module
 */

import { createSchoolApi, type SchoolApi } from '../../src/api/index.js';
import { RECORDED_BY_WEBHOOK, recordKeyOf } from '../../src/keys/delivery-key.js';
import type { MockInvoice, MockListItems } from '../../src/testing/mock-lists.js';
import { createMockSchoolApi, type MockSchoolApi } from '../../src/testing/mock-school-api.js';
import type { IdempotencyStore } from '../../src/stores/types.js';
import { heldOf, requestFor } from '../stores/contract.js';

export const MINUTE = 60_000;
export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
/** The reconcilers' clock: every date of the tests is relative to it. */
export const NOW = Date.parse('2026-11-20T12:00:00.000Z');
export const now = (): number => NOW;

const API_KEY = 'sk_live_R3c0nc1le5a9c1e3b5d7f9a1c3e5b7d9f';

/** A date `ms` before {@link NOW}, as the platform writes it. */
export function ago(ms: number): string {
  return new Date(NOW - ms).toISOString();
}

/** A paid invoice issued at `createdAt`, as the platform lists it. */
export function invoice(invoiceId: number, createdAt = ago(10 * HOUR)): MockInvoice {
  return {
    invoiceId,
    invoiceUuid: `00000000-0000-4000-8000-${String(invoiceId).padStart(12, '0')}`,
    type: 'Regular',
    status: 'Active',
    totalAmount: 4900,
    currency: 'Rub',
    createdAt,
    user: { id: 5000 + invoiceId, email: `student${invoiceId}@example.com` },
    products: [{ productId: 31, courseId: 310, totalPrice: 4900, discountAmount: 0 }],
    paymentStatus: 'Completed',
  };
}

/** A product access created at `createdAt`. */
export function access(accessId: number, createdAt = ago(10 * HOUR)) {
  return { accessId, productId: 31, courseId: 310, active: true, createdAt, user: { id: 7000 } };
}

/** A certificate issued at `issuedAt`. */
export function certificate(certificateId: number, issuedAt = ago(10 * HOUR)) {
  return { certificateId, courseId: 310, issuedAt, link: 'https://example.com/c', user: { id: 7 } };
}

/** A user created at `createdAt`. */
export function user(id: number, createdAt = ago(10 * HOUR)) {
  return { id, email: `user${id}@example.com`, createdAt };
}

/** A mock API holding `lists`, and a client of it. */
export async function startApi(
  lists: MockListItems,
): Promise<{ mock: MockSchoolApi; api: SchoolApi }> {
  const mock = await createMockSchoolApi({ apiKey: API_KEY, sellerId: 3, schoolId: 4, lists });
  const api = createSchoolApi({ baseUrl: mock.url, apiKey: API_KEY, sellerId: 3, schoolId: 4 });
  return { mock, api };
}

/** The record a webhook's handlers leave for `entity` once they succeed. */
export async function recordWebhook(
  store: IdempotencyStore,
  entity: string,
  tenant?: string,
): Promise<void> {
  const record = recordKeyOf(entity, tenant);
  const request = requestFor(record, { fingerprint: RECORDED_BY_WEBHOOK, ttlMs: 35 * DAY });
  await store.settle(heldOf(await store.claim(request)), 'complete');
}

/** The requests the mock got for the list at `path`, as their query parameters. */
export function listQueries(mock: MockSchoolApi, path: string): URLSearchParams[] {
  return mock.requests
    .filter((request) => request.path.startsWith(`${path}?`))
    .map((request) => new URLSearchParams(request.path.slice(path.length + 1)));
}

export const PATHS = {
  invoice: '/saas/v2/invoice/list/raw',
  access: '/saas/v2/product-access/list/raw',
  certificate: '/saas/v2/certificate/list/raw',
  user: '/saas/v2/user/list',
} as const;

/** How many times each id was handled. */
export function counter(): { calls: Map<string, number>; count(id: string): void } {
  const calls = new Map<string, number>();
  return { calls, count: (id) => void calls.set(id, (calls.get(id) ?? 0) + 1) };
}
