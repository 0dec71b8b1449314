/**
 * What a reconcile run lists of each kind, in one table: the list call with its filter over the
 * window, and the id that names the item's entity as the webhook about it names it (entity-of.ts).
 * @module
 */

import type { InvalidListItem } from '../api/errors.js';
import { enrollmentRecordOf, recordKeyOf } from '../keys/delivery-key.js';
import { entityKeyFor } from '../platform/entity-of.js';
import type { ReconcileApi, ReconcileItems, ReconcileKind } from './types.js';
import type { ReconcileWindow } from './window.js';

/** Every kind, in the order a run lists them. */
export const RECONCILE_KINDS: readonly ReconcileKind[] = [
  'invoice',
  'access',
  'certificate',
  'user',
];

/** What every list call of a run takes besides its filter. */
export interface ListingOptions {
  readonly take: number;
  readonly signal?: AbortSignal;
  readonly onInvalidItem: (item: InvalidListItem) => void;
}

/** One kind: how its items are listed over a window, and the id each one is known by. */
interface Listing<K extends ReconcileKind> {
  readonly list: (
    api: ReconcileApi,
    window: ReconcileWindow,
    options: ListingOptions,
  ) => AsyncIterable<ReconcileItems[K]>;
  readonly idOf: (item: ReconcileItems[K]) => number;
  /** The item's second record, if its kind has one (an access: its enrollment's). */
  readonly alsoRecordedAs?: (
    item: ReconcileItems[K],
    tenant: string | undefined,
  ) => string | undefined;
}

/** A date of a window as the lists take it. */
const at = (time: number): Date => new Date(time);

const LISTINGS: { readonly [K in ReconcileKind]: Listing<K> } = {
  invoice: {
    // Listed by issue date: a buyer may pay days later, so the window reaches lookbackMs back.
    list: (api, { invoicesFrom, to }, options) =>
      api.invoices({ paid: true, createdAt: { from: at(invoicesFrom), to: at(to) }, ...options }),
    idOf: (invoice) => invoice.invoiceId,
  },
  access: {
    list: (api, { from, to }, options) =>
      api.productAccesses({ createdAt: { from: at(from), to: at(to) }, ...options }),
    idOf: (access) => access.accessId,
    // An enrollment webhook without `access` recorded its user and product (`recordOf` in delivery-key.ts).
    alsoRecordedAs: (access, tenant) =>
      enrollmentRecordOf(access.user.id, access.productId, tenant),
  },
  certificate: {
    list: (api, { from, to }, options) =>
      api.certificates({ issuedAt: { from: at(from), to: at(to) }, ...options }),
    idOf: (certificate) => certificate.certificateId,
  },
  user: {
    list: (api, { from, to }, options) =>
      api.users({ createdAt: { from: at(from), to: at(to) }, ...options }),
    idOf: (user) => user.id,
  },
};

/** An item listed, with what names it. */
export interface ListedEntity<K extends ReconcileKind> {
  readonly item: ReconcileItems[K];
  /** Its id as text. */
  readonly id: string;
  /** Its entity's key (`invoice:877051`), as `entityOf` gives it for the webhook about it. */
  readonly entity: string;
  /**
   * Its records in the store (`recordKeyOf`): its entity's first, then any other a webhook about
   * it may have taken instead (an access's enrollment). Any of them done: it was handled.
   */
  readonly records: readonly string[];
}

/** Every item of `kind` listed over `window`, with its id, entity key and records. */
export async function* listEntities<K extends ReconcileKind>(
  kind: K,
  api: ReconcileApi,
  window: ReconcileWindow,
  options: ListingOptions,
  tenant: string | undefined,
): AsyncGenerator<ListedEntity<K>, void, undefined> {
  const listing = LISTINGS[kind] as Listing<K>;
  for await (const item of listing.list(api, window, options)) {
    const id = listing.idOf(item);
    // The schemas make every id an integer: an entity key always exists for it.
    const entity = entityKeyFor(kind, id)!;
    const also = listing.alsoRecordedAs?.(item, tenant);
    const records = [recordKeyOf(entity, tenant), ...(also === undefined ? [] : [also])];
    yield { item, id: String(id), entity, records };
  }
}
