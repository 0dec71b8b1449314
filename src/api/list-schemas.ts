/**
 * The items of the platform's list operations (docs/platform.md#list-operations), as tolerant
 * Zod schemas.
 *
 * Required is only what reconciliation cannot do without: the item's own id, its user's id
 * (a certificate's user is optional on the platform, so its `user` is too), and the date or state
 * the platform lists it by: an invoice's and a user's `createdAt`, a certificate's `issuedAt`, an
 * access's `active`. Required dates must be readable by `Date.parse`. Every other field is typed
 * when present and may be absent or null, so an item is never refused for a field no reconciler
 * reads; a present field of the wrong type is still refused. Every object is loose: fields the
 * platform adds later pass through untouched (the types name the known fields only). Enum-like
 * strings are open unions: the values named today autocomplete, any other string passes.
 * @module
 */

import { z } from 'zod';
import { openUnion, userSchema, type KnownCurrency } from '../platform/events/entities.js';
import type { KnownOutput } from '../platform/events/known-output.js';

const entityId = z.int();
const maybeId = entityId.nullish();
const maybeText = z.string().nullish();
const maybeAmount = z.number().nullish();
/** Dates are kept as the platform sent them; a required one must at least be readable. */
const date = z.string().refine((value) => !Number.isNaN(Date.parse(value)), 'must be a date');
const maybeDate = z.string().nullish();

/**
 * The user of an invoice or an access, as the lists embed it: `{ id, extId?, tgId?, login?,
 * email?, phone?, fullName? }`. Only the `id` is required.
 */
export const listedUserSchema = z.looseObject({
  id: entityId,
  extId: z.union([z.string(), z.number()]).nullish(),
  tgId: maybeAmount,
  login: maybeText,
  email: maybeText,
  phone: maybeText,
  fullName: maybeText,
});
/** The user of an invoice or an access, as the lists embed it. */
export type ListedUser = KnownOutput<typeof listedUserSchema>;

/** One product of a listed invoice. */
export const invoiceProductSchema = z.looseObject({
  productId: maybeId,
  courseId: maybeId,
  totalPrice: maybeAmount,
  discountAmount: maybeAmount,
});
/** One product of a listed invoice. */
export type InvoiceProduct = KnownOutput<typeof invoiceProductSchema>;

/**
 * An item of `api.invoices()`. `invoiceId` is the `id` of a PaymentCompleted's
 * `payment.invoice`, `invoiceUuid` its `uuid`. `status` is the invoice's (Active, Canceled), not
 * its payment's; `createdAt` is when it was issued, not when it was paid.
 *
 * @example
 * ```ts
 * const invoice = invoiceListItemSchema.parse(item);
 * console.log(invoice.invoiceId, invoice.user.id, invoice.products?.length);
 * ```
 */
export const invoiceListItemSchema = z.looseObject({
  invoiceId: entityId,
  invoiceUuid: maybeText,
  type: openUnion<
    'Regular' | 'InstallmentPay' | 'InstallmentInit' | 'SubscriptionPay' | 'SubscriptionInit'
  >().nullish(),
  status: openUnion<'Active' | 'Canceled'>().nullish(),
  totalAmount: maybeAmount,
  discountAmount: maybeAmount,
  currency: openUnion<KnownCurrency>().nullish(),
  createdAt: date,
  expireAt: maybeDate,
  user: listedUserSchema,
  products: z.array(invoiceProductSchema).nullish(),
});
/** An item of `api.invoices()`. */
export type InvoiceListItem = KnownOutput<typeof invoiceListItemSchema>;

/**
 * An item of `api.productAccesses()`. `accessId` is the `id` of an enrollment event's `access`.
 *
 * @example
 * ```ts
 * const access = productAccessListItemSchema.parse(item);
 * if (access.active) console.log(access.accessId, access.user.id, access.productId);
 * ```
 */
export const productAccessListItemSchema = z.looseObject({
  accessId: entityId,
  productId: maybeId,
  courseId: maybeId,
  active: z.boolean(),
  createdAt: maybeDate,
  expireAt: maybeDate,
  user: listedUserSchema,
});
/** An item of `api.productAccesses()`. */
export type ProductAccessListItem = KnownOutput<typeof productAccessListItemSchema>;

/**
 * An item of `api.certificates()`. `certificateId` is the `id` of a CertificateIssued's
 * `certificate`; `link` opens without authorization. The platform may leave `user` out.
 *
 * @example
 * ```ts
 * const certificate = certificateListItemSchema.parse(item);
 * console.log(certificate.certificateId, certificate.courseId, certificate.user?.id);
 * ```
 */
export const certificateListItemSchema = z.looseObject({
  certificateId: entityId,
  uuid: maybeText,
  link: maybeText,
  courseId: entityId,
  courseName: maybeText,
  issuedAt: date,
  expireAt: maybeDate,
  user: userSchema.nullish(),
});
/** An item of `api.certificates()`. */
export type CertificateListItem = KnownOutput<typeof certificateListItemSchema>;

/**
 * An item of `api.users()`: the user entity of the events (with its `profile` when it has one),
 * whose `createdAt` is required here.
 *
 * @example
 * ```ts
 * const user = userListItemSchema.parse(item);
 * console.log(user.id, user.createdAt, user.profile?.fullName);
 * ```
 */
export const userListItemSchema = userSchema.extend({ createdAt: date });
/** An item of `api.users()`. */
export type UserListItem = KnownOutput<typeof userListItemSchema>;

/**
 * A successful answer of a list: `{ success, code, payload: { items, count?, isLast?, … } }`. The
 * items are read one by one afterwards, so one bad item does not make the page unreadable.
 */
export const listPageResponseSchema = z.object({
  payload: z.looseObject({
    items: z.array(z.unknown()),
    count: z.number().nullish(),
    isLast: z.boolean().nullish(),
  }),
});
/** The page of a list answer. */
export type ListPage = z.output<typeof listPageResponseSchema>['payload'];
