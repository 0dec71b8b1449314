/**
 * Zod schemas of the entities inside webhook payloads (PLATFORM-INTERFACE.md 2.4 and 2.5, with the
 * platform's own entity reference restated in PLATFORM-ENTITIES.md).
 *
 * They are tolerant readers (DESIGN 3). A payload is cut from the platform's models by an
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

/**
 * A string whose known values autocomplete while any other string is accepted too: the platform
 * names its enum values today and may add more (PLATFORM-ENTITIES.md, "How to read it").
 *
 * @example
 * ```ts
 * const currency: OpenUnion<'Rub' | 'Usd'> = 'Kzt'; // fine: a value added later
 * ```
 */
// `string & Record<never, never>` is `string & {}`: a string, but not one TypeScript folds the
// literals into, so editors still offer them.
export type OpenUnion<Known extends string> = Known | (string & Record<never, never>);

/**
 * A string schema typed as an open union of `known`. At run time it is a plain `z.string()` (one
 * `typeof` in the compiled check); the known values go into the JSON Schema as `examples`.
 */
function openUnion<const Known extends readonly string[]>(
  known: Known,
): z.ZodType<OpenUnion<Known[number]>, OpenUnion<Known[number]>> {
  const schema = z.string().meta({
    description: `Known values: ${known.join(', ')}. Any other string is accepted too.`,
    examples: [...known],
  });
  return schema as unknown as z.ZodType<OpenUnion<Known[number]>, OpenUnion<Known[number]>>;
}

// Building blocks, kept private: the public surface is the entity schemas below.

/** Entity ids are integers (interface 2.1 and the `<USER_ID>`-style placeholders). */
const entityId = z.number().int();
/** ISO 8601 strings, deliberately unchecked (see the module comment). */
const timestamp = z.string();
/** An object whose keys the interface does not list. */
const record = z.record(z.string(), z.unknown());
/** An array whose items the interface does not describe. */
const list = z.array(z.unknown());

/**
 * What every stored entity carries (PLATFORM-ENTITIES.md): the `id`, the one field a payload is
 * sure to hold, then timestamps that may be left out; `deletedAt` and `archivedAt` may be null.
 */
const stored = {
  id: entityId,
  createdAt: timestamp.optional(),
  updatedAt: timestamp.optional(),
  deletedAt: timestamp.nullish(),
  archivedAt: timestamp.nullish(),
};

/**
 * An id whose type the interface does not state (`inviteLinkId`, `variantId`, `lessonId`):
 * an integer or a string.
 */
export const looseIdSchema = z.union([z.number().int(), z.string()]);
/** An id that may be an integer or a string. */
export type LooseId = z.infer<typeof looseIdSchema>;

/** Currencies the platform names (product, invoice, discount). */
export type Currency = OpenUnion<'Free' | 'Exes' | 'Rub' | 'Uzs' | 'Kzt' | 'Usd' | 'Eur'>;
const currencySchema = openUnion(['Free', 'Exes', 'Rub', 'Uzs', 'Kzt', 'Usd', 'Eur']);

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
 * Each may be absent, empty or null (DESIGN 3).
 */
export const statesSchema = z.looseObject({
  utmSignupParams: utmParamsSchema.nullish(),
  utmEnrollParams: utmParamsSchema.nullish(),
});
/** The `states` object of an event. */
export type States = z.infer<typeof statesSchema>;

/** A profile's avatar (`profile.avatar`): image URLs in three sizes. */
export const avatarSchema = z.looseObject({
  // Not one of the platform's entities, and its id type is not stated.
  id: looseIdSchema,
  small: z.string().optional(),
  medium: z.string().optional(),
  maximum: z.string().optional(),
});
/** A profile's avatar. */
export type Avatar = z.infer<typeof avatarSchema>;

/** The titles shown next to a profile (`profile.titleState`); every field may be null. */
export const titleStateSchema = z.looseObject({
  manualTitle: z.string().nullish(),
  manualEmojiTitle: z.string().nullish(),
  manualNextTitle: z.string().nullish(),
  manualNextEmojiTitle: z.string().nullish(),
  manualExpiredAt: timestamp.nullish(),
  locationTitle: z.string().nullish(),
  locationEmojiTitle: z.string().nullish(),
  achievementTitle: z.string().nullish(),
  achievementEmojiTitle: z.string().nullish(),
});
/** The titles shown next to a profile. */
export type TitleState = z.infer<typeof titleStateSchema>;

/** A user's profile (`user.profile`). */
export const profileSchema = z.looseObject({
  ...stored,
  userId: entityId.nullish(),
  official: z.boolean().optional(),
  firstName: z.string().nullish(),
  lastName: z.string().nullish(),
  fullName: z.string().nullish(),
  fullNameShort: z.string().nullish(),
  bdate: z.string().nullish(),
  // Typed `unknown` before the platform's reference named their values, when null was accepted:
  // still accepted, so no delivery that passed then is refused now.
  sex: openUnion(['Ufo', 'Women', 'Men']).nullish(),
  role: openUnion(['Student', 'Tutor', 'Parent']).nullish(),
  country: z.string().nullish(),
  city: z.string().nullish(),
  status: z.string().nullish(),
  title: z.string().nullish(),
  emojiTitle: z.string().nullish(),
  avatar: avatarSchema.optional(),
  titleState: titleStateSchema.optional(),
});
/** A user's profile. */
export type Profile = z.infer<typeof profileSchema>;

/** The school a user belongs to (`user.school`). */
export const schoolSchema = z.looseObject({
  ...stored,
  name: z.string().optional(),
  description: z.string().nullish(),
  segment: openUnion(['Commerce', 'Corporate']).optional(),
  accessType: openUnion(['Public', 'Private']).optional(),
  domainType: openUnion(['Base', 'Custom']).optional(),
  baseDomain: z.string().optional(),
  customDomain: z.string().nullish(),
  domain: z.string().nullish(),
  fqdn: z.string().nullish(),
  baseFqdn: z.string().nullish(),
  publicUrl: z.string().nullish(),
  iconUrl: z.string().nullish(),
  active: z.boolean().optional(),
  isPublic: z.boolean().nullish(),
  isPrivate: z.boolean().nullish(),
});
/** The school a user belongs to. */
export type School = z.infer<typeof schoolSchema>;

/**
 * A school user. A student who signed up by phone has no `email`, a Telegram user has neither
 * email nor phone: both may be absent or null. `profile` and `school` are embedded when the
 * platform sends them.
 */
export const userSchema = z.looseObject({
  ...stored,
  uuid: z.string().optional(),
  status: openUnion(['Active', 'OnLeave', 'Banned', 'Blocked', 'Terminated', 'Deleted']).optional(),
  active: z.boolean().optional(),
  activated: z.boolean().optional(),
  banned: z.boolean().optional(),
  alive: z.boolean().nullish(),
  domain: z.string().optional(),
  email: z.string().nullish(),
  phone: z.string().nullish(),
  // UserTgConnected's `prevTgId` is "number or null, the previous tgId", so a tgId is a number.
  tgId: z.number().nullish(),
  vkId: z.union([z.number(), z.string()]).nullish(),
  appleId: z.string().nullish(),
  extId: z.union([z.string(), z.number()]).nullish(),
  schoolId: entityId.nullish(),
  language: openUnion(['Ru', 'Uz', 'En', 'Qa']).nullish(),
  // The session's timezone is "integer or null" (2.1); a zone name is tolerated too.
  timezone: z.union([z.number(), z.string()]).nullish(),
  lastOnlineAt: timestamp.nullish(),
  // Types not shown by the interface.
  starsBalance: z.unknown().optional(),
  currentTime: z.unknown().optional(),
  isSleepingNow: z.boolean().optional(),
  profile: profileSchema.nullish(),
  school: schoolSchema.nullish(),
});
/** A school user. */
export type User = z.infer<typeof userSchema>;

/**
 * The user of events whose interface row says "user (with profile)". The profile is embedded when
 * the platform has one, but it is not part of the spine (DESIGN 3), so this is {@link userSchema}.
 */
export const userWithProfileSchema = userSchema;
/** The user of events whose interface row says "user (with profile)". */
export type UserWithProfile = User;

/** A course (`product.course`). */
export const courseSchema = z.looseObject({
  ...stored,
  type: openUnion([
    'Bundle',
    'Webinar',
    'TextCourse',
    'Assessment',
    'VideoCourse',
    'PersonalLesson',
  ]).optional(),
  productId: entityId.nullish(),
  name: z.string().optional(),
  description: z.string().optional(),
  alias: z.string().nullish(),
  tags: z.array(z.string()).optional(),
  seoTags: list.optional(),
  // "object with `main`"; the type of `main` is not shown.
  image: z.looseObject({ main: z.unknown().optional() }).nullish(),
  // Type not shown (a URL or a video object).
  promoVideo: z.unknown().optional(),
  settings: record.optional(),
  order: z.number().optional(),
  isBundle: z.boolean().nullish(),
});
/** A course. */
export type Course = z.infer<typeof courseSchema>;

/**
 * A product. It carries its `course` when it is a course; a digital product has none, so the
 * course may be absent or null (in an event and in an invoice line item alike).
 */
export const productSchema = z.looseObject({
  ...stored,
  sellerId: entityId.optional(),
  type: openUnion(['Course', 'School', 'Digital']).optional(),
  status: openUnion(['Draft', 'OnCheck', 'Declined', 'ReadyToPublish', 'Published']).nullish(),
  currency: currencySchema.optional(),
  name: z.string().nullish(),
  showInCatalog: z.boolean().optional(),
  approves: list.optional(),
  domains: list.optional(),
  publishedAt: timestamp.nullish(),
  saleStartAt: timestamp.nullish(),
  saleFinishAt: timestamp.nullish(),
  isFree: z.boolean().nullish(),
  isPublished: z.boolean().nullish(),
  course: courseSchema.nullish(),
});
/** A product. */
export type Product = z.infer<typeof productSchema>;

/** Where an enrollment came from (`access.meta`); both keys may be absent or null. */
export const accessMetaSchema = z.looseObject({
  inviteLinkId: looseIdSchema.nullish(),
  utmParams: utmParamsSchema.nullish(),
});
/** Where an enrollment came from. */
export type AccessMeta = z.infer<typeof accessMetaSchema>;

/**
 * A user's access to a product; `meta` carries the invite link and the enrollment UTM tags
 * (interface 6, rules 1 and 2).
 */
export const accessSchema = z.looseObject({
  ...stored,
  productId: entityId.optional(),
  parentId: entityId.nullish(),
  active: z.boolean().optional(),
  deactivatedAt: timestamp.nullish(),
  expireAt: timestamp.nullish(),
  billingIsActive: z.boolean().nullish(),
  meta: accessMetaSchema.nullish(),
});
/** A user's access to a product. */
export type Access = z.infer<typeof accessSchema>;

/** A group of students. */
export const groupSchema = z.looseObject({
  ...stored,
  uuid: z.string().optional(),
  name: z.string().optional(),
  order: z.number().nullish(),
  maxMembers: z.number().nullish(),
  isTgConnected: z.boolean().nullish(),
  tgConnectionMode: openUnion(['Disconnected', 'Connected', 'Required']).nullish(),
  // `space`, `communication` and the four `*Limitation` fields: types not shown.
});
/** A group of students. */
export type Group = z.infer<typeof groupSchema>;

/**
 * A certificate for completing a course: a public `link` that opens without authorization, a
 * validity period and a snapshot of data at issue. `CertificateIssued` requires the link.
 */
export const certificateSchema = z.looseObject({
  ...stored,
  uuid: z.string().optional(),
  link: z.string().optional(),
  userId: entityId.optional(),
  courseId: entityId.optional(),
  templateId: entityId.optional(),
  // Type not shown (a copy of the user's and the course's data at issue).
  snapshot: z.unknown().optional(),
  issuedAt: timestamp.optional(),
  expireAt: timestamp.nullish(),
});
/** A certificate for completing a course. */
export type Certificate = z.infer<typeof certificateSchema>;

/** A lesson (CourseLessonPracticeCompleted's `lesson`). */
export const lessonSchema = z.looseObject({
  ...stored,
  courseId: entityId.optional(),
  type: openUnion(['Regular', 'Webinar']).optional(),
  accessType: openUnion(['Demo', 'Participant']).optional(),
  status: z.string().nullish(),
  name: z.string().optional(),
  description: z.string().optional(),
  // Type not shown (a URL or an image object).
  previewImage: z.unknown().optional(),
  order: z.number().optional(),
  withContent: z.boolean().optional(),
  withPractice: z.boolean().optional(),
  publishedAt: timestamp.nullish(),
  settings: record.optional(),
  isPublished: z.boolean().nullish(),
});
/** A lesson. */
export type Lesson = z.infer<typeof lessonSchema>;

/** A lesson's practical assignment (CourseLessonPracticeCompleted's `practice`). */
export const practiceSchema = z.looseObject({
  ...stored,
  name: z.string().optional(),
  description: z.string().optional(),
  questionMode: z.string().optional(),
  resultMode: z.string().optional(),
  variantMode: z.string().optional(),
  retryVariantMode: z.string().optional(),
  maxAttempts: z.number().nullish(),
  timeLimitInMinutes: z.number().nullish(),
  deadlineInDays: z.number().nullish(),
  passThreshold: z.number().nullish(),
  starsPerTaskPoint: z.number().nullish(),
  requireAllAnswers: z.boolean().optional(),
  tasksCount: z.number().optional(),
});
/** A lesson's practical assignment. */
export type Practice = z.infer<typeof practiceSchema>;

/** A student's attempt at a practice, "with score and status" (interface 6). */
export const practiceAttemptSchema = z.looseObject({
  ...stored,
  uuid: z.string().nullish(),
  variantId: looseIdSchema.optional(),
  userId: entityId.optional(),
  // An attempt that is not graded yet may carry no score.
  score: z.number().nullish(),
  status: openUnion([
    'Created',
    'OnReview',
    'OnCorrection',
    'AutoVerified',
    'Verified',
    'Failed',
    'Stacked',
  ]).nullish(),
  order: z.number().optional(),
  finished: z.boolean().optional(),
  sentToReviewAt: timestamp.nullish(),
  sentAfterDeadline: z.boolean().optional(),
  deadlineAt: timestamp.nullish(),
  passedAt: timestamp.nullish(),
  solvedCount: z.number().optional(),
  pointsAmount: z.number().optional(),
  maxPointsAmount: z.number().optional(),
  uncounted: z.boolean().optional(),
  isPassed: z.boolean().nullish(),
  correctPercent: z.number().nullish(),
  isExpired: z.boolean().nullish(),
});
/** A student's attempt at a practice. */
export type PracticeAttempt = z.infer<typeof practiceAttemptSchema>;

/** The price a line item was sold at (`line item price`). */
export const priceSchema = z.looseObject({
  ...stored,
  mode: openUnion(['AccordingToGroup', 'SelfDefinition']).optional(),
  type: openUnion(['Demo', 'OneTime', 'Installment', 'Subscription', 'ExternalLink']).optional(),
  title: z.string().nullish(),
  description: z.string().nullish(),
  amount: z.number().optional(),
  previousAmount: z.number().nullish(),
  accessDays: z.number().nullish(),
  infinityAccess: z.boolean().optional(),
  active: z.boolean().optional(),
  hidden: z.boolean().optional(),
  activeFrom: timestamp.nullish(),
  activeTo: timestamp.nullish(),
  meta: record.optional(),
  installmentConfig: record.nullish(),
  subscriptionConfig: record.nullish(),
  isDemo: z.boolean().nullish(),
  isRecurrent: z.boolean().nullish(),
  isInstallment: z.boolean().nullish(),
  isSubscription: z.boolean().nullish(),
});
/** The price a line item was sold at. */
export type Price = z.infer<typeof priceSchema>;

/** A discount code applied to a line item. */
export const discountSchema = z.looseObject({
  ...stored,
  code: z.string().optional(),
  type: openUnion(['Amount', 'Percent']).optional(),
  value: z.number().optional(),
  currency: currencySchema.optional(),
  active: z.boolean().optional(),
  activeFrom: timestamp.nullish(),
  activeTo: timestamp.nullish(),
});
/** A discount code applied to a line item. */
export type Discount = z.infer<typeof discountSchema>;

/** One line of an invoice (`invoice.products[]`), with its price and product. */
export const lineItemSchema = z.looseObject({
  ...stored,
  originalPrice: z.number().optional(),
  totalPrice: z.number().optional(),
  discountAmount: z.number().optional(),
  price: priceSchema.nullish(),
  discount: discountSchema.nullish(),
  product: productSchema.nullish(),
});
/** One line of an invoice. */
export type LineItem = z.infer<typeof lineItemSchema>;

/**
 * The invoice a payment settles (`payment.invoice`). Its amount, currency and buyer are the spine
 * of PaymentCompleted (DESIGN 3). `meta` is absent altogether when the buyer came without UTM
 * tags, as in the platform's own documented example.
 */
export const invoiceSchema = z.looseObject({
  ...stored,
  uuid: z.string().optional(),
  humanId: z.number().int().nullish(),
  type: openUnion([
    'Regular',
    'InstallmentPay',
    'InstallmentInit',
    'SubscriptionPay',
    'SubscriptionInit',
  ]).optional(),
  status: openUnion(['Active', 'Canceled']).nullish(),
  totalAmount: z.number(),
  discountAmount: z.number().optional(),
  currency: currencySchema,
  expireAt: timestamp.nullish(),
  isActive: z.boolean().nullish(),
  user: userSchema,
  products: z.array(lineItemSchema).nullish(),
  meta: z.looseObject({ utmParams: utmParamsSchema.nullish() }).nullish(),
});
/** The invoice a payment settles. */
export type Invoice = z.infer<typeof invoiceSchema>;

/** The acquiring (payment provider account) that charged a payment. Provider secrets are omitted. */
export const acquiringSchema = z.looseObject({
  id: entityId,
  uuid: z.string().optional(),
  active: z.boolean().nullish(),
  name: z.string().nullish(),
  description: z.string().nullish(),
  hasProviderCommission: z.boolean().nullish(),
  provider: z
    .looseObject({
      // Not one of the stored entities; a provider may well be keyed by a name.
      id: looseIdSchema,
      type: z.string().nullish(),
      active: z.boolean().nullish(),
    })
    .nullish(),
});
/** The acquiring that charged a payment. */
export type Acquiring = z.infer<typeof acquiringSchema>;

/**
 * A payment with its tree (2.5). The invoice is the spine of PaymentCompleted; the acquiring and
 * the logs may be left out.
 */
export const paymentSchema = z.looseObject({
  ...stored,
  uuid: z.string().optional(),
  type: openUnion(['OneTime', 'RecurrentPay', 'RecurrentInit']).optional(),
  status: openUnion([
    'Created',
    'WaitingPay',
    'WaitingForBinding',
    'Processing',
    'Completed',
    'BindingCompleted',
    'Canceled',
  ]).nullish(),
  released: z.boolean().optional(),
  // The provider's own id: a string or a number.
  checkoutPaymentId: z.union([z.string(), z.number()]).nullish(),
  checkoutUrl: z.string().nullish(),
  paidAt: timestamp.nullish(),
  expireAt: timestamp.nullish(),
  isCompleted: z.boolean().nullish(),
  isCanceled: z.boolean().nullish(),
  meta: record.nullish(),
  webhookLogs: list.nullish(),
  chargeLogs: list.nullish(),
  statusHistoryLogs: list.nullish(),
  acquiring: acquiringSchema.nullish(),
  invoice: invoiceSchema,
});
/** A payment with its tree. */
export type Payment = z.infer<typeof paymentSchema>;
