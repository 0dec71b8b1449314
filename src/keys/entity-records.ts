/**
 * Reconciliation's records (docs/reconcile.md): which entities a webhook or a reconcile run
 * handled, kept in the receiver's store under `recordKeyOf` keys, among the idempotency keys.
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

import { recordKeyOf } from './delivery-key.js';
import { enrollmentKeyOf, entityOf, type EntityKind } from '../platform/entity-of.js';

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
