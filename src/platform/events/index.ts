/**
 * The registry of webhook events: which names have a fixed `data` contract (docs/platform.md#events), their
 * schemas, the envelope (docs/platform.md#envelope: its schema, and the parse every delivery's body
 * goes through, beside it so the two accept the same bodies) and the types handlers are written
 * against.
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
import { MINUTE } from '../platform-contract.js';
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

// The envelope, parsed from the raw body (docs/platform.md#envelope).

/** A parsed envelope, with the text it was parsed from. */
export interface ParsedEnvelope {
  ok: true;
  envelope: Envelope;
  timestampMs: number;
  /** The body as text: the UTF-8 decoding of its bytes, which gives them back exactly. */
  text: string;
}

/** The envelope, or why the body is not one (the reason never quotes the body). */
export type EnvelopeResult = ParsedEnvelope | { ok: false; reason: string };

// Fatal: bytes that are not UTF-8 make the body malformed. A lenient decoder would turn each of
// them into U+FFFD, so two keys differing by such a byte would read as one and the second be a
// 409 `conflict`, never processed. On Node this decoder is as fast as Buffer's toString.
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parse a verified body. Hand-written checks rather than a schema: this runs on every request
 * and four type checks are all the envelope needs.
 */
export function parseEnvelope(body: Uint8Array | string): EnvelopeResult {
  let text: string;
  if (typeof body === 'string') text = body;
  else {
    try {
      text = utf8.decode(body);
    } catch {
      return { ok: false, reason: 'body is not valid UTF-8' };
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'body is not valid JSON' };
  }
  if (!isRecord(value)) return { ok: false, reason: 'body is not a JSON object' };
  const { event, timestamp, idempotencyKey, data } = value;
  if (typeof event !== 'string' || event === '') {
    return { ok: false, reason: 'envelope.event must be a non-empty string' };
  }
  if (typeof idempotencyKey !== 'string' || idempotencyKey === '') {
    return { ok: false, reason: 'envelope.idempotencyKey must be a non-empty string' };
  }
  const timestampMs = typeof timestamp === 'string' ? timestampMsOf(timestamp) : undefined;
  if (timestampMs === undefined) {
    return { ok: false, reason: 'envelope.timestamp must be an RFC 3339 date-time string' };
  }
  if (!isRecord(data)) return { ok: false, reason: 'envelope.data must be a JSON object' };
  return { ok: true, envelope: value as unknown as Envelope, timestampMs, text };
}

/**
 * The envelope's `timestamp` rule, as a JSON Schema `pattern`: an RFC 3339 date-time with its
 * offset (`2026-11-01T10:00:00.000Z`, `2026-11-01T13:00:00+03:00`). The published JSON Schema
 * carries it beside `format: date-time`, which also refuses a day the month does not have; the
 * receiver checks both ({@link timestampMsOf}), so the two accept exactly the same timestamps.
 */
export const TIMESTAMP_PATTERN =
  '^(\\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])[Tt ]([01]\\d|2[0-3]):([0-5]\\d):([0-5]\\d)(\\.\\d+)?([Zz]|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)$';

const TIMESTAMP = new RegExp(TIMESTAMP_PATTERN);

/**
 * The instant of an envelope's `timestamp`, in ms since the epoch; undefined unless it matches
 * {@link TIMESTAMP_PATTERN} and names a day of its month (no 30 February).
 */
export function timestampMsOf(text: string): number | undefined {
  return commonFormMsOf(text) ?? patternMsOf(text);
}

/** `2026-11-01T10:00:00.000Z`, the form the platform sends: position by position, no pattern. */
const COMMON_FORM_LENGTH = 24;

/**
 * The instant of a timestamp in the platform's own form (`YYYY-MM-DDTHH:MM:SS.sssZ`), read
 * character by character: a quarter of the pattern's cost on every delivery. Undefined for
 * anything else, which {@link patternMsOf} then reads; it accepts nothing the pattern refuses.
 * Exported for its tests only (not from the package): it must answer that form itself.
 */
export function commonFormMsOf(text: string): number | undefined {
  if (text.length !== COMMON_FORM_LENGTH) return undefined;
  if (
    text.charCodeAt(4) !== 45 || // -
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(13) !== 58 || // :
    text.charCodeAt(16) !== 58 ||
    text.charCodeAt(19) !== 46 // .
  ) {
    return undefined;
  }
  const t = text.charCodeAt(10); // T, t or a space
  const z = text.charCodeAt(23); // Z or z
  if ((t !== 84 && t !== 116 && t !== 32) || (z !== 90 && z !== 122)) return undefined;
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hours = digits(text, 11, 2);
  const minutes = digits(text, 14, 2);
  const seconds = digits(text, 17, 2);
  const ms = digits(text, 20, 3);
  if (year < 100 || month < 1 || month > 12) return undefined;
  if (day < 1 || day > daysIn(year, month)) return undefined;
  if (hours < 0 || hours > 23 || minutes < 0 || minutes > 59) return undefined;
  if (seconds < 0 || seconds > 59 || ms < 0) return undefined;
  return Date.UTC(year, month - 1, day, hours, minutes, seconds, ms);
}

/** The number written by `length` ASCII digits at `at`; -1 if any is not a digit. */
function digits(text: string, at: number, length: number): number {
  let value = 0;
  for (let i = at; i < at + length; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/** {@link timestampMsOf} for any form {@link TIMESTAMP_PATTERN} accepts. */
function patternMsOf(text: string): number | undefined {
  const match = TIMESTAMP.exec(text);
  if (match === null) return undefined;
  const [, year, month, day, hours, minutes, seconds, fraction = '', zone = 'Z'] = match;
  const y = Number(year);
  if (Number(day) > daysIn(y, Number(month))) return undefined;
  const ms = (fraction.slice(1) + '000').slice(0, 3);
  const utc = zone === 'Z' || zone === 'z';
  if (y < 100) {
    // Date.UTC reads a year under 100 as 19xx: rewritten in the one form Date.parse must read
    // the same everywhere (ECMAScript's own).
    const offset = utc ? 'Z' : zone;
    return Date.parse(`${year}-${month}-${day}T${hours}:${minutes}:${seconds}.${ms}${offset}`);
  }
  // The fields as they are, without a string to build and parse again: a quarter of the cost.
  const offsetMinutes = utc
    ? 0
    : (zone.startsWith('-') ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)));
  return (
    Date.UTC(
      y,
      Number(month) - 1,
      Number(day),
      Number(hours),
      Number(minutes),
      Number(seconds),
      Number(ms),
    ) -
    offsetMinutes * MINUTE
  );
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;

function daysIn(year: number, month: number): number {
  if (month !== 2) return DAYS_IN_MONTH[month - 1]!;
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

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

export * from './schemas.js';

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
