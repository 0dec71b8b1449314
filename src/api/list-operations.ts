/**
 * The platform's four list operations (docs/platform.md#list-operations): where each one lives,
 * the schema of its items, and how the caller's options become its filters.
 * @module
 */

import type { z } from 'zod';
import type { OpenUnion } from '../platform/events/entities.js';
import type { InvalidListItem } from './errors.js';
import {
  certificateListItemSchema,
  invoiceListItemSchema,
  productAccessListItemSchema,
  userListItemSchema,
} from './list-schemas.js';
import {
  dateRange,
  flag,
  idList,
  textList,
  type DateRange,
  type QueryFilters,
} from './list-query.js';

/** Which list an item comes from; the names reconciliation gives the four entities. */
export type ListKind = 'invoice' | 'access' | 'certificate' | 'user';

/** What every list call takes besides its filters. */
export interface ListOptions {
  /** Items per page, 1 to 1000. Default 1000: the fewest calls against the key's rate limit. */
  take?: number;
  /** Aborts the listing, a wait included; the iteration then throws the signal's reason. */
  signal?: AbortSignal;
  /**
   * How long, in all, one page may wait out the platform's `429 Rate` answers (each waits until
   * the answer's `data.retryAfter`). When the next wait would pass it, the iteration throws the
   * `RateLimitError`, whose `retryAfter` says when to try again. Default 10 minutes.
   */
  maxRateLimitWaitMs?: number;
  /**
   * Called with each item that does not match its schema; the listing goes on. Without it, such
   * items are gathered and thrown as one `InvalidListItemsError` once every page has been read.
   */
  onInvalidItem?: (item: InvalidListItem) => void;
}

/** The invoice types the platform names today. */
export type InvoiceType = OpenUnion<
  'Regular' | 'InstallmentPay' | 'InstallmentInit' | 'SubscriptionPay' | 'SubscriptionInit'
>;

/** Options of `api.invoices()`. */
export interface InvoiceListOptions extends ListOptions {
  /**
   * `true`: only paid invoices, those whose latest payment is completed. Left out: every invoice,
   * paid or not (the platform has no filter for unpaid ones).
   */
  paid?: true;
  /** When the invoice was issued (not paid: reach back further than the payments you look for). */
  createdAt?: DateRange;
  userIds?: readonly number[];
  productIds?: readonly number[];
  types?: readonly InvoiceType[];
  invoiceIds?: readonly number[];
}

/** Options of `api.productAccesses()`. */
export interface ProductAccessListOptions extends ListOptions {
  /** When the access was created. */
  createdAt?: DateRange;
  /** `true`: active accesses only; `false`: inactive ones only. */
  active?: boolean;
  userIds?: readonly number[];
  courseIds?: readonly number[];
  accessIds?: readonly number[];
}

/** Options of `api.certificates()`. */
export interface CertificateListOptions extends ListOptions {
  /** When the certificate was issued. */
  issuedAt?: DateRange;
  courseIds?: readonly number[];
  userIds?: readonly number[];
  certificateIds?: readonly number[];
}

/** The user statuses the platform names today. */
export type UserStatus = OpenUnion<
  'Active' | 'OnLeave' | 'Banned' | 'Blocked' | 'Terminated' | 'Deleted'
>;

/** Options of `api.users()`. */
export interface UserListOptions extends ListOptions {
  /** When the user was created. */
  createdAt?: DateRange;
  userIds?: readonly number[];
  statuses?: readonly UserStatus[];
}

/** One list operation: its kind, its path, its items' id field and schema, its filters. */
export interface ListOperation<S extends z.ZodType, O extends ListOptions> {
  readonly kind: ListKind;
  /** Under the API root. */
  readonly path: string;
  /** The field that holds an item's id. */
  readonly idField: string;
  /**
   * The filter of its date range (`createdAtDateRange`, `issuedAtDateRange`): a listing with both
   * ends of it is read by splitting the range, never by offsets over a list that may change.
   */
  readonly rangeFilter: string;
  readonly schema: S;
  /** The caller's options under the platform's parameter names; a TypeError for a bad one. */
  readonly filters: (options: O) => QueryFilters;
}

/** `GET /saas/v2/invoice/list/raw`, permission SellerSales. */
export const INVOICES: ListOperation<typeof invoiceListItemSchema, InvoiceListOptions> = {
  kind: 'invoice',
  path: '/saas/v2/invoice/list/raw',
  idField: 'invoiceId',
  rangeFilter: 'createdAtDateRange',
  schema: invoiceListItemSchema,
  filters: (options) => {
    if (options.paid !== undefined && options.paid !== true) {
      throw new TypeError('paid must be true or left out: the platform lists no unpaid invoices');
    }
    return {
      createdAtDateRange: dateRange(options.createdAt, 'createdAt'),
      // A paid invoice: its latest payment is completed.
      payment: options.paid ? { actualStatuses: ['Completed'] } : undefined,
      userIds: idList(options.userIds, 'userIds'),
      productIds: idList(options.productIds, 'productIds'),
      types: textList(options.types, 'types'),
      invoiceIds: idList(options.invoiceIds, 'invoiceIds'),
    };
  },
};

/** `GET /saas/v2/product-access/list/raw`, permission SchoolManageUsers or CourseStudentManage. */
export const PRODUCT_ACCESSES: ListOperation<
  typeof productAccessListItemSchema,
  ProductAccessListOptions
> = {
  kind: 'access',
  path: '/saas/v2/product-access/list/raw',
  idField: 'accessId',
  rangeFilter: 'createdAtDateRange',
  schema: productAccessListItemSchema,
  filters: (options) => ({
    createdAtDateRange: dateRange(options.createdAt, 'createdAt'),
    active: flag(options.active, 'active'),
    userIds: idList(options.userIds, 'userIds'),
    courseIds: idList(options.courseIds, 'courseIds'),
    accessIds: idList(options.accessIds, 'accessIds'),
  }),
};

/** `GET /saas/v2/certificate/list/raw`, permission CourseManage or CourseStudentManage. */
export const CERTIFICATES: ListOperation<typeof certificateListItemSchema, CertificateListOptions> =
  {
    kind: 'certificate',
    path: '/saas/v2/certificate/list/raw',
    idField: 'certificateId',
    rangeFilter: 'issuedAtDateRange',
    schema: certificateListItemSchema,
    filters: (options) => ({
      issuedAtDateRange: dateRange(options.issuedAt, 'issuedAt'),
      courseIds: idList(options.courseIds, 'courseIds'),
      userIds: idList(options.userIds, 'userIds'),
      certificateIds: idList(options.certificateIds, 'certificateIds'),
    }),
  };

/** `GET /saas/v2/user/list`, permission SchoolManageUsers. */
export const USERS: ListOperation<typeof userListItemSchema, UserListOptions> = {
  kind: 'user',
  path: '/saas/v2/user/list',
  idField: 'id',
  rangeFilter: 'createdAtDateRange',
  schema: userListItemSchema,
  filters: (options) => ({
    createdAtDateRange: dateRange(options.createdAt, 'createdAt'),
    userIds: idList(options.userIds, 'userIds'),
    statuses: textList(options.statuses, 'statuses'),
  }),
};
