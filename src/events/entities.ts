/**
 * Zod schemas of the entities inside webhook payloads (PLATFORM-INTERFACE.md 2.4 and 2.5).
 *
 * Every object is loose: fields the platform adds later pass through untouched. Every field the
 * interface lists is required (present); fields it marks `(null)` may be null. Types the interface
 * does not state get the loosest type that still rejects a clearly wrong shape. Timestamps and
 * UUIDs are plain strings on purpose: the interface promises no format beyond "ISO 8601", a
 * rejected event is lost to the seller after five attempts, and format checks cost parse time.
 * @module
 */

import { z } from 'zod';

// Building blocks, kept private: the public surface is the entity schemas below.

/** Entity ids are integers (interface 2.1 and the `<USER_ID>`-style placeholders). */
const entityId = z.number().int();
/** ISO 8601 strings, deliberately unchecked (see the module comment). */
const timestamp = z.string();
/** Interface 2.1 types `archivedAt` as "string or null": an unarchived entity carries null. */
const archivedAt = z.string().nullable();
/** An object whose keys the interface does not list. */
const record = z.record(z.string(), z.unknown());
/** An array whose items the interface does not describe. */
const list = z.array(z.unknown());

/** The four timestamps every stored entity carries. */
const stored = {
  id: entityId,
  createdAt: timestamp,
  updatedAt: timestamp,
  archivedAt,
};

/**
 * An id whose type the interface does not state (`inviteLinkId`, `variantId`, `lessonId`):
 * an integer or a string.
 */
export const looseIdSchema = z.union([z.number().int(), z.string()]);
/** An id that may be an integer or a string. */
export type LooseId = z.infer<typeof looseIdSchema>;

/**
 * UTM tags (interface 2.4). Only the keys that were passed are present, so every key is optional
 * and the object may be empty.
 */
export const utmParamsSchema = z.looseObject({
  utm_source: z.string().optional(),
  utm_medium: z.string().optional(),
  utm_campaign: z.string().optional(),
  utm_term: z.string().optional(),
  utm_content: z.string().optional(),
  gclid: z.string().optional(),
  fbclid: z.string().optional(),
  yclid: z.string().optional(),
  referrer: z.string().optional(),
  aff_id: z.string().optional(),
  sub_id: z.string().optional(),
  track_id: z.string().optional(),
});
/** UTM tags of a sign-up, an enrollment or an invoice. */
export type UtmParams = z.infer<typeof utmParamsSchema>;

/**
 * The `states` object of an event (interface 6, rule 2): the sign-up and enrollment UTM tags.
 * Each may be absent.
 */
export const statesSchema = z.looseObject({
  utmSignupParams: utmParamsSchema.optional(),
  utmEnrollParams: utmParamsSchema.optional(),
});
/** The `states` object of an event. */
export type States = z.infer<typeof statesSchema>;

/** A profile's avatar (`profile.avatar`): image URLs in three sizes. */
export const avatarSchema = z.looseObject({
  // Not one of the entities of 2.5, and its id type is not stated.
  id: looseIdSchema,
  small: z.string(),
  medium: z.string(),
  maximum: z.string(),
});
/** A profile's avatar. */
export type Avatar = z.infer<typeof avatarSchema>;

/** The titles shown next to a profile (`profile.titleState`); every field may be null. */
export const titleStateSchema = z.looseObject({
  manualTitle: z.string().nullable(),
  manualEmojiTitle: z.string().nullable(),
  manualNextTitle: z.string().nullable(),
  manualNextEmojiTitle: z.string().nullable(),
  manualExpiredAt: timestamp.nullable(),
  locationTitle: z.string().nullable(),
  locationEmojiTitle: z.string().nullable(),
  achievementTitle: z.string().nullable(),
  achievementEmojiTitle: z.string().nullable(),
});
/** The titles shown next to a profile. */
export type TitleState = z.infer<typeof titleStateSchema>;

/** A user's profile (`user.profile` in 2.5). */
export const profileSchema = z.looseObject({
  ...stored,
  userId: entityId,
  official: z.boolean(),
  firstName: z.string(),
  lastName: z.string(),
  fullName: z.string(),
  fullNameShort: z.string(),
  bdate: z.string().nullable(),
  // Values not shown by the interface.
  sex: z.unknown(),
  role: z.unknown(),
  country: z.string().nullable(),
  city: z.string().nullable(),
  status: z.string().nullable(),
  title: z.string().nullable(),
  emojiTitle: z.string().nullable(),
  avatar: avatarSchema,
  titleState: titleStateSchema,
});
/** A user's profile. */
export type Profile = z.infer<typeof profileSchema>;

/** The school a user belongs to (`user.school` in 2.5). */
export const schoolSchema = z.looseObject({
  ...stored,
  segment: z.string(),
  baseDomain: z.string(),
  customDomain: z.string().nullable(),
  accessType: z.string(),
  domainType: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  iconUrl: z.string().nullable(),
  active: z.boolean(),
  domain: z.string(),
  fqdn: z.string(),
  publicUrl: z.string(),
  baseFqdn: z.string(),
  isPublic: z.boolean(),
  isPrivate: z.boolean(),
});
/** The school a user belongs to. */
export type School = z.infer<typeof schoolSchema>;

/**
 * A school user (the `invoice.user` field list of 2.5). `profile` and `school` are optional here:
 * most events carry the profile next to the user, not inside it.
 */
export const userSchema = z.looseObject({
  ...stored,
  uuid: z.string(),
  status: z.string(),
  active: z.boolean(),
  activated: z.boolean(),
  banned: z.boolean(),
  alive: z.boolean(),
  domain: z.string(),
  email: z.string(),
  phone: z.string().nullable(),
  // UserTgConnected's `prevTgId` is "number or null, the previous tgId", so a tgId is a number.
  tgId: z.number().nullable(),
  vkId: z.union([z.number(), z.string()]).nullable(),
  appleId: z.string().nullable(),
  extId: z.union([z.string(), z.number()]).nullable(),
  schoolId: entityId,
  language: z.string().nullable(),
  // The session's timezone is "integer or null" (2.1); a zone name is tolerated too.
  timezone: z.union([z.number(), z.string()]).nullable(),
  // A user who never came online has no such moment.
  lastOnlineAt: timestamp.nullable(),
  // Types not shown by the interface.
  starsBalance: z.unknown(),
  currentTime: z.unknown(),
  isSleepingNow: z.boolean(),
  profile: profileSchema.optional(),
  school: schoolSchema.optional(),
});
/** A school user. */
export type User = z.infer<typeof userSchema>;

/** A user whose `profile` is embedded ("user (with profile)" in interface 6). */
export const userWithProfileSchema = userSchema.extend({ profile: profileSchema });
/** A user whose `profile` is embedded. */
export type UserWithProfile = z.infer<typeof userWithProfileSchema>;

/** A course (`product.course` in 2.5). */
export const courseSchema = z.looseObject({
  ...stored,
  type: z.string(),
  name: z.string(),
  description: z.string(),
  alias: z.string().nullable(),
  // Type not shown (a URL or a video object); null when there is none.
  promoVideo: z.unknown(),
  order: z.number(),
  isBundle: z.boolean(),
  tags: z.array(z.string()),
  seoTags: list,
  // "object with `main`"; the type of `main` is not shown.
  image: z.looseObject({ main: z.unknown() }),
  settings: record,
});
/** A course. */
export type Course = z.infer<typeof courseSchema>;

/**
 * A product (the line-item product of 2.5). `course` is optional here: events carry the course
 * next to the product; inside an invoice line item it is required.
 */
export const productSchema = z.looseObject({
  ...stored,
  sellerId: entityId,
  type: z.string(),
  status: z.string(),
  showInCatalog: z.boolean(),
  currency: z.string(),
  publishedAt: timestamp,
  saleStartAt: timestamp.nullable(),
  saleFinishAt: timestamp.nullable(),
  isFree: z.boolean(),
  isPublished: z.boolean(),
  approves: list,
  domains: list,
  course: courseSchema.optional(),
});
/** A product. */
export type Product = z.infer<typeof productSchema>;

/** Where an enrollment came from (`access.meta`); both keys may be absent. */
const accessMetaSchema = z.looseObject({
  inviteLinkId: looseIdSchema.optional(),
  utmParams: utmParamsSchema.optional(),
});

/**
 * A user's access to a product. Its field list is not shown by the interface; `meta` carries the
 * invite link and the enrollment UTM tags (interface 6, rules 1 and 2).
 */
export const accessSchema = z.looseObject({
  id: entityId,
  meta: accessMetaSchema.optional(),
});
/** A user's access to a product. */
export type Access = z.infer<typeof accessSchema>;

/** A group of students. Its field list is not shown by the interface. */
export const groupSchema = z.looseObject({ id: entityId });
/** A group of students. */
export type Group = z.infer<typeof groupSchema>;

/**
 * A certificate for completing a course. Its field list is not shown by the interface (it has a
 * public link, a validity period and a snapshot of data at issue).
 */
export const certificateSchema = z.looseObject({ id: entityId });
/** A certificate for completing a course. */
export type Certificate = z.infer<typeof certificateSchema>;

/** The price a line item was sold at (`line item price` in 2.5). */
export const priceSchema = z.looseObject({
  ...stored,
  mode: z.string(),
  type: z.string(),
  title: z.string(),
  description: z.string().nullable(),
  amount: z.number(),
  previousAmount: z.number().nullable(),
  accessDays: z.number().nullable(),
  infinityAccess: z.boolean(),
  active: z.boolean(),
  hidden: z.boolean(),
  activeFrom: timestamp.nullable(),
  activeTo: timestamp.nullable(),
  installmentConfig: record.nullable(),
  subscriptionConfig: record.nullable(),
  isDemo: z.boolean(),
  isRecurrent: z.boolean(),
  isInstallment: z.boolean(),
  isSubscription: z.boolean(),
  meta: record,
});
/** The price a line item was sold at. */
export type Price = z.infer<typeof priceSchema>;

/** One line of an invoice (`invoice.products[]` in 2.5), with its price and product. */
export const lineItemSchema = z.looseObject({
  ...stored,
  originalPrice: z.number(),
  totalPrice: z.number(),
  discountAmount: z.number(),
  // Type not shown (most likely a discount object); null when there is none.
  discount: z.unknown(),
  price: priceSchema,
  // 2.5 lists `course` among the line-item product's fields, so it is required here.
  product: productSchema.extend({ course: courseSchema }),
});
/** One line of an invoice. */
export type LineItem = z.infer<typeof lineItemSchema>;

/** The invoice a payment settles (`payment.invoice` in 2.5). */
export const invoiceSchema = z.looseObject({
  ...stored,
  uuid: z.string(),
  humanId: z.number().int(),
  type: z.string(),
  status: z.string(),
  totalAmount: z.number(),
  discountAmount: z.number(),
  currency: z.string(),
  expireAt: timestamp.nullable(),
  isActive: z.boolean(),
  user: userSchema.extend({ profile: profileSchema, school: schoolSchema }),
  products: z.array(lineItemSchema),
  // Interface 2.4: with no tags the UTM object is absent or empty.
  meta: z.looseObject({ utmParams: utmParamsSchema.optional() }),
});
/** The invoice a payment settles. */
export type Invoice = z.infer<typeof invoiceSchema>;

/** The acquiring (payment provider account) that charged a payment. Provider secrets are omitted. */
export const acquiringSchema = z.looseObject({
  id: entityId,
  active: z.boolean(),
  uuid: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  hasProviderCommission: z.boolean(),
  provider: z.looseObject({
    // Not one of the entities of 2.5; a provider may well be keyed by a name.
    id: looseIdSchema,
    type: z.string(),
    active: z.boolean(),
  }),
});
/** The acquiring that charged a payment. */
export type Acquiring = z.infer<typeof acquiringSchema>;

/** A payment with its whole tree: invoice, user, line items and acquiring (2.5). */
export const paymentSchema = z.looseObject({
  ...stored,
  uuid: z.string(),
  type: z.string(),
  status: z.string(),
  // The provider's own id: a string or a number.
  checkoutPaymentId: z.union([z.string(), z.number()]),
  checkoutUrl: z.string().nullable(),
  released: z.boolean(),
  paidAt: timestamp,
  expireAt: timestamp.nullable(),
  isCompleted: z.boolean(),
  isCanceled: z.boolean(),
  meta: record,
  webhookLogs: list,
  chargeLogs: list,
  statusHistoryLogs: list,
  invoice: invoiceSchema,
  acquiring: acquiringSchema,
});
/** A payment with its whole tree. */
export type Payment = z.infer<typeof paymentSchema>;
