/**
 * Zod schemas of the entities inside webhook payloads (docs/platform.md#entities and
 * docs/platform.md#utm-tags, from the platform's own entity reference).
 *
 * They are tolerant readers (docs/events.md). A payload is cut from the platform's models by an
 * allow-list, so of an entity only its `id` is sure to be there: every other field is typed when
 * present and may be absent, and a field the platform marks optional (or the interface marks
 * `(null)`) may also be null. A present field of the wrong type is still refused. Every object is
 * loose: fields the platform adds later pass through untouched. Enum-like strings are open unions
 * ({@link OpenUnion}): the values the platform names today autocomplete, any other string passes.
 *
 * Types the interface does not state get the loosest type that still rejects a clearly wrong
 * shape. Timestamps and UUIDs are plain strings on purpose: the interface promises no format
 * beyond "ISO 8601", a rejected event is lost to the seller after five attempts, and format checks
 * cost parse time.
 * @module
 */

import { z } from 'zod';
import type { KnownOutput } from './known-output.js';

/**
 * A string whose known values autocomplete while any other string is accepted too: the platform
 * names its enum values today and may add more (docs/platform.md#enum-values).
 *
 * @example
 * ```ts
 * const currency: OpenUnion<'Rub' | 'Usd'> = 'Kzt'; // fine: a value added later
 * ```
 */
// `string & Record<never, never>` is `string & {}`: a string, but not one TypeScript folds the
// literals into, so editors still offer them.
export type OpenUnion<Known extends string> = Known | (string & Record<never, never>);

/** Every open union is this one string schema at run time: its known values are types only. */
const anyString = z.string();

/**
 * A string schema typed as an open union of `Known`. At run time it is a plain `z.string()` (one
 * `typeof` in the generated validator, and `{ "type": "string" }` in the JSON Schema, which is exactly
 * what it accepts); the known values live in the types only, so they cost the bundle nothing.
 * Also read by the API client's list items (src/api/list-schemas.ts).
 */
export function openUnion<Known extends string>(): z.ZodType<OpenUnion<Known>, OpenUnion<Known>> {
  return anyString as unknown as z.ZodType<OpenUnion<Known>, OpenUnion<Known>>;
}

// Building blocks, kept private: the public surface is the entity schemas below.

/** Entity ids are integers (docs/platform.md#session-tokens and the `<USER_ID>`-style placeholders). */
const entityId = z.number().int();
/** ISO 8601 strings, deliberately unchecked (see the module comment). */
const timestamp = z.string();
// Field schemas shared by many entities: a Zod schema is immutable, so one instance serves every
// field of its kind (and keeps the core bundle small).
const text = z.string().optional();
const maybeText = z.string().nullish();
const flag = z.boolean().optional();
const maybeFlag = z.boolean().nullish();
const amount = z.number().optional();
const maybeAmount = z.number().nullish();
const time = timestamp.optional();
const maybeTime = timestamp.nullish();
const optionalId = entityId.optional();
const maybeId = entityId.nullish();

/** An object whose keys the interface does not list. */
const record = z.record(z.string(), z.unknown());
/** An array whose items the interface does not describe. */
const list = z.array(z.unknown());

/**
 * What every stored entity carries (docs/platform.md#entities): the `id`, the one field a payload is
 * sure to hold, then timestamps that may be left out; `deletedAt` and `archivedAt` may be null.
 */
const stored = {
  id: entityId,
  createdAt: time,
  updatedAt: time,
  deletedAt: maybeTime,
  archivedAt: maybeTime,
};

/**
 * An id whose type the interface does not state (`inviteLinkId`, `variantId`, `lessonId`):
 * an integer or a string.
 */
export const looseIdSchema = z.union([z.number().int(), z.string()]);
/** An id that may be an integer or a string. */
export type LooseId = KnownOutput<typeof looseIdSchema>;

/** The currencies the platform names today, spelt as it sends them (`Rub`, not `RUB`). */
export type KnownCurrency = 'Free' | 'Exes' | 'Rub' | 'Uzs' | 'Kzt' | 'Usd' | 'Eur';
/** Currencies of a product, an invoice or a discount: the known ones, or one added later. */
export type Currency = OpenUnion<KnownCurrency>;
const currencySchema = openUnion<KnownCurrency>();

/**
 * UTM tags (docs/platform.md#utm-tags). Only the keys that were passed are present, so every key is optional
 * and the object may be empty.
 */
export const utmParamsSchema = z.looseObject({
  utm_source: text,
  utm_medium: text,
  utm_campaign: text,
  utm_term: text,
  utm_content: text,
  gclid: text,
  fbclid: text,
  yclid: text,
  referrer: text,
  aff_id: text,
  sub_id: text,
  track_id: text,
});
/** UTM tags of a sign-up, an enrollment or an invoice. */
export type UtmParams = KnownOutput<typeof utmParamsSchema>;

/**
 * The `states` object of an event (docs/platform.md#utm-tags): the sign-up and enrollment UTM tags.
 * Each may be absent, empty or null (docs/events.md).
 */
export const statesSchema = z.looseObject({
  utmSignupParams: utmParamsSchema.nullish(),
  utmEnrollParams: utmParamsSchema.nullish(),
});
/** The `states` object of an event. */
export type States = KnownOutput<typeof statesSchema>;

/** A profile's avatar (`profile.avatar`): image URLs in three sizes. */
export const avatarSchema = z.looseObject({
  // Not one of the platform's entities, and its id type is not stated.
  id: looseIdSchema,
  small: text,
  medium: text,
  maximum: text,
});
/** A profile's avatar. */
export type Avatar = KnownOutput<typeof avatarSchema>;

/** The titles shown next to a profile (`profile.titleState`); every field may be null. */
export const titleStateSchema = z.looseObject({
  manualTitle: maybeText,
  manualEmojiTitle: maybeText,
  manualNextTitle: maybeText,
  manualNextEmojiTitle: maybeText,
  manualExpiredAt: maybeTime,
  locationTitle: maybeText,
  locationEmojiTitle: maybeText,
  achievementTitle: maybeText,
  achievementEmojiTitle: maybeText,
});
/** The titles shown next to a profile. */
export type TitleState = KnownOutput<typeof titleStateSchema>;

/** A user's profile (`user.profile`). */
export const profileSchema = z.looseObject({
  ...stored,
  userId: maybeId,
  official: flag,
  firstName: maybeText,
  lastName: maybeText,
  fullName: maybeText,
  fullNameShort: maybeText,
  bdate: maybeText,
  // Typed `unknown` before the platform's reference named their values, when null was accepted:
  // still accepted, so no delivery that passed then is refused now.
  sex: openUnion<'Ufo' | 'Women' | 'Men'>().nullish(),
  role: openUnion<'Student' | 'Tutor' | 'Parent'>().nullish(),
  country: maybeText,
  city: maybeText,
  status: maybeText,
  title: maybeText,
  emojiTitle: maybeText,
  avatar: avatarSchema.optional(),
  titleState: titleStateSchema.optional(),
});
/** A user's profile. */
export type Profile = KnownOutput<typeof profileSchema>;

/** The school a user belongs to (`user.school`). */
export const schoolSchema = z.looseObject({
  ...stored,
  name: text,
  description: maybeText,
  segment: openUnion<'Commerce' | 'Corporate'>().optional(),
  accessType: openUnion<'Public' | 'Private'>().optional(),
  domainType: openUnion<'Base' | 'Custom'>().optional(),
  baseDomain: text,
  customDomain: maybeText,
  domain: maybeText,
  fqdn: maybeText,
  baseFqdn: maybeText,
  publicUrl: maybeText,
  iconUrl: maybeText,
  active: flag,
  isPublic: maybeFlag,
  isPrivate: maybeFlag,
});
/** The school a user belongs to. */
export type School = KnownOutput<typeof schoolSchema>;

/**
 * A school user. A student who signed up by phone has no `email`, a Telegram user has neither
 * email nor phone: both may be absent or null. `profile` and `school` are embedded when the
 * platform sends them.
 */
export const userSchema = z.looseObject({
  ...stored,
  uuid: text,
  status: openUnion<
    'Active' | 'OnLeave' | 'Banned' | 'Blocked' | 'Terminated' | 'Deleted'
  >().optional(),
  active: flag,
  activated: flag,
  banned: flag,
  alive: maybeFlag,
  domain: text,
  email: maybeText,
  phone: maybeText,
  // UserTgConnected's `prevTgId` is "number or null, the previous tgId", so a tgId is a number.
  tgId: maybeAmount,
  vkId: z.union([z.number(), z.string()]).nullish(),
  appleId: maybeText,
  extId: z.union([z.string(), z.number()]).nullish(),
  schoolId: maybeId,
  language: openUnion<'Ru' | 'Uz' | 'En' | 'Qa'>().nullish(),
  // The session's timezone is "integer or null" (2.1); a zone name is tolerated too.
  timezone: z.union([z.number(), z.string()]).nullish(),
  lastOnlineAt: maybeTime,
  // `starsBalance` and `currentTime`: types not shown, so they pass through as unknown.
  isSleepingNow: flag,
  profile: profileSchema.nullish(),
  school: schoolSchema.nullish(),
});
/** A school user. */
export type User = KnownOutput<typeof userSchema>;

/**
 * The user of events whose interface row says "user (with profile)". The profile is embedded when
 * the platform has one, but it is not part of the spine (docs/events.md), so this is {@link userSchema}.
 */
export const userWithProfileSchema = userSchema;
/** The user of events whose interface row says "user (with profile)". */
export type UserWithProfile = User;

/** A course (`product.course`). */
export const courseSchema = z.looseObject({
  ...stored,
  type: openUnion<
    'Bundle' | 'Webinar' | 'TextCourse' | 'Assessment' | 'VideoCourse' | 'PersonalLesson'
  >().optional(),
  productId: maybeId,
  name: text,
  description: text,
  alias: maybeText,
  tags: z.array(z.string()).optional(),
  seoTags: list.optional(),
  // "object with `main`"; the type of `main` is not shown. `promoVideo` (a URL or a video
  // object?) is not typed either: it passes through as unknown.
  image: record.nullish(),
  settings: record.optional(),
  order: amount,
  isBundle: maybeFlag,
});
/** A course. */
export type Course = KnownOutput<typeof courseSchema>;

/**
 * A product. It carries its `course` when it is a course; a digital product has none, so the
 * course may be absent or null (in an event and in an invoice line item alike).
 */
export const productSchema = z.looseObject({
  ...stored,
  sellerId: optionalId,
  type: openUnion<'Course' | 'School' | 'Digital'>().optional(),
  status: openUnion<'Draft' | 'OnCheck' | 'Declined' | 'ReadyToPublish' | 'Published'>().nullish(),
  currency: currencySchema.optional(),
  name: maybeText,
  showInCatalog: flag,
  approves: list.optional(),
  domains: list.optional(),
  publishedAt: maybeTime,
  saleStartAt: maybeTime,
  saleFinishAt: maybeTime,
  isFree: maybeFlag,
  isPublished: maybeFlag,
  course: courseSchema.nullish(),
});
/** A product. */
export type Product = KnownOutput<typeof productSchema>;

/** Where an enrollment came from (`access.meta`); both keys may be absent or null. */
export const accessMetaSchema = z.looseObject({
  inviteLinkId: looseIdSchema.nullish(),
  utmParams: utmParamsSchema.nullish(),
});
/** Where an enrollment came from. */
export type AccessMeta = KnownOutput<typeof accessMetaSchema>;

/**
 * A user's access to a product; `meta` carries the invite link and the enrollment UTM tags
 * (docs/platform.md#events, docs/platform.md#utm-tags).
 */
export const accessSchema = z.looseObject({
  ...stored,
  productId: optionalId,
  parentId: maybeId,
  active: flag,
  deactivatedAt: maybeTime,
  expireAt: maybeTime,
  billingIsActive: maybeFlag,
  meta: accessMetaSchema.nullish(),
});
/** A user's access to a product. */
export type Access = KnownOutput<typeof accessSchema>;

/**
 * A field the entity reference names without stating its type (a group's `space`, its
 * limitations): any value, so that none is refused for its shape.
 */
const untyped = z.unknown().optional();

/** A group of students (docs/platform.md#entities, group). */
export const groupSchema = z.looseObject({
  ...stored,
  uuid: text,
  space: untyped,
  name: text,
  order: maybeAmount,
  maxMembers: maybeAmount,
  communication: untyped,
  accessLimitation: untyped,
  scheduleLimitation: untyped,
  contentLimitation: untyped,
  isTgConnected: maybeFlag,
  tgConnectionMode: openUnion<'Disconnected' | 'Connected' | 'Required'>().nullish(),
});
/** A group of students. */
export type Group = KnownOutput<typeof groupSchema>;

/**
 * A certificate for completing a course: a public `link` that opens without authorization, a
 * validity period and a snapshot of data at issue. `CertificateIssued` requires the link.
 */
export const certificateSchema = z.looseObject({
  ...stored,
  uuid: text,
  link: text,
  userId: optionalId,
  courseId: optionalId,
  templateId: optionalId,
  snapshot: untyped,
  issuedAt: time,
  expireAt: maybeTime,
});
/** A certificate for completing a course. */
export type Certificate = KnownOutput<typeof certificateSchema>;

/** A lesson (CourseLessonPracticeCompleted's `lesson`; docs/platform.md#entities, lesson). */
export const lessonSchema = z.looseObject({
  ...stored,
  courseId: optionalId,
  type: openUnion<'Regular' | 'Webinar'>().optional(),
  accessType: openUnion<'Demo' | 'Participant'>().optional(),
  status: maybeText,
  name: text,
  description: maybeText,
  previewImage: untyped,
  order: amount,
  withContent: flag,
  withPractice: flag,
  publishedAt: maybeTime,
  settings: record.optional(),
  isPublished: maybeFlag,
});
/** A lesson. */
export type Lesson = KnownOutput<typeof lessonSchema>;

/** A lesson's practical assignment (CourseLessonPracticeCompleted's `practice`). */
export const practiceSchema = z.looseObject({
  ...stored,
  name: text,
  description: maybeText,
  // The modes' values are not named by the reference: plain strings.
  questionMode: text,
  resultMode: text,
  variantMode: text,
  retryVariantMode: text,
  maxAttempts: maybeAmount,
  timeLimitInMinutes: maybeAmount,
  deadlineInDays: maybeAmount,
  passThreshold: maybeAmount,
  starsPerTaskPoint: maybeAmount,
  requireAllAnswers: flag,
  tasksCount: amount,
});
/** A lesson's practical assignment. */
export type Practice = KnownOutput<typeof practiceSchema>;

/** A student's attempt at a practice, "with score and status" (docs/platform.md#events). */
export const practiceAttemptSchema = z.looseObject({
  ...stored,
  uuid: maybeText,
  variantId: looseIdSchema.optional(),
  userId: optionalId,
  // An attempt that is not graded yet may carry no score.
  score: maybeAmount,
  status: openUnion<
    'Created' | 'OnReview' | 'OnCorrection' | 'AutoVerified' | 'Verified' | 'Failed' | 'Stacked'
  >().nullish(),
  order: amount,
  finished: flag,
  sentToReviewAt: maybeTime,
  sentAfterDeadline: flag,
  deadlineAt: maybeTime,
  passedAt: maybeTime,
  solvedCount: amount,
  pointsAmount: amount,
  maxPointsAmount: amount,
  uncounted: flag,
  isPassed: maybeFlag,
  correctPercent: maybeAmount,
  isExpired: maybeFlag,
});
/** A student's attempt at a practice. */
export type PracticeAttempt = KnownOutput<typeof practiceAttemptSchema>;

/** The price a line item was sold at (`line item price`). */
export const priceSchema = z.looseObject({
  ...stored,
  mode: openUnion<'AccordingToGroup' | 'SelfDefinition'>().optional(),
  type: openUnion<
    'Demo' | 'OneTime' | 'Installment' | 'Subscription' | 'ExternalLink'
  >().optional(),
  title: maybeText,
  description: maybeText,
  amount: amount,
  previousAmount: maybeAmount,
  accessDays: maybeAmount,
  infinityAccess: flag,
  active: flag,
  hidden: flag,
  activeFrom: maybeTime,
  activeTo: maybeTime,
  meta: record.optional(),
  installmentConfig: record.nullish(),
  subscriptionConfig: record.nullish(),
  isDemo: maybeFlag,
  isRecurrent: maybeFlag,
  isInstallment: maybeFlag,
  isSubscription: maybeFlag,
});
/** The price a line item was sold at. */
export type Price = KnownOutput<typeof priceSchema>;

/** A discount code applied to a line item. */
export const discountSchema = z.looseObject({
  ...stored,
  code: text,
  type: openUnion<'Amount' | 'Percent'>().optional(),
  value: amount,
  currency: currencySchema.optional(),
  active: flag,
  activeFrom: maybeTime,
  activeTo: maybeTime,
});
/** A discount code applied to a line item. */
export type Discount = KnownOutput<typeof discountSchema>;

/** One line of an invoice (`invoice.products[]`), with its price and product. */
export const lineItemSchema = z.looseObject({
  ...stored,
  originalPrice: amount,
  totalPrice: amount,
  discountAmount: amount,
  price: priceSchema.nullish(),
  discount: discountSchema.nullish(),
  product: productSchema.nullish(),
});
/** One line of an invoice. */
export type LineItem = KnownOutput<typeof lineItemSchema>;

/**
 * The invoice a payment settles (`payment.invoice`). Its amount, currency and buyer are the spine
 * of PaymentCompleted (docs/events.md). `meta` is absent altogether when the buyer came without UTM
 * tags, as in the platform's own documented example.
 */
export const invoiceSchema = z.looseObject({
  ...stored,
  uuid: text,
  humanId: z.number().int().nullish(),
  type: openUnion<
    'Regular' | 'InstallmentPay' | 'InstallmentInit' | 'SubscriptionPay' | 'SubscriptionInit'
  >().optional(),
  status: openUnion<'Active' | 'Canceled'>().nullish(),
  totalAmount: z.number(),
  discountAmount: amount,
  currency: currencySchema,
  expireAt: maybeTime,
  isActive: maybeFlag,
  user: userSchema,
  products: z.array(lineItemSchema).nullish(),
  meta: z.looseObject({ utmParams: utmParamsSchema.nullish() }).nullish(),
});
/** The invoice a payment settles. */
export type Invoice = KnownOutput<typeof invoiceSchema>;

/** The acquiring (payment provider account) that charged a payment. Provider secrets are omitted. */
export const acquiringSchema = z.looseObject({
  id: entityId,
  uuid: text,
  active: maybeFlag,
  name: maybeText,
  description: maybeText,
  hasProviderCommission: maybeFlag,
  provider: z
    .looseObject({
      // Not one of the stored entities; a provider may well be keyed by a name.
      id: looseIdSchema,
      type: maybeText,
      active: maybeFlag,
    })
    .nullish(),
});
/** The acquiring that charged a payment. */
export type Acquiring = KnownOutput<typeof acquiringSchema>;

/**
 * A payment with its tree (2.5). The invoice is the spine of PaymentCompleted; the acquiring and
 * the logs may be left out.
 */
export const paymentSchema = z.looseObject({
  ...stored,
  uuid: text,
  type: openUnion<'OneTime' | 'RecurrentPay' | 'RecurrentInit'>().optional(),
  status: openUnion<
    | 'Created'
    | 'WaitingPay'
    | 'WaitingForBinding'
    | 'Processing'
    | 'Completed'
    | 'BindingCompleted'
    | 'Canceled'
  >().nullish(),
  released: flag,
  // The provider's own id: a string or a number.
  checkoutPaymentId: z.union([z.string(), z.number()]).nullish(),
  checkoutUrl: maybeText,
  paidAt: maybeTime,
  expireAt: maybeTime,
  isCompleted: maybeFlag,
  isCanceled: maybeFlag,
  meta: record.nullish(),
  webhookLogs: list.nullish(),
  chargeLogs: list.nullish(),
  statusHistoryLogs: list.nullish(),
  acquiring: acquiringSchema.nullish(),
  invoice: invoiceSchema,
});
/** A payment with its tree. */
export type Payment = KnownOutput<typeof paymentSchema>;
