/**
 * The keys a delivery holds in the idempotency store, and an inbox job is named by: one function
 * per kind of key, so no two kinds can ever meet.
 *
 * - A delivery without a tenant holds its idempotencyKey as it is (the keys earlier versions
 *   stored are still found after an upgrade), unless it starts with `~`: then it is escaped with
 *   one more `~`.
 * - A delivery of a tenant (many schools on one endpoint, docs/tenants.md) holds
 *   `~["tenant",<tenant>,<idempotencyKey>]`: the same idempotencyKey under two tenants is two
 *   events.
 * - A worker's run of a stored delivery holds `~["run",<its delivery's key>]`, apart from the
 *   delivery's own key (completed when it was stored).
 * - The entity an event is about (entity-of.ts), whose newest version the ordering guard keeps,
 *   is `~["entity",<tenant or null>,<entity key>]`: the same entity under two tenants is two
 *   entities, and no entity key is ever a delivery's or a run's.
 *
 * A key of the first kind never starts with `~[`, and JSON tells any two lists of strings apart
 * (lone surrogates and U+0000 included: `JSON.stringify` escapes them), so two different
 * deliveries never hold one key. The stores then keep each key faithfully (storage-key.ts).
 *
 * Reconciliation's records (docs/reconcile.md) say which entities a webhook or a reconcile run
 * handled, kept in the receiver's store under `recordKeyOf` keys, among the idempotency keys;
 * {@link recordOf} says which record a delivery takes.
 *
 * - A delivery about an entity the platform lists (an invoice, an access, a certificate, a user:
 *   entity-of.ts) takes the entity's record in its claim, with its key, and completes it
 *   `webhook` with its key (in the handlers' transaction on `postgresStore`), or when it is
 *   queued in an inbox. So no reconciler recovers it meanwhile, and none does afterwards.
 * - An enrollment without `access` names no access, so it is recorded under its user and product
 *   (`enrollment:<user>:<product>`); a run checks both records of a listed access.
 * - A reconcile run claims an entity's records as a delivery claims its key, and completes them
 *   `reconciled`: a webhook that comes later for that entity runs nothing (`200 duplicate`).
 * - Webhooks among themselves stay deduplicated by their idempotencyKey alone: two events about
 *   one access (ProductEnrolledToFree, then ProductEnrolledByInviteLink) both run.
 * @module
 */

import { enrollmentKeyOf, entityOf, type EntityKind } from '../platform/entity-of.js';

/** What starts every key derived here; a plain idempotencyKey that starts with it is escaped. */
const DERIVED = '~';

/**
 * U+0000, or a surrogate that is not half of a pair (matched on code units: no `u` flag): what
 * PostgreSQL refuses, and what ioredis and pg cannot send as it is (src/stores/storage-key.ts).
 */
export const UNSTORABLE_CHARACTER =
  /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * A tenant as a message or a line shows it: JSON-quoted (control characters escaped), cut after
 * 100 code units. The receiver's errors, the secret lookup's and the CLI's all show it so.
 */
export function quotedTenant(tenant: string): string {
  return JSON.stringify(tenant.length > 100 ? `${tenant.slice(0, 100)}…` : tenant);
}

/** The longest tenant name, in UTF-16 code units: a school's id or slug, far under any store's limit. */
export const MAX_TENANT_LENGTH = 256;

/**
 * Whether a route's tenant can name a tenant: not empty, at most {@link MAX_TENANT_LENGTH} code
 * units, no U+0000 and no lone surrogate, so every store and inbox keeps it as it is and gives it
 * back to the worker unchanged. Any other is answered 404 `unknown_tenant`, before any lookup.
 */
export function isTenantName(tenant: string): boolean {
  return tenant !== '' && tenant.length <= MAX_TENANT_LENGTH && !UNSTORABLE_CHARACTER.test(tenant);
}

/**
 * The key a delivery claims: its idempotencyKey, scoped to its tenant when it has one.
 *
 * @example
 * ```ts
 * deliveryKeyOf('8b0c6a4e-…', undefined); // '8b0c6a4e-…'
 * deliveryKeyOf('8b0c6a4e-…', 'school-a'); // '~["tenant","school-a","8b0c6a4e-…"]'
 * ```
 */
export function deliveryKeyOf(idempotencyKey: string, tenant: string | undefined): string {
  if (tenant !== undefined) return framed('tenant', tenant, idempotencyKey);
  return idempotencyKey.startsWith(DERIVED) ? DERIVED + idempotencyKey : idempotencyKey;
}

/**
 * The key a worker's run of a stored delivery holds in the store: the delivery's own key was
 * completed when the delivery was stored, so its runs need one of their own.
 */
export function runKeyOf(deliveryKey: string): string {
  return DERIVED + JSON.stringify(['run', deliveryKey]);
}

/**
 * The key under which a store keeps the newest processed version of an entity (its
 * `EventEntity.key`, entity-of.ts), scoped to the tenant when there is one.
 *
 * @example
 * ```ts
 * entityKeyOf('progress:1937465:73120:884213', undefined); // '~["entity",null,"progress:1937465:73120:884213"]'
 * entityKeyOf('invoice:877051', 'school-a'); // '~["entity","school-a","invoice:877051"]'
 * ```
 */
export function entityKeyOf(entity: string, tenant: string | undefined): string {
  return framed('entity', tenant, entity);
}

/**
 * The key under which a store records that an entity (its `EventEntity.key`, entity-of.ts) was
 * handled, by a webhook or by reconciliation (src/reconcile), scoped to the tenant when there is
 * one. It lives among the idempotency keys: the reconciler claims it as a delivery claims its key.
 *
 * @example
 * ```ts
 * recordKeyOf('invoice:877051', undefined); // '~["record",null,"invoice:877051"]'
 * ```
 */
export function recordKeyOf(entity: string, tenant: string | undefined): string {
  return framed('record', tenant, entity);
}

/**
 * What JSON.stringify writes escaped in a string: `"`, `\`, a control character, or a surrogate
 * (it escapes a lone one only; telling a pair apart is left to JSON.stringify itself).
 */
// eslint-disable-next-line no-control-regex -- control characters are what JSON escapes
const ESCAPED_IN_JSON = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * `~` and the JSON of `[kind, first ?? null, second]`, written directly when neither string has a
 * character JSON escapes: the same string JSON.stringify gives (a speed trick: docs/decisions.md
 * says what it saves). A test checks both paths against JSON.stringify.
 */
function framed(kind: string, first: string | undefined, second: string): string {
  if (ESCAPED_IN_JSON.test(second) || (first !== undefined && ESCAPED_IN_JSON.test(first))) {
    return DERIVED + JSON.stringify([kind, first ?? null, second]);
  }
  return first === undefined
    ? `${DERIVED}["${kind}",null,"${second}"]`
    : `${DERIVED}["${kind}","${first}","${second}"]`;
}

/** A record's fingerprint once a webhook's handlers (or its inbox) took the entity. */
export const RECORDED_BY_WEBHOOK = 'webhook';
/** A record's fingerprint once a reconcile run recovered the entity. */
export const RECOVERED_BY_RUN = 'reconciled';

/** The kinds of entity the platform's lists hold: the only ones a reconciler can recover. */
const LISTED_KINDS: ReadonlySet<EntityKind> = new Set<EntityKind>([
  'invoice',
  'access',
  'certificate',
  'user',
]);

/** The enrollment events: about an access, or, when they carry none, about a user and a product. */
const ENROLLMENTS: ReadonlySet<string> = new Set([
  'ProductEnrolledToFree',
  'ProductEnrolledViaLms',
  'ProductEnrolledViaPayment',
  'ProductEnrolledByInviteLink',
]);

/**
 * The record key a delivery of `event` takes: its entity's, when the platform lists such
 * entities; an enrollment's without `access`, under its user and product; undefined otherwise
 * (course progress and completions have no list, so no record).
 */
export function recordOf(
  event: { readonly event: string; readonly data?: unknown },
  tenant: string | undefined,
): string | undefined {
  const entity = entityOf(event);
  if (entity !== undefined) {
    return LISTED_KINDS.has(entity.kind) ? recordKeyOf(entity.key, tenant) : undefined;
  }
  if (!ENROLLMENTS.has(event.event)) return undefined;
  const enrollment = enrollmentKeyOf(idOf(event.data, 'user'), idOf(event.data, 'product'));
  return enrollment === undefined ? undefined : recordKeyOf(enrollment, tenant);
}

/**
 * The second record of a listed access: the one an enrollment webhook without `access` took for
 * the same user and product (`enrollment:<user>:<product>`), if the item names both.
 */
export function enrollmentRecordOf(
  userId: unknown,
  productId: unknown,
  tenant: string | undefined,
): string | undefined {
  const enrollment = enrollmentKeyOf(userId, productId);
  return enrollment === undefined ? undefined : recordKeyOf(enrollment, tenant);
}

/** The `id` of `data[name]`, if `data[name]` is an object. */
function idOf(data: unknown, name: string): unknown {
  if (typeof data !== 'object' || data === null) return undefined;
  const value = (data as Record<string, unknown>)[name];
  return typeof value === 'object' && value !== null
    ? (value as Record<string, unknown>)['id']
    : undefined;
}
