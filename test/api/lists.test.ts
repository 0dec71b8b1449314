/**
 * The client's four lists (docs/api.md#lists), over real HTTP against createMockSchoolApi: every
 * page is read, `429 Rate` is waited out until `data.retryAfter`, an abort stops the listing, the
 * platform's errors arrive as the client's typed errors, items are read tolerantly and an item that
 * fails its schema is reported by its id.
 */

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  createSchoolApi,
  InvalidListItemsError,
  PermissionError,
  RateLimitError,
  ServerError,
  type InvalidListItem,
  type SchoolApi,
  type SchoolApiOptions,
} from '../../src/api/index.js';
import {
  createMockSchoolApi,
  type MockSchoolApi,
  type MockSchoolApiOptions,
} from '../../src/testing/mock-school-api.js';
import type { MockInvoice } from '../../src/testing/mock-lists.js';

const API_KEY = 'sk_live_L1st5a9c1e3b5d7f9a1c3e5b7d9f1a3c5';
const SELLER_ID = 1042;
const SCHOOL_ID = 877;
const INVOICES_PATH = '/saas/v2/invoice/list/raw';

/** A paid invoice as the platform lists it (docs/platform.md#list-operations). */
function invoice(invoiceId: number, overrides: Record<string, unknown> = {}): MockInvoice {
  return {
    invoiceId,
    invoiceUuid: `00000000-0000-4000-8000-${String(invoiceId).padStart(12, '0')}`,
    type: 'Regular',
    status: 'Active',
    totalAmount: 4900,
    discountAmount: 0,
    currency: 'Rub',
    createdAt: `2026-11-${String(10 + (invoiceId % 10)).padStart(2, '0')}T09:00:00.000Z`,
    expireAt: null,
    user: { id: 5000 + invoiceId, email: `student${invoiceId}@example.com`, phone: null },
    products: [{ productId: 31, courseId: 310, totalPrice: 4900, discountAmount: 0 }],
    paymentStatus: 'Completed',
    ...overrides,
  };
}

let mock: MockSchoolApi;

async function start(options: MockSchoolApiOptions = {}): Promise<void> {
  mock = await createMockSchoolApi({
    apiKey: API_KEY,
    sellerId: SELLER_ID,
    schoolId: SCHOOL_ID,
    ...options,
  });
}

beforeEach(async () => {
  await start({ lists: { invoices: [1, 2, 3, 4, 5].map((id) => invoice(id)) } });
});

afterEach(async () => {
  await mock.close();
});

function api(options: Partial<SchoolApiOptions> = {}): SchoolApi {
  return createSchoolApi({
    baseUrl: mock.url,
    apiKey: API_KEY,
    sellerId: SELLER_ID,
    schoolId: SCHOOL_ID,
    ...options,
  });
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

/** The rejection of iterating `items` to the end, and what was yielded before it. */
async function failure<T>(items: AsyncIterable<T>): Promise<{ error: unknown; yielded: T[] }> {
  const yielded: T[] = [];
  try {
    for await (const item of items) yielded.push(item);
  } catch (error) {
    return { error, yielded };
  }
  throw new Error(`expected the listing to fail; it yielded ${yielded.length} items`);
}

/** The `skip` of each request the mock received. */
function skips(): (string | null)[] {
  return mock.requests.map((request) => new URL(request.path, mock.url).searchParams.get('skip'));
}

describe('paging', () => {
  it('reads every page until the last, asking for the next skip each time', async () => {
    const invoices = await collect(api().invoices({ take: 2 }));

    expect(invoices.map((item) => item.invoiceId)).toEqual([1, 2, 3, 4, 5]);
    expect(skips()).toEqual(['0', '2', '4']);
    expect(mock.requests.every((request) => request.method === 'GET')).toBe(true);
  });

  it('asks for 1000 items a page by default, the most the platform gives', async () => {
    await collect(api().invoices());

    expect(mock.requests).toHaveLength(1);
    expect(new URL(mock.requests[0]!.path, mock.url).searchParams.get('take')).toBe('1000');
  });

  it('sends nothing until the iteration starts, and no further page after a break', async () => {
    const listing = api().invoices({ take: 2 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(mock.requests).toHaveLength(0);

    for await (const item of listing) {
      if (item.invoiceId === 2) break;
    }

    expect(mock.requests).toHaveLength(1);
  });

  it('ends on a page that gives neither isLast nor count once it is short', async () => {
    mock.failNext(200, { success: true, code: 200, payload: { items: [invoice(9)] } });

    const invoices = await collect(api().invoices({ take: 2 }));

    expect(invoices.map((item) => item.invoiceId)).toEqual([9]);
    expect(mock.requests).toHaveLength(1);
  });

  it('reads on past a short page while count says more are left, then stops at count', async () => {
    const page = (items: MockInvoice[]) => ({
      success: true,
      code: 200,
      payload: { items, count: 3 },
    });
    mock.failNext(200, page([invoice(1)]));
    mock.failNext(200, page([invoice(2), invoice(3)]));

    const invoices = await collect(api().invoices({ take: 2 }));

    expect(invoices.map((item) => item.invoiceId)).toEqual([1, 2, 3]);
    expect(skips()).toEqual(['0', '1']);
  });

  it('yields an item once even when the list moved and a page repeats it', async () => {
    await mock.close();
    await start({ lists: { invoices: [invoice(1), invoice(2), invoice(1), invoice(3)] } });

    const invoices = await collect(api().invoices({ take: 2 }));

    expect(invoices.map((item) => item.invoiceId)).toEqual([1, 2, 3]);
  });

  it('lists each of the four operations at its own path', async () => {
    await mock.close();
    await start({
      lists: {
        productAccesses: [{ accessId: 71, active: true, user: { id: 5001 } }],
        certificates: [{ certificateId: 81, courseId: 310, issuedAt: '2026-11-12T10:00:00Z' }],
        users: [{ id: 5001, createdAt: '2026-11-01T08:00:00Z', email: 'a@example.com' }],
      },
    });
    const client = api();

    const accesses = await collect(client.productAccesses());
    const certificates = await collect(client.certificates());
    const users = await collect(client.users());

    expect(accesses.map((item) => [item.accessId, item.user.id, item.active])).toEqual([
      [71, 5001, true],
    ]);
    expect(certificates.map((item) => [item.certificateId, item.courseId])).toEqual([[81, 310]]);
    expect(users.map((item) => [item.id, item.email])).toEqual([[5001, 'a@example.com']]);
    expect(mock.requests.map((request) => request.path.split('?')[0])).toEqual([
      '/saas/v2/product-access/list/raw',
      '/saas/v2/certificate/list/raw',
      '/saas/v2/user/list',
    ]);
  });
});

describe('a window of dates, read without offsets', () => {
  /** `count` paid invoices issued a minute apart from 2026-11-10 09:00 on. */
  function minuteApart(count: number): MockInvoice[] {
    const start = Date.parse('2026-11-10T09:00:00.000Z');
    return Array.from({ length: count }, (_, n) =>
      invoice(100 + n, { createdAt: new Date(start + n * 60_000).toISOString() }),
    );
  }
  const window = { from: '2026-11-01T00:00:00.000Z', to: '2026-11-20T00:00:00.000Z' };
  const ranges = () =>
    mock.requests.map((request) => {
      const query = new URL(request.path, mock.url).searchParams;
      return {
        skip: query.get('skip'),
        from: query.get('createdAtDateRange[from]'),
        to: query.get('createdAtDateRange[to]'),
      };
    });

  beforeEach(async () => {
    await mock.close();
    await start({ lists: { invoices: minuteApart(25) } });
  });

  it('narrows a window that holds more than a page until each part fits one, every page at skip 0', async () => {
    const invoices = await collect(api().invoices({ paid: true, createdAt: window, take: 10 }));
    expect(invoices.map((item) => item.invoiceId).sort((a, b) => a - b)).toEqual(
      minuteApart(25).map((item) => item.invoiceId),
    );
    const asked = ranges();
    expect(asked.every(({ skip }) => skip === '0')).toBe(true);
    expect(asked[0]).toEqual({ skip: '0', ...window });
    // Each part lies within the window, and each is narrower than the one it was split from.
    for (const { from, to } of asked.slice(1)) {
      expect(from! >= window.from && to! <= window.to).toBe(true);
      expect(Date.parse(to!) - Date.parse(from!)).toBeLessThan(
        Date.parse(window.to) - Date.parse(window.from),
      );
    }
  });

  it('reads every other item when one leaves the list between two pages', async () => {
    // The platform drops an invoice whose latest payment is no longer completed while the
    // client reads: by offset, every later item moves back one and the one at the boundary is
    // never read. By date range, nothing else moves.
    let pages = 0;
    const dropAfterFirstPage: typeof fetch = async (input, init) => {
      const answer = await fetch(input, init);
      if (++pages === 2) mock.removeListItems('invoices', (item) => item['invoiceId'] === 101);
      return answer;
    };
    const listed = await collect(
      api({ fetch: dropAfterFirstPage }).invoices({ paid: true, createdAt: window, take: 10 }),
    );
    const ids = new Set(listed.map((item) => item.invoiceId));
    for (const { invoiceId } of minuteApart(25)) {
      if (invoiceId !== 101) expect(ids.has(invoiceId!), `invoice ${invoiceId}`).toBe(true);
    }
  });

  it('splits a full page again when the answer says no count, and still reads every item', async () => {
    const withoutCount: typeof fetch = async (input, init) => {
      const answer = await fetch(input, init);
      const body = (await answer.json()) as { payload?: Record<string, unknown> };
      if (body.payload) delete body.payload['count'];
      return new Response(JSON.stringify(body), { status: answer.status, headers: answer.headers });
    };
    const invoices = await collect(
      api({ fetch: withoutCount }).invoices({ paid: true, createdAt: window, take: 10 }),
    );
    expect(invoices).toHaveLength(25);
  });

  it('reads a part one millisecond wide that still holds more than a page by offset, every item once', async () => {
    await mock.close();
    const sameInstant = [1, 2, 3, 4, 5].map((id) =>
      invoice(id, { createdAt: '2026-11-10T09:00:00.000Z' }),
    );
    await start({ lists: { invoices: sameInstant } });
    const invoices = await collect(api().invoices({ paid: true, createdAt: window, take: 2 }));
    expect(invoices.map((item) => item.invoiceId).sort()).toEqual([1, 2, 3, 4, 5]);
  });
});

describe('filters', () => {
  it('narrows invoices to the paid ones of a window, as the platform filters them', async () => {
    await mock.close();
    await start({
      lists: {
        invoices: [
          invoice(1, { createdAt: '2026-11-01T09:00:00Z' }),
          invoice(2, { createdAt: '2026-11-05T09:00:00Z', paymentStatus: undefined }),
          invoice(3, { createdAt: '2026-11-06T09:00:00Z' }),
          invoice(4, { createdAt: '2026-11-20T09:00:00Z' }),
        ],
      },
    });

    const paid = await collect(
      api().invoices({
        paid: true,
        createdAt: { from: new Date('2026-11-02T00:00:00Z'), to: '2026-11-10T00:00:00Z' },
      }),
    );

    expect(paid.map((item) => item.invoiceId)).toEqual([3]);
    // The mock's own field, the latest payment's status, is not part of a listed invoice.
    expect(paid[0]).not.toHaveProperty('paymentStatus');
  });

  it('narrows by ids, and sends nothing for an empty id list, which matches nothing', async () => {
    const some = await collect(api().invoices({ userIds: [5002, 5004], invoiceIds: [2, 3, 4] }));
    const none = await collect(api().invoices({ userIds: [] }));

    expect(some.map((item) => item.invoiceId)).toEqual([2, 4]);
    expect(none).toEqual([]);
    expect(mock.requests).toHaveLength(1);
  });

  it('narrows accesses by active, and users by status', async () => {
    await mock.close();
    await start({
      lists: {
        productAccesses: [
          { accessId: 1, active: true, user: { id: 10 } },
          { accessId: 2, active: false, user: { id: 11 } },
        ],
        users: [
          { id: 10, createdAt: '2026-11-01T00:00:00Z', status: 'Active' },
          { id: 11, createdAt: '2026-11-01T00:00:00Z', status: 'Banned' },
        ],
      },
    });

    const inactive = await collect(api().productAccesses({ active: false }));
    const banned = await collect(api().users({ statuses: ['Banned'] }));

    expect(inactive.map((item) => item.accessId)).toEqual([2]);
    expect(banned.map((item) => item.id)).toEqual([11]);
  });
});

describe('429 Rate', () => {
  it("waits until the answer's data.retryAfter, then reads on", async () => {
    mock.rateLimitNext(1, 600);

    const invoices = await collect(api().invoices({ take: 2 }));

    expect(invoices).toHaveLength(5);
    // One 429, then the same page once its retryAfter had come (the mock answers 429 again to
    // any earlier request, so an early retry would show as a fifth request).
    expect(skips()).toEqual(['0', '0', '2', '4']);
    const [limited, served] = mock.requests;
    expect(served!.receivedAt - limited!.receivedAt).toBeGreaterThanOrEqual(600 - 30);
  });

  it('waits out more 429s than retries allows: each one says when to come back', async () => {
    mock.rateLimitNext(2, 200);

    const invoices = await collect(api({ retries: 0 }).invoices());

    expect(invoices).toHaveLength(5);
    expect(mock.requests).toHaveLength(3);
  });

  it('waits out a 429 in the middle of the listing, for the page it hit', async () => {
    const client = api();
    const listing = client.invoices({ take: 2 });
    const first = await listing.next();
    mock.rateLimitNext(1, 300);

    const rest = await collect(listing);

    expect(first.value).toMatchObject({ invoiceId: 1 });
    expect(rest.map((item) => item.invoiceId)).toEqual([2, 3, 4, 5]);
    expect(skips()).toEqual(['0', '2', '2', '4']);
  });

  it('throws the RateLimitError at once when the wait would pass maxRateLimitWaitMs', async () => {
    mock.rateLimitNext(1, 1_500);

    const { error } = await failure(api().invoices({ maxRateLimitWaitMs: 1_000 }));

    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ status: 429, code: 'Rate' });
    const retryAfter = (error as RateLimitError).retryAfter!.getTime();
    expect(retryAfter).toBeGreaterThanOrEqual(mock.requests[0]!.receivedAt + 1_400);
    expect(mock.requests).toHaveLength(1);
  });

  it("stops at an abort during the wait, with the signal's reason", async () => {
    mock.rateLimitNext(1, 10_000);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();

    const { error } = await failure(api().invoices({ signal: controller.signal }));

    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe('AbortError');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(mock.requests).toHaveLength(1);
  });
});

describe('abort', () => {
  it('asks for no further page once the signal is aborted', async () => {
    const controller = new AbortController();
    const reason = new Error('shutting down');

    const { error, yielded } = await failure(
      (async function* () {
        for await (const item of api().invoices({ take: 2, signal: controller.signal })) {
          yield item;
          if (item.invoiceId === 2) controller.abort(reason);
        }
      })(),
    );

    expect(error).toBe(reason);
    expect(yielded.map((item) => item.invoiceId)).toEqual([1, 2]);
    expect(mock.requests).toHaveLength(1);
  });

  it('sends nothing when the signal is aborted already', async () => {
    const { error } = await failure(api().invoices({ signal: AbortSignal.abort() }));

    expect((error as DOMException).name).toBe('AbortError');
    expect(mock.requests).toHaveLength(0);
  });
});

describe("the platform's errors, as the client's typed errors", () => {
  it('AuthenticationError for a 401 Unauthorized, without a retry and without the key', async () => {
    const { error } = await failure(api({ apiKey: 'sk_live_wrong_key' }).invoices());

    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error).toMatchObject({ status: 401, code: 'Unauthorized' });
    expect(String((error as Error).message)).not.toContain('sk_live_wrong_key');
    expect(mock.requests).toHaveLength(1);
  });

  it('PermissionError naming the permission the list needs (SellerSales for invoices)', async () => {
    await mock.close();
    await start({ permissions: ['SchoolManageUsers'] });

    const { error } = await failure(api().invoices());

    expect(error).toBeInstanceOf(PermissionError);
    expect(error).toMatchObject({ status: 401, code: 'Forbidden', permission: 'SellerSales' });
    expect((error as Error).message).toContain(String(SELLER_ID));
  });

  it("PermissionError for a 403: the key's user is not an API client", async () => {
    await mock.close();
    await start({ apiClient: false });

    const { error } = await failure(api().users());

    expect(error).toBeInstanceOf(PermissionError);
    expect(error).toMatchObject({ status: 403, permission: undefined });
  });

  it('retries a 500 and reads on', async () => {
    mock.failNext(500);

    const invoices = await collect(api().invoices({ take: 2 }));

    expect(invoices).toHaveLength(5);
    expect(skips()).toEqual(['0', '0', '2', '4']);
  });

  it('throws ServerError once the retries are spent, after the items of earlier pages', async () => {
    const listing = api({ retries: 1 }).invoices({ take: 2 });
    const first = await listing.next();
    mock.failNext(500);
    mock.failNext(503);

    const { error, yielded } = await failure(listing);

    expect(first.value).toMatchObject({ invoiceId: 1 });
    expect(yielded.map((item) => item.invoiceId)).toEqual([2]);
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ status: 503 });
    expect(skips()).toEqual(['0', '2', '2']);
  });
});

describe('items', () => {
  it('pass with only what reconciliation needs, optional fields absent or null, extra fields kept', async () => {
    await mock.close();
    await start({
      lists: {
        invoices: [
          { invoiceId: 1, createdAt: '2026-11-01T09:00:00Z', user: { id: 7 } },
          {
            invoiceId: 2,
            invoiceUuid: null,
            type: null,
            status: null,
            totalAmount: null,
            discountAmount: null,
            currency: null,
            createdAt: '2026-11-01T09:00:00Z',
            expireAt: null,
            user: { id: 8, tgId: null, login: null, email: null, phone: null, fullName: null },
            products: null,
            addedLater: { by: 'the platform' },
          },
        ],
        productAccesses: [
          { accessId: 3, active: false, productId: null, courseId: null, user: { id: 9 } },
        ],
        certificates: [
          { certificateId: 4, courseId: 310, issuedAt: '2026-11-01T09:00:00Z', user: null },
        ],
        users: [
          {
            id: 10,
            createdAt: '2026-11-01T09:00:00Z',
            email: null,
            phone: null,
            profile: null,
            status: 'SomeStatusAddedLater',
          },
        ],
      },
    });
    const client = api();

    const invoices = await collect(client.invoices());
    const accesses = await collect(client.productAccesses());
    const certificates = await collect(client.certificates());
    const users = await collect(client.users());

    expect(invoices.map((item) => [item.invoiceId, item.user.id])).toEqual([
      [1, 7],
      [2, 8],
    ]);
    expect((invoices[1] as Record<string, unknown>)['addedLater']).toEqual({ by: 'the platform' });
    expect(accesses).toEqual([
      { accessId: 3, active: false, productId: null, courseId: null, user: { id: 9 } },
    ]);
    expect(certificates[0]?.user).toBeNull();
    expect(users[0]).toMatchObject({ id: 10, profile: null, status: 'SomeStatusAddedLater' });
  });

  it('reports items that fail their schema by id (or position) once every valid one is yielded', async () => {
    await mock.close();
    await start({
      lists: {
        invoices: [
          invoice(1),
          invoice(2, { invoiceId: undefined }),
          invoice(3),
          invoice(4, { user: { email: 'private@example.com' } }),
          invoice(5, { createdAt: 'not a date' }),
        ],
      },
    });

    const { error, yielded } = await failure(api().invoices({ take: 2 }));

    expect(yielded.map((item) => item.invoiceId)).toEqual([1, 3]);
    expect(error).toBeInstanceOf(InvalidListItemsError);
    const invalid = error as InvalidListItemsError;
    expect([invalid.status, invalid.code]).toEqual([200, 'invalid_items']);
    expect(invalid.items).toEqual([
      {
        kind: 'invoice',
        id: undefined,
        position: 1,
        issues: [expect.stringMatching(/^invoiceId: /)],
      },
      { kind: 'invoice', id: 4, position: 3, issues: [expect.stringMatching(/^user\.id: /)] },
      { kind: 'invoice', id: 5, position: 4, issues: ['createdAt: must be a date'] },
    ]);
    expect(invalid.message).toContain('invoice at position 1');
    expect(invalid.message).toContain('invoice 4');
    // Paths and Zod's wording only: no value of the item reaches the error.
    expect(JSON.stringify({ ...invalid, message: invalid.message })).not.toMatch(
      /private@example\.com|not a date/,
    );
  });

  it('hands each invalid item to onInvalidItem and then ends without throwing', async () => {
    await mock.close();
    await start({
      lists: {
        productAccesses: [
          { accessId: 1, active: true, user: { id: 10 } },
          { active: true, user: { id: 11 } },
          // Wrong types on purpose: the mock serves what it is given.
          { accessId: 'a-3', active: 'yes', user: { id: 12 } } as Record<string, unknown>,
        ],
      },
    });
    const reported: InvalidListItem[] = [];

    const accesses = await collect(
      api().productAccesses({ onInvalidItem: (item) => reported.push(item) }),
    );

    expect(accesses.map((item) => item.accessId)).toEqual([1]);
    expect(reported.map(({ kind, id, position }) => ({ kind, id, position }))).toEqual([
      { kind: 'access', id: undefined, position: 1 },
      { kind: 'access', id: 'a-3', position: 2 },
    ]);
    expect(reported[1]?.issues).toEqual([
      expect.stringMatching(/^accessId: /),
      expect.stringMatching(/^active: /),
    ]);
  });

  it('refuses a page that is not a page, with InvalidResponseError', async () => {
    mock.failNext(200, { success: true, code: 200, payload: { list: [] } });

    const { error } = await failure(api().invoices());

    expect(error).toMatchObject({ name: 'InvalidResponseError', status: 200 });
    expect((error as { messages: string[] }).messages).toEqual([
      expect.stringMatching(/^payload\.items: /),
    ]);
  });
});

describe('options are checked at the call, before anything is sent', () => {
  const client = () => api();
  it.each([
    ['take 0', () => client().invoices({ take: 0 }), 'take must be an integer from 1 to 1000'],
    ['take 1001', () => client().users({ take: 1001 }), 'take must be an integer from 1 to 1000'],
    [
      'paid: false',
      () => client().invoices({ paid: false as unknown as true }),
      'paid must be true or left out: the platform lists no unpaid invoices',
    ],
    [
      'a user id of 0',
      () => client().certificates({ userIds: [0] }),
      'userIds must be an array of positive integers',
    ],
    [
      'an unreadable date',
      () => client().invoices({ createdAt: { from: 'last week' } }),
      'createdAt.from must be a valid Date or date string',
    ],
    [
      'a window that ends before it starts',
      () => client().users({ createdAt: { from: '2026-11-02', to: '2026-11-01' } }),
      'createdAt.from must not be after createdAt.to',
    ],
    [
      'active that is not a boolean',
      () => client().productAccesses({ active: 'yes' as unknown as boolean }),
      'active must be a boolean',
    ],
    [
      'an empty status',
      () => client().users({ statuses: [''] }),
      'statuses must be an array of non-empty strings',
    ],
    [
      'a negative maxRateLimitWaitMs',
      () => client().invoices({ maxRateLimitWaitMs: -1 }),
      'maxRateLimitWaitMs must be a non-negative number of milliseconds',
    ],
  ])('throws a TypeError for %s', (_case, call, message) => {
    expect(call).toThrow(new TypeError(message));
    expect(mock.requests).toHaveLength(0);
  });
});

describe('the request', () => {
  it('is a GET with the authentication headers and no body', async () => {
    await collect(api().invoices());

    const [request] = mock.requests;
    expect(request?.method).toBe('GET');
    expect(request?.path.split('?')[0]).toBe(INVOICES_PATH);
    expect(request?.headers).toMatchObject({
      authorization: `Bearer ${API_KEY}`,
      'seller-id': String(SELLER_ID),
      'school-id': String(SCHOOL_ID),
    });
    expect(request?.headers).not.toHaveProperty('content-type');
    expect(request?.body).toBe('');
  });
});
