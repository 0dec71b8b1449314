/**
 * The registry of webhook events: which names have a fixed `data` contract (docs/platform.md#events), their
 * schemas, the envelope schema (2.3) and the types handlers are written against.
 *
 * @example
 * ```ts
 * import { eventDataSchemas, isFixedContractEvent } from './events/index.js';
 *
 * if (isFixedContractEvent(envelope.event)) {
 *   const result = eventDataSchemas[envelope.event].safeParse(envelope.data);
 * }
 * ```
 * @module
 */

import { z } from 'zod';
import type { PayloadIssue } from '../../errors.js';
import { TIMESTAMP_PATTERN, timestampMsOf } from '../envelope.js';
import type { KnownOutput } from './known-output.js';
import { DATA_VALIDATORS } from './data-validators.generated.js';
import { certificateIssuedDataSchema } from './certificate-issued.js';
import { courseCompletedDataSchema } from './course-completed.js';
import { courseLessonPracticeCompletedDataSchema } from './course-lesson-practice-completed.js';
import { courseProgressChangedDataSchema } from './course-progress-changed.js';
import { paymentCompletedDataSchema } from './payment-completed.js';
import { productEnrolledByInviteLinkDataSchema } from './product-enrolled-by-invite-link.js';
import { productEnrolledToFreeDataSchema } from './product-enrolled-to-free.js';
import { productEnrolledViaLmsDataSchema } from './product-enrolled-via-lms.js';
import { productEnrolledViaPaymentDataSchema } from './product-enrolled-via-payment.js';
import { userAcquaintedDataSchema } from './user-acquainted.js';
import { userCreatedViaLmsDataSchema } from './user-created-via-lms.js';
import { userSignedUpDataSchema } from './user-signed-up.js';
import { userTgConnectedDataSchema } from './user-tg-connected.js';

/** The events whose `data` has a fixed contract (docs/platform.md#events); their payloads are validated. */
export const FIXED_CONTRACT_EVENTS = [
  'UserSignedUp',
  'UserAcquainted',
  'UserTgConnected',
  'UserCreatedViaLms',
  'CourseProgressChanged',
  'CourseCompleted',
  'CourseLessonPracticeCompleted',
  'PaymentCompleted',
  'ProductEnrolledToFree',
  'ProductEnrolledViaLms',
  'ProductEnrolledViaPayment',
  'ProductEnrolledByInviteLink',
  'CertificateIssued',
] as const;

/**
 * Subscribable events whose payload the platform does not guarantee (docs/platform.md#events): they
 * are verified, deduplicated and dispatched with `data: Record<string, unknown>`.
 */
export const UNCONTRACTED_EVENTS = [
  'UserSignedIn',
  'UserLoggedOut',
  'UserJoinedByReferral',
  'CourseLessonPracticeDetailedSent',
  'CourseLessonPracticeAutoVerifySent',
  'ProductRefundCompleted',
  'ProductAccessSubscriptionEnding7Days',
  'ProductAccessSubscriptionEnding1Day',
] as const;

/** Every event name this version knows: the fixed-contract ones, then the uncontracted ones. */
export const KNOWN_EVENTS: readonly KnownEventName[] = [
  ...FIXED_CONTRACT_EVENTS,
  ...UNCONTRACTED_EVENTS,
];

/** The name of an event with a fixed `data` contract. */
export type FixedEventName = (typeof FIXED_CONTRACT_EVENTS)[number];
/** The name of a subscribable event without a `data` contract. */
export type UncontractedEventName = (typeof UNCONTRACTED_EVENTS)[number];
/** Every event name the interface names. */
export type KnownEventName = FixedEventName | UncontractedEventName;

/** The schema of `data` for each fixed-contract event. */
export const eventDataSchemas = {
  UserSignedUp: userSignedUpDataSchema,
  UserAcquainted: userAcquaintedDataSchema,
  UserTgConnected: userTgConnectedDataSchema,
  UserCreatedViaLms: userCreatedViaLmsDataSchema,
  CourseProgressChanged: courseProgressChangedDataSchema,
  CourseCompleted: courseCompletedDataSchema,
  CourseLessonPracticeCompleted: courseLessonPracticeCompletedDataSchema,
  PaymentCompleted: paymentCompletedDataSchema,
  ProductEnrolledToFree: productEnrolledToFreeDataSchema,
  ProductEnrolledViaLms: productEnrolledViaLmsDataSchema,
  ProductEnrolledViaPayment: productEnrolledViaPaymentDataSchema,
  ProductEnrolledByInviteLink: productEnrolledByInviteLinkDataSchema,
  CertificateIssued: certificateIssuedDataSchema,
} as const satisfies Record<FixedEventName, z.ZodType>;

/** The parsed `data` of each fixed-contract event. */
export type EventDataMap = { [N in FixedEventName]: KnownOutput<(typeof eventDataSchemas)[N]> };

/** Data of an event: typed for fixed-contract events, a plain record otherwise. */
export type EventData<N extends string> = N extends FixedEventName
  ? EventDataMap[N]
  : Record<string, unknown>;

/** A verified webhook event; distributive, so WebhookEvent<'A'|'B'> narrows on `event`. */
export type WebhookEvent<N extends string = KnownEventName> = N extends string
  ? { event: N; timestamp: string; idempotencyKey: string; data: EventData<N> }
  : never;

/**
 * The envelope every delivery carries: the receiver's own rule (`parseEnvelope`), so the JSON
 * Schema printed from it (`schoolhooks schema`) accepts exactly what the receiver accepts.
 * `timestamp` is an RFC 3339 date-time (`format: date-time`) the receiver also checks for age;
 * `data` is checked against {@link eventDataSchemas} for fixed-contract events.
 */
export const envelopeSchema = z.looseObject({
  event: z.string().min(1),
  timestamp: z
    .string()
    .regex(new RegExp(TIMESTAMP_PATTERN))
    .refine((text) => timestampMsOf(text) !== undefined, 'no such day in that month')
    .meta({ format: 'date-time' }),
  idempotencyKey: z.string().min(1),
  data: z.record(z.string(), z.unknown()),
});
/** A parsed envelope, before its `data` is validated. */
export type Envelope = z.infer<typeof envelopeSchema>;

const FIXED_CONTRACT_EVENT_SET: ReadonlySet<string> = new Set(FIXED_CONTRACT_EVENTS);

const KNOWN_EVENT_SET: ReadonlySet<string> = new Set(KNOWN_EVENTS);

/** True when `name` is one of the event names this version knows ({@link KNOWN_EVENTS}). */
export function isKnownEvent(name: string): name is KnownEventName {
  return KNOWN_EVENT_SET.has(name);
}

/**
 * True when `name` is an event with a fixed `data` contract. A Set lookup, so names such as
 * `constructor` or `__proto__` are never mistaken for events.
 */
export function isFixedContractEvent(name: string): name is FixedEventName {
  return FIXED_CONTRACT_EVENT_SET.has(name);
}

export {
  accessMetaSchema,
  accessSchema,
  acquiringSchema,
  avatarSchema,
  certificateSchema,
  courseSchema,
  discountSchema,
  groupSchema,
  invoiceSchema,
  lessonSchema,
  lineItemSchema,
  looseIdSchema,
  paymentSchema,
  practiceAttemptSchema,
  practiceSchema,
  priceSchema,
  productSchema,
  profileSchema,
  schoolSchema,
  statesSchema,
  titleStateSchema,
  userSchema,
  userWithProfileSchema,
  utmParamsSchema,
} from './entities.js';
export type {
  Access,
  AccessMeta,
  Acquiring,
  Avatar,
  Certificate,
  Course,
  Currency,
  KnownCurrency,
  Discount,
  Group,
  Invoice,
  Lesson,
  LineItem,
  LooseId,
  OpenUnion,
  Payment,
  Practice,
  PracticeAttempt,
  Price,
  Product,
  Profile,
  School,
  States,
  TitleState,
  User,
  UserWithProfile,
  UtmParams,
} from './entities.js';

export { certificateIssuedDataSchema } from './certificate-issued.js';
export { courseCompletedDataSchema } from './course-completed.js';
export { courseLessonPracticeCompletedDataSchema } from './course-lesson-practice-completed.js';
export {
  courseProgressChangedDataSchema,
  LESSON_PROGRESS_STATUSES,
  lessonProgressStatusSchema,
} from './course-progress-changed.js';
export { paymentCompletedDataSchema } from './payment-completed.js';
export { productEnrolledByInviteLinkDataSchema } from './product-enrolled-by-invite-link.js';
export { productEnrolledToFreeDataSchema } from './product-enrolled-to-free.js';
export { productEnrolledViaLmsDataSchema } from './product-enrolled-via-lms.js';
export { productEnrolledViaPaymentDataSchema } from './product-enrolled-via-payment.js';
export { userAcquaintedDataSchema } from './user-acquainted.js';
export { userCreatedViaLmsDataSchema } from './user-created-via-lms.js';
export { userSignedUpDataSchema } from './user-signed-up.js';
export { userTgConnectedDataSchema } from './user-tg-connected.js';

export type { CertificateIssuedData } from './certificate-issued.js';
export type { CourseCompletedData } from './course-completed.js';
export type { CourseLessonPracticeCompletedData } from './course-lesson-practice-completed.js';
export type { CourseProgressChangedData, LessonProgressStatus } from './course-progress-changed.js';
export type { PaymentCompletedData } from './payment-completed.js';
export type { ProductEnrolledByInviteLinkData } from './product-enrolled-by-invite-link.js';
export type { ProductEnrolledToFreeData } from './product-enrolled-to-free.js';
export type { ProductEnrolledViaLmsData } from './product-enrolled-via-lms.js';
export type { ProductEnrolledViaPaymentData } from './product-enrolled-via-payment.js';
export type { UserAcquaintedData } from './user-acquainted.js';
export type { UserCreatedViaLmsData } from './user-created-via-lms.js';
export type { UserSignedUpData } from './user-signed-up.js';
export type { UserTgConnectedData } from './user-tg-connected.js';

// Validating the `data` of a fixed-contract event on the hot path: the validator generated from
// the bundled schema first (`data-validators.generated.ts`), Zod for the issues of a payload
// that fails it, and Zod alone for a schema a receiver's `schemas` option put in its place.

/** The data to hand to handlers, or the Zod issues that reject it. */
export type DataValidation =
  { ok: true; data: Record<string, unknown> } | { ok: false; issues: PayloadIssue[] };

/**
 * Validate `data` against the schema of `name`. A payload that passes is handed on as parsed:
 * every event schema is a loose object without defaults or transforms, so Zod's output would
 * be a copy equal to it. One that fails is parsed by Zod, which has the last word.
 */
export function validateEventData(
  name: FixedEventName,
  data: Record<string, unknown>,
  schema: z.ZodType = eventDataSchemas[name],
): DataValidation {
  if (schema === eventDataSchemas[name] && DATA_VALIDATORS[name](data)) return { ok: true, data };
  const result = schema.safeParse(data);
  if (result.success) return { ok: true, data: result.data as Record<string, unknown> };
  return {
    ok: false,
    issues: result.error.issues.map(({ path, code, message }) => ({ path, code, message })),
  };
}
