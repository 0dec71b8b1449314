/**
 * The entity each event is about: one table, read by the receiver's ordering guard (`latestOnly`)
 * and the stores (docs/receiving.md#the-newest-state-only).
 *
 * | event | entity key |
 * | - | - |
 * | PaymentCompleted | `invoice:<data.payment.invoice.id>` |
 * | ProductEnrolledToFree, ProductEnrolledViaLms, ProductEnrolledViaPayment, ProductEnrolledByInviteLink | `access:<data.access.id>` (no `access`: no entity) |
 * | CertificateIssued | `certificate:<data.certificate.id>` |
 * | UserSignedUp, UserCreatedViaLms | `user:<data.user.id>` |
 * | CourseProgressChanged | `progress:<user.id>:<course.id>:<lessonId>` (`…:<course.id>` without a lessonId) |
 * | CourseCompleted | `completion:<user.id>:<course.id>` |
 * | any other | none |
 *
 * A payload is read tolerantly: a field the key needs that is absent, null or of no usable type
 * (an id is a finite number or a non-empty string) gives no entity, never a throw.
 * @module
 */

/** What an entity is: the kinds of the table in {@link entityOf}. */
export type EntityKind = 'invoice' | 'access' | 'certificate' | 'user' | 'progress' | 'completion';

/** The entity an event is about (see {@link entityOf}). */
export interface EventEntity {
  /** What it is: an invoice, a product access, a course progress… */
  readonly kind: EntityKind;
  /** Its id within its kind: one id, or several joined by `:` (`<user>:<course>:<lesson>`). */
  readonly id: string;
  /** `<kind>:<id>`: the same for every event about this entity, different for any other. */
  readonly key: string;
}

/** What {@link entityOf} reads: an event, an envelope or a stored delivery's parsed body. */
export interface EntityEventInput {
  readonly event: string;
  readonly data?: unknown;
}

/** One row of the table: the entity's kind, and the parts of its id read from `data`. */
interface EntityRow {
  readonly kind: EntityKind;
  /** The id's parts (undefined for a part the payload lacks), or undefined for no entity. */
  readonly idOf: (data: unknown) => readonly (string | undefined)[] | undefined;
}

const invoice: EntityRow = { kind: 'invoice', idOf: (data) => [idAt(data, 'payment', 'invoice')] };
const access: EntityRow = { kind: 'access', idOf: (data) => [idAt(data, 'access')] };
const certificate: EntityRow = { kind: 'certificate', idOf: (data) => [idAt(data, 'certificate')] };
const user: EntityRow = { kind: 'user', idOf: (data) => [idAt(data, 'user')] };
const progress: EntityRow = {
  kind: 'progress',
  idOf(data) {
    const ids = [idAt(data, 'user'), idAt(data, 'course')];
    const lessonId = fieldOf(data, 'lessonId');
    // No lessonId: the course's progress as a whole. One of no usable type: no entity.
    if (lessonId === undefined || lessonId === null) return ids;
    const lesson = idPart(lessonId);
    return lesson === undefined ? undefined : [...ids, lesson];
  },
};
const completion: EntityRow = {
  kind: 'completion',
  idOf: (data) => [idAt(data, 'user'), idAt(data, 'course')],
};

/** The events that are about an entity (when their payload names it): `latestOnly` takes these. */
export type EntityEventName =
  | 'PaymentCompleted'
  | 'ProductEnrolledToFree'
  | 'ProductEnrolledViaLms'
  | 'ProductEnrolledViaPayment'
  | 'ProductEnrolledByInviteLink'
  | 'CertificateIssued'
  | 'UserSignedUp'
  | 'UserCreatedViaLms'
  | 'CourseProgressChanged'
  | 'CourseCompleted';

/** The table: the entity of each event that has one. */
const ENTITY_TABLE: ReadonlyMap<string, EntityRow> = new Map<EntityEventName, EntityRow>([
  ['PaymentCompleted', invoice],
  ['ProductEnrolledToFree', access],
  ['ProductEnrolledViaLms', access],
  ['ProductEnrolledViaPayment', access],
  ['ProductEnrolledByInviteLink', access],
  ['CertificateIssued', certificate],
  ['UserSignedUp', user],
  ['UserCreatedViaLms', user],
  ['CourseProgressChanged', progress],
  ['CourseCompleted', completion],
]);

/**
 * The entity an event is about, or undefined for an event of no entity or a payload without the
 * ids its key needs. Events about one entity give one key whatever their name (the four
 * enrollments of one access give `access:<id>`), and an id sent as a number or as its digits in a
 * string gives the same key.
 *
 * @example
 * ```ts
 * import { entityOf } from 'schoolhooks';
 *
 * entityOf(event); // CourseProgressChanged: { kind: 'progress', id: '1937465:73120:884213', key: 'progress:1937465:73120:884213' }
 * entityOf({ event: 'UserSignedIn', data: {} }); // undefined
 * ```
 */
export function entityOf(event: EntityEventInput): EventEntity | undefined {
  const row = ENTITY_TABLE.get(event.event);
  const parts = row?.idOf(event.data);
  if (row === undefined || parts === undefined || parts.includes(undefined)) return undefined;
  const id = parts.join(':');
  return { kind: row.kind, id, key: `${row.kind}:${id}` };
}

/**
 * The key `entityOf` gives the events about the entity of `kind` whose id is `id` (an invoice's
 * `invoiceId`, an access's `accessId`…), for an entity of one id; undefined for an id of no usable
 * type. What a reconciler reads from a list item names the same entity as the webhook about it.
 *
 * @example
 * ```ts
 * entityKeyFor('invoice', 877051); // 'invoice:877051', as entityOf gives for its PaymentCompleted
 * ```
 */
export function entityKeyFor(
  kind: Exclude<EntityKind, 'progress' | 'completion'>,
  id: number | string,
): string | undefined {
  const part = idPart(id);
  return part === undefined ? undefined : `${kind}:${part}`;
}

/**
 * The key an enrollment without `access` is recorded under, for reconciliation
 * (`recordOf` in src/keys/delivery-key.ts): `enrollment:<user>:<product>`, its ids escaped as every entity's are;
 * undefined when either id is unusable.
 */
export function enrollmentKeyOf(userId: unknown, productId: unknown): string | undefined {
  const user = idPart(userId);
  const product = idPart(productId);
  return user === undefined || product === undefined ? undefined : `enrollment:${user}:${product}`;
}

/** Whether events named `name` are about an entity (when their payload names it). */
export function hasEntity(name: string): name is EntityEventName {
  return ENTITY_TABLE.has(name);
}

/** The id of the object at `path` in `data` (`data.payment.invoice.id`), if usable. */
function idAt(data: unknown, ...path: readonly string[]): string | undefined {
  let value = data;
  for (const name of path) value = fieldOf(value, name);
  return idPart(fieldOf(value, 'id'));
}

/** A field of an object, or undefined when `value` is no object. */
function fieldOf(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null
    ? (value as Record<string, unknown>)[name]
    : undefined;
}

/**
 * An id as a part of a key: a finite number as its digits, a non-empty string with `%` and `:`
 * percent-escaped (so the parts joined by `:` never read two ways); anything else is unusable.
 */
function idPart(value: unknown): string | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined;
  if (typeof value !== 'string' || value === '') return undefined;
  return value.replace(/[%:]/g, (c) => (c === '%' ? '%25' : '%3A'));
}
