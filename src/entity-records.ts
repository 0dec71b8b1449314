/**
 * Reconciliation's records (docs/reconcile.md): which entities a webhook or a reconcile run
 * handled, kept in the receiver's store under `recordKeyOf` keys, among the idempotency keys.
 *
 * - A delivery about an entity the platform lists (an invoice, an access, a certificate, a user:
 *   entity-of.ts) takes the entity's record before its handlers run and marks it `webhook` when
 *   they succeed (in the handlers' transaction on `postgresStore`), or when it is queued in an
 *   inbox. So no reconciler recovers it meanwhile, and none does afterwards.
 * - A reconcile run claims the same record as a delivery claims its key, and completes it
 *   `reconciled`: a webhook that comes later for that entity runs nothing (`200 duplicate`).
 * - Webhooks among themselves stay deduplicated by their idempotencyKey alone: two events about
 *   one access (ProductEnrolledToFree, then ProductEnrolledByInviteLink) both run.
 * @module
 */

import { recordKeyOf } from './delivery-key.js';
import { entityOf, type EntityKind } from './entity-of.js';
import { isPromiseLike, nowOrLater, type MaybePromise } from './run-steps.js';
import type { ClaimResult, HeldKey, IdempotencyStore, RecordClaimResult } from './stores/types.js';

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

/**
 * The record key of the entity `event` is about, when the platform lists such entities;
 * undefined otherwise (course progress and completions have no list, so no record).
 */
export function recordOf(
  event: { readonly event: string; readonly data?: unknown },
  tenant: string | undefined,
): string | undefined {
  const entity = entityOf(event);
  return entity !== undefined && LISTED_KINDS.has(entity.kind)
    ? recordKeyOf(entity.key, tenant)
    : undefined;
}

/** The waits before each new try of a record another delivery holds: 620 ms in all. */
const RECLAIM_DELAYS_MS = [20, 40, 80, 160, 320] as const;

/** A record a delivery holds while its handlers run. */
export interface HeldRecord {
  readonly key: string;
  readonly token: string;
}

/** The record methods of a store: its own, or made of its key methods. */
type RecordMethods = Required<
  Pick<IdempotencyStore, 'claimRecord' | 'completeRecord' | 'releaseRecord'>
>;

/** Whether `store` has its own record methods (all three). */
function hasRecordMethods(store: IdempotencyStore): store is IdempotencyStore & RecordMethods {
  return (
    typeof store.claimRecord === 'function' &&
    typeof store.completeRecord === 'function' &&
    typeof store.releaseRecord === 'function'
  );
}

/**
 * A store's record methods. A store without its own (memoryStore, redisStore, a store of your
 * own) gets them made of `claim`, `complete` and `release` on the record's key: right for any
 * store whose claim opens no transaction.
 */
export function recordMethodsOf(store: IdempotencyStore): RecordMethods {
  if (hasRecordMethods(store)) return store;
  return {
    claimRecord(record, leaseMs) {
      const answer = store.claim(record, leaseMs);
      return isPromiseLike(answer) ? Promise.resolve(answer).then(asRecord) : asRecord(answer);
    },
    completeRecord: (record, token, ttlMs) =>
      store.complete(record, token, ttlMs, RECORDED_BY_WEBHOOK),
    releaseRecord: (record, token) => store.release(record, token),
  };
}

/** A claim of a record's key, read as a record's claim. */
function asRecord(answer: ClaimResult): RecordClaimResult {
  if (answer.state === 'claimed') return { state: 'claimed', token: answer.token };
  if (answer.state === 'in_flight') return answer;
  return answer.fingerprint === RECOVERED_BY_RUN ? { state: 'recovered' } : { state: 'recorded' };
}

/** What {@link EntityRecords} reads of the receiver's settings. */
export interface EntityRecordsConfig {
  readonly store: IdempotencyStore;
  readonly leaseMs: number;
  /** How long a record is kept. */
  readonly recordTtlMs: number;
}

/** The records one receiver writes. */
export class EntityRecords {
  readonly #methods: RecordMethods;
  readonly #leaseMs: number;
  readonly #ttlMs: number;

  constructor({ store, leaseMs, recordTtlMs }: EntityRecordsConfig) {
    this.#methods = recordMethodsOf(store);
    this.#leaseMs = leaseMs;
    this.#ttlMs = recordTtlMs;
  }

  /** Take `record` for the delivery that holds `held`. */
  claim(record: string, held: HeldKey): MaybePromise<RecordClaimResult> {
    return nowOrLater(
      () => this.#methods.claimRecord(record, this.#leaseMs, held),
      (answer) => (answer.state === 'in_flight' ? this.#claimAgain(record, held) : answer),
    );
  }

  /**
   * Another delivery about the entity holds its record (two events of one access at once), or a
   * reconcile run does: try again a few times, about 0.6 s in all, so the second of two events
   * runs now rather than at the platform's retry 11 minutes later; still held then: `in_flight`.
   */
  async #claimAgain(record: string, held: HeldKey): Promise<RecordClaimResult> {
    for (const delayMs of RECLAIM_DELAYS_MS) {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      const answer = await this.#methods.claimRecord(record, this.#leaseMs, held);
      if (answer.state !== 'in_flight') return answer;
    }
    return { state: 'in_flight' };
  }

  /** The handlers succeeded (or the inbox took the delivery): the entity is handled. */
  complete({ key, token }: HeldRecord): MaybePromise<void> {
    return this.#methods.completeRecord(key, token, this.#ttlMs);
  }

  /** The handlers failed: free the record, so a retry or a reconcile run may take it. */
  release({ key, token }: HeldRecord): MaybePromise<void> {
    return this.#methods.releaseRecord(key, token);
  }
}
