/**
 * The four list operations of the mock platform API (docs/platform.md#list-operations): the items
 * it holds, the filters and paging it applies, and the parameters it refuses. Its reading of the
 * platform's parameter names is its own, apart from the client's, so a test of one checks the
 * other.
 * @module
 */

import type {
  CertificateListItem,
  InvoiceListItem,
  ProductAccessListItem,
  UserListItem,
} from '../api/list-schemas.js';
import { okAnswer, validation, type MockAnswer } from './mock-answers.js';

/**
 * An item the mock lists: any object, served as given (so a test can leave a field out or give
 * it null), typed with the fields the client knows for autocompletion.
 */
export type MockListItem<Item> = Partial<Item> & Readonly<Record<string, unknown>>;

/**
 * An invoice the mock lists. `paymentStatus` is the status of its latest payment (`Completed`
 * for a paid invoice): the mock filters `payment[actualStatuses]` by it and leaves it out of the
 * item it serves. Without it the invoice has no payment.
 */
export type MockInvoice = MockListItem<InvoiceListItem> & { readonly paymentStatus?: string };

/** What the mock's lists hold, oldest first; each list is served in this order. */
export interface MockListItems {
  invoices?: readonly MockInvoice[];
  productAccesses?: readonly MockListItem<ProductAccessListItem>[];
  certificates?: readonly MockListItem<CertificateListItem>[];
  users?: readonly MockListItem<UserListItem>[];
}

type Item = Readonly<Record<string, unknown>>;
type ListName = keyof MockListItems;

/** How a query parameter narrows a list: a test per item, or the reason the value is refused. */
type Filter = (values: readonly string[], name: string) => ((item: Item) => boolean) | string;

interface ListSpec {
  readonly name: ListName;
  /** Any one of them lets the key read the list. */
  readonly permissions: readonly string[];
  readonly filters: Readonly<Record<string, Filter>>;
}

/** The paths of the lists, with their permissions and the filters they take, as the platform names them. */
const LISTS: Readonly<Record<string, ListSpec>> = {
  '/saas/v2/invoice/list/raw': {
    name: 'invoices',
    permissions: ['SellerSales'],
    filters: {
      ...dateRange('createdAtDateRange', (item) => item['createdAt']),
      'payment[actualStatuses]': texts((item) => [item['paymentStatus']]),
      userIds: ids((item) => [field(item['user'], 'id')]),
      productIds: ids((item) => arrayOf(item['products']).map((line) => field(line, 'productId'))),
      types: texts((item) => [item['type']]),
      invoiceIds: ids((item) => [item['invoiceId']]),
    },
  },
  '/saas/v2/product-access/list/raw': {
    name: 'productAccesses',
    permissions: ['SchoolManageUsers', 'CourseStudentManage'],
    filters: {
      ...dateRange('createdAtDateRange', (item) => item['createdAt']),
      active: boolean((item) => item['active']),
      userIds: ids((item) => [field(item['user'], 'id')]),
      courseIds: ids((item) => [item['courseId']]),
      accessIds: ids((item) => [item['accessId']]),
    },
  },
  '/saas/v2/certificate/list/raw': {
    name: 'certificates',
    permissions: ['CourseManage', 'CourseStudentManage'],
    filters: {
      ...dateRange('issuedAtDateRange', (item) => item['issuedAt']),
      courseIds: ids((item) => [item['courseId']]),
      userIds: ids((item) => [field(item['user'], 'id') ?? item['userId']]),
      certificateIds: ids((item) => [item['certificateId']]),
    },
  },
  '/saas/v2/user/list': {
    name: 'users',
    permissions: ['SchoolManageUsers'],
    filters: {
      ...dateRange('createdAtDateRange', (item) => item['createdAt']),
      userIds: ids((item) => [item['id']]),
      statuses: texts((item) => [item['status']]),
    },
  },
};

/** The permissions a list needs (any one), or undefined when `path` is not a list. */
export function listPermissions(path: string): readonly string[] | undefined {
  return LISTS[path]?.permissions;
}

/** The items of the mock's four lists, and how it answers a request for one. */
export class MockLists {
  #items: Record<ListName, Item[]> = {
    invoices: [],
    productAccesses: [],
    certificates: [],
    users: [],
  };

  constructor(items: MockListItems = {}) {
    this.add(items);
  }

  /** Appends items to the lists (copies: a later change of the caller's objects is not seen). */
  add(items: MockListItems): void {
    for (const name of Object.keys(this.#items) as ListName[]) {
      for (const item of items[name] ?? []) this.#items[name].push(structuredClone(item));
    }
  }

  /**
   * Takes out of the list `name` every item `match` is true of (as the platform drops an invoice
   * whose latest payment is no longer completed); resolves to how many went.
   */
  remove(name: ListName, match: (item: Readonly<Record<string, unknown>>) => boolean): number {
    const before = this.#items[name].length;
    this.#items[name] = this.#items[name].filter((item) => !match(item));
    return before - this.#items[name].length;
  }

  /** The answer to a GET of the list at `path` (one {@link listPermissions} knows) with `query`. */
  serve(path: string, query: URLSearchParams): MockAnswer {
    const spec = LISTS[path];
    if (spec === undefined) return validation([`no list at ${path}`]);
    const paging = readPaging(query);
    if (typeof paging === 'string') return validation([paging]);
    const tests: ((item: Item) => boolean)[] = [];
    for (const name of new Set(query.keys())) {
      if (name === 'take' || name === 'skip' || name === 'page') continue;
      const filter = spec.filters[name];
      if (filter === undefined) return validation([`property ${name} should not exist`]);
      const test = filter(query.getAll(name), name);
      if (typeof test === 'string') return validation([test]);
      tests.push(test);
    }
    const matching = this.#items[spec.name].filter((item) => tests.every((test) => test(item)));
    return okAnswer(page(matching, paging));
  }
}

interface Paging {
  readonly take: number;
  readonly offset: number;
}

/** `take` (1–1000, default 100) and `skip` (from 0) or `page` (from 1); `skip` wins. */
function readPaging(query: URLSearchParams): Paging | string {
  const take = integer(query.get('take'), 100);
  if (take === undefined || take < 1 || take > 1000)
    return 'take must be an integer from 1 to 1000';
  const skip = integer(query.get('skip'), undefined);
  const pageNumber = integer(query.get('page'), 1);
  if (query.has('skip') && (skip === undefined || skip < 0)) return 'skip must not be less than 0';
  if (pageNumber === undefined || pageNumber < 1) return 'page must not be less than 1';
  return { take, offset: skip ?? (pageNumber - 1) * take };
}

/** The platform's page: `{ items, page, count, pages, isFirst, isLast, next, prev }`. */
function page(items: readonly Item[], { take, offset }: Paging): Record<string, unknown> {
  const count = items.length;
  const number = Math.floor(offset / take) + 1;
  const isLast = offset + take >= count;
  return {
    items: items.slice(offset, offset + take).map(served),
    page: number,
    count,
    pages: Math.ceil(count / take),
    isFirst: offset === 0,
    isLast,
    next: isLast ? null : { skip: offset + take, take, page: number + 1 },
    prev: offset === 0 ? null : { skip: Math.max(0, offset - take), take, page: number - 1 },
  };
}

/** The item as the platform lists it: without the mock's own `paymentStatus`. */
function served(item: Item): Item {
  if (!('paymentStatus' in item)) return item;
  const { paymentStatus: _mockOnly, ...listed } = item;
  return listed;
}

function ids(get: (item: Item) => readonly unknown[]): Filter {
  return (values, name) => {
    if (!values.every((value) => /^\d+$/.test(value))) {
      return `each value in ${name} must be an integer number`;
    }
    const wanted = new Set(values.map(Number));
    return (item) => get(item).some((id) => typeof id === 'number' && wanted.has(id));
  };
}

function texts(get: (item: Item) => readonly unknown[]): Filter {
  return (values) => {
    const wanted = new Set(values);
    return (item) => get(item).some((value) => typeof value === 'string' && wanted.has(value));
  };
}

function boolean(get: (item: Item) => unknown): Filter {
  return (values, name) => {
    const [value] = values;
    if (values.length !== 1 || (value !== 'true' && value !== 'false')) {
      return `${name} must be a boolean value`;
    }
    return (item) => get(item) === (value === 'true');
  };
}

/** `<name>[from]` and `<name>[to]`: the item's date within the range, both ends included. */
function dateRange(name: string, get: (item: Item) => unknown): Record<string, Filter> {
  const bound =
    (keep: (time: number, limit: number) => boolean): Filter =>
    (values, parameter) => {
      const limit = values.length === 1 ? Date.parse(values[0] ?? '') : NaN;
      if (Number.isNaN(limit)) return `${parameter} must be a valid ISO 8601 date string`;
      return (item) => {
        const value = get(item);
        const time = typeof value === 'string' ? Date.parse(value) : NaN;
        return !Number.isNaN(time) && keep(time, limit);
      };
    };
  return {
    [`${name}[from]`]: bound((time, limit) => time >= limit),
    [`${name}[to]`]: bound((time, limit) => time <= limit),
  };
}

function integer(text: string | null, absent: number | undefined): number | undefined {
  if (text === null) return absent;
  return /^\d+$/.test(text) ? Number(text) : undefined;
}

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null
    ? (value as Record<string, unknown>)[name]
    : undefined;
}

function arrayOf(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}
