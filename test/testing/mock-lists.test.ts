/**
 * createMockSchoolApi's four lists, read with plain fetch (not the client): the paging fields and
 * filters of docs/platform.md#list-operations, the parameters and methods it refuses, the
 * permissions each list needs, and `rateLimitNext`, which answers as the platform's rate limit.
 */

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMockSchoolApi, type MockSchoolApi } from '../../src/testing/mock-school-api.js';
import type { MockInvoice } from '../../src/testing/mock-lists.js';

const KEY = 'mock-key';
const HEADERS = { authorization: `Bearer ${KEY}`, 'seller-id': '7', 'school-id': '70' };
const INVOICES = '/saas/v2/invoice/list/raw';

type Json = Record<string, unknown>;

function invoice(invoiceId: number, createdAt: string, paymentStatus?: string): MockInvoice {
  return {
    invoiceId,
    createdAt,
    user: { id: 100 + invoiceId },
    products: [{ productId: invoiceId % 2 === 0 ? 20 : 21 }],
    type: invoiceId === 3 ? 'SubscriptionPay' : 'Regular',
    ...(paymentStatus === undefined ? {} : { paymentStatus }),
  };
}

let mock: MockSchoolApi;

beforeEach(async () => {
  mock = await createMockSchoolApi({
    apiKey: KEY,
    sellerId: 7,
    schoolId: 70,
    lists: {
      invoices: [
        invoice(1, '2026-11-01T00:00:00Z', 'Completed'),
        invoice(2, '2026-11-02T00:00:00Z', 'Canceled'),
        invoice(3, '2026-11-03T00:00:00Z', 'Completed'),
        invoice(4, '2026-11-04T00:00:00Z'),
        invoice(5, '2026-11-05T00:00:00Z', 'Completed'),
      ],
    },
  });
});

afterEach(async () => {
  await mock.close();
});

async function get(
  path: string,
  query = '',
  init: RequestInit = {},
): Promise<{ status: number; json: Json }> {
  const response = await fetch(`${mock.url}${path}${query ? `?${query}` : ''}`, {
    headers: HEADERS,
    ...init,
  });
  return { status: response.status, json: (await response.json()) as Json };
}

function payload(json: Json): Json & { items: Json[] } {
  return json['payload'] as Json & { items: Json[] };
}

function invoiceIds(json: Json): unknown[] {
  return payload(json).items.map((item) => item['invoiceId']);
}

describe('the lists of createMockSchoolApi', () => {
  it("pages with take and skip, in the shape of the platform's page", async () => {
    const { status, json } = await get(INVOICES, 'take=2&skip=2');

    expect(status).toBe(200);
    expect(json).toMatchObject({ success: true, code: 200 });
    expect(payload(json)).toMatchObject({
      page: 2,
      count: 5,
      pages: 3,
      isFirst: false,
      isLast: false,
      next: { skip: 4, take: 2, page: 3 },
      prev: { skip: 0, take: 2, page: 1 },
    });
    expect(invoiceIds(json)).toEqual([3, 4]);
  });

  it('pages with page when no skip is sent, lets skip win when both are, and defaults take to 100', async () => {
    const byPage = await get(INVOICES, 'take=2&page=3');
    const both = await get(INVOICES, 'take=2&page=3&skip=1');
    const byDefault = await get(INVOICES);

    expect(invoiceIds(byPage.json)).toEqual([5]);
    expect(payload(byPage.json)).toMatchObject({ isLast: true, next: null });
    expect(invoiceIds(both.json)).toEqual([2, 3]);
    expect(payload(byDefault.json)).toMatchObject({ count: 5, pages: 1, isFirst: true });
    expect(invoiceIds(byDefault.json)).toEqual([1, 2, 3, 4, 5]);
  });

  it('keeps paid invoices for payment[actualStatuses]=Completed and never serves its own paymentStatus', async () => {
    const { json } = await get(INVOICES, 'payment%5BactualStatuses%5D=Completed');

    expect(invoiceIds(json)).toEqual([1, 3, 5]);
    expect(payload(json).items.some((item) => 'paymentStatus' in item)).toBe(false);
  });

  it('filters by a date range (ends included), repeated ids, products and types', async () => {
    const range = await get(
      INVOICES,
      'createdAtDateRange%5Bfrom%5D=2026-11-02T00:00:00Z&createdAtDateRange%5Bto%5D=2026-11-04T00:00:00Z',
    );
    const users = await get(INVOICES, 'userIds=101&userIds=105');
    const products = await get(INVOICES, 'productIds=20');
    const types = await get(INVOICES, 'types=SubscriptionPay');

    expect(invoiceIds(range.json)).toEqual([2, 3, 4]);
    expect(invoiceIds(users.json)).toEqual([1, 5]);
    expect(invoiceIds(products.json)).toEqual([2, 4]);
    expect(invoiceIds(types.json)).toEqual([3]);
  });

  it('serves the other three lists with their own filters', async () => {
    mock.addListItems({
      productAccesses: [
        { accessId: 1, active: true, user: { id: 9 } },
        { accessId: 2, active: false, user: { id: 9 } },
      ],
      certificates: [
        { certificateId: 1, courseId: 5, issuedAt: '2026-11-01T00:00:00Z', user: { id: 9 } },
        { certificateId: 2, courseId: 6, issuedAt: '2026-11-09T00:00:00Z' },
      ],
      users: [
        { id: 9, createdAt: '2026-11-01T00:00:00Z', status: 'Active' },
        { id: 10, createdAt: '2026-11-01T00:00:00Z', status: 'Blocked' },
      ],
    });

    const accesses = await get('/saas/v2/product-access/list/raw', 'active=false');
    const certificates = await get(
      '/saas/v2/certificate/list/raw',
      'issuedAtDateRange%5Bto%5D=2026-11-05T00:00:00Z&userIds=9',
    );
    const users = await get('/saas/v2/user/list', 'statuses=Blocked');

    expect(payload(accesses.json).items).toEqual([{ accessId: 2, active: false, user: { id: 9 } }]);
    expect(payload(certificates.json).items.map((item) => item['certificateId'])).toEqual([1]);
    expect(payload(users.json).items.map((item) => item['id'])).toEqual([10]);
  });

  it.each([
    ['an unknown parameter', 'createdAt=2026-11-01', 'property createdAt should not exist'],
    ['an array key with brackets', 'userIds%5B%5D=1', 'property userIds[] should not exist'],
    ['take over 1000', 'take=1001', 'take must be an integer from 1 to 1000'],
    ['take 0', 'take=0', 'take must be an integer from 1 to 1000'],
    ['a negative skip', 'skip=-1', 'skip must not be less than 0'],
    ['a non-integer id', 'userIds=abc', 'each value in userIds must be an integer number'],
    [
      'an unreadable date',
      'createdAtDateRange%5Bfrom%5D=soon',
      'createdAtDateRange[from] must be a valid ISO 8601 date string',
    ],
  ])('answers 400 validation for %s', async (_case, query, message) => {
    const { status, json } = await get(INVOICES, query);

    expect(status).toBe(400);
    expect(json).toEqual({
      success: false,
      code: 400,
      cause: 'validation',
      message: [message],
      error: 'Bad Request',
    });
  });

  it('answers 405 to a POST of a list', async () => {
    const { status } = await get(INVOICES, '', { method: 'POST', body: '{}' });

    expect(status).toBe(405);
  });

  it('checks the key first, then the permission the list needs', async () => {
    const other = await createMockSchoolApi({
      apiKey: KEY,
      sellerId: 7,
      schoolId: 70,
      permissions: ['SchoolManageUsers'],
    });
    try {
      const wrongKey = await fetch(`${other.url}${INVOICES}`, {
        headers: { ...HEADERS, authorization: 'Bearer nope' },
      });
      const invoices = await fetch(`${other.url}${INVOICES}`, { headers: HEADERS });
      const certificates = await fetch(`${other.url}/saas/v2/certificate/list/raw`, {
        headers: HEADERS,
      });
      const users = await fetch(`${other.url}/saas/v2/user/list`, { headers: HEADERS });

      expect(wrongKey.status).toBe(401);
      expect(await invoices.json()).toMatchObject({
        code: 401,
        cause: 'Forbidden',
        message: 'Forbidden seller resource - permissions SellerSales',
      });
      expect(await certificates.json()).toMatchObject({
        message: 'Forbidden seller resource - permissions CourseManage',
      });
      expect(users.status).toBe(200);
    } finally {
      await other.close();
    }
  });

  it('rateLimitNext answers 429 Rate with data.retryAfter, and again to anything sent before it', async () => {
    mock.rateLimitNext(1, 400);

    const limited = await get(INVOICES);
    const early = await get(INVOICES);
    const retryAfter = Date.parse(
      ((limited.json['data'] as Json | undefined)?.['retryAfter'] as string | undefined) ?? '',
    );
    await new Promise((resolve) => setTimeout(resolve, retryAfter - Date.now() + 5));
    const later = await get(INVOICES);

    expect(limited.status).toBe(429);
    expect(limited.json).toMatchObject({ success: false, code: 429, cause: 'Rate' });
    expect(retryAfter - mock.requests[0]!.receivedAt).toBeGreaterThanOrEqual(400);
    expect(retryAfter - mock.requests[0]!.receivedAt).toBeLessThan(500);
    expect(early.status).toBe(429);
    expect(early.json['data']).toEqual(limited.json['data']);
    expect(later.status).toBe(200);
  });

  it('rateLimitNext(n) answers the next n requests 429, however short the wait', async () => {
    mock.rateLimitNext(2, 0);

    const statuses = [];
    for (let call = 0; call < 3; call += 1) statuses.push((await get(INVOICES)).status);

    expect(statuses).toEqual([429, 429, 200]);
  });

  it('rateLimitNext limits the session-token operation too: the limit is per key', async () => {
    mock.rateLimitNext();

    const response = await fetch(`${mock.url}/saas/v2/user/session/auth-token`, {
      method: 'POST',
      headers: { ...HEADERS, 'content-type': 'application/json' },
      body: JSON.stringify({ userId: 5 }),
    });

    expect(response.status).toBe(429);
    expect(mock.sessions(5)).toHaveLength(0);
  });
});
