/**
 * A delivery's one claim and one settle (docs/stores.md): the claim takes its key, its entity's
 * record (reconciliation) and its entity's version (`latestOnly`) in one store call, and the
 * settle ends all of them in one more. Here too the answers a claim can end a delivery with:
 * `duplicate`, `conflict`, `in_flight`, `superseded`, `store_unavailable`.
 * @module
 */

import { Ending } from './ending.js';
import { RECORDED_BY_WEBHOOK, RECOVERED_BY_RUN, recordOf } from './entity-records.js';
import {
  IdempotencyConflictError,
  StoreUnavailableError,
  withCauses,
  type SchoolhooksError,
} from './errors.js';
import type { WebhookEvent } from './events/index.js';
import { versionToTake } from './ordering-guard.js';
import type { Parsed } from './pipeline.js';
import type {
  Claim,
  ClaimRequest,
  Completion,
  HeldClaim,
  IdempotencyStore,
  Settlement,
} from './stores/types.js';

/** A delivery whose claim holds its key (and what else it asked for). */
export interface Claimed<T extends Parsed> {
  readonly delivery: T;
  readonly claim: HeldClaim;
}

/** What a claim asks for beside the key. */
export interface ClaimWants {
  /** The entity's record, for reconciliation (an HTTP delivery; a stored run's was taken when it was stored). */
  readonly records: boolean;
  /** The event the ordering guard reads, when its handlers may be `latestOnly` (not before an inbox). */
  readonly event: WebhookEvent<string> | undefined;
}

/** What {@link DeliveryClaims} reads of the receiver's settings. */
export interface DeliveryClaimsConfig {
  readonly store: IdempotencyStore;
  readonly leaseMs: number;
  readonly dedupTtlMs: number;
  /** How long a handled entity's record is kept; undefined: deliveries record nothing. */
  readonly recordTtlMs?: number | undefined;
  readonly latestOnly?: ((event: string) => boolean) | undefined;
  /** The receiver's own secrets, for an error to hide should its cause's message hold one. */
  readonly secrets: readonly string[];
  readonly reportError: (error: SchoolhooksError) => void;
}

/**
 * The waits before each new claim while another delivery holds the entity's record (two events of
 * one access at once): 620 ms in all, so the second runs now rather than at the platform's retry
 * 11 minutes later.
 */
const RECLAIM_DELAYS_MS = [20, 40, 80, 160, 320] as const;

/** The claims and settles of one receiver's deliveries. */
export class DeliveryClaims {
  readonly #config: DeliveryClaimsConfig;
  /** What a delivery's records are completed with, or undefined when it records none. */
  readonly #records: Completion['records'];

  constructor(config: DeliveryClaimsConfig) {
    this.#config = config;
    const { recordTtlMs } = config;
    this.#records =
      recordTtlMs === undefined
        ? undefined
        : { fingerprint: RECORDED_BY_WEBHOOK, ttlMs: recordTtlMs };
  }

  /**
   * Claim `delivery`'s key, with its entity's record and version when `wants` asks and the event
   * has them: the claim, or the delivery's ending (`duplicate`, `conflict`, `in_flight`,
   * `superseded`, `store_unavailable`).
   */
  async take<T extends Parsed>(
    delivery: T,
    tenant: string | undefined,
    wants: ClaimWants,
  ): Promise<Claimed<T> | Ending> {
    const request = this.#requestOf(delivery, tenant, wants);
    let claim: Claim;
    try {
      claim = await this.#claim(request);
    } catch (cause) {
      const error = this.storeFailed('claim the key', cause);
      return Ending.failed('store_unavailable', delivery.envelope, error);
    }
    if (claim.state === 'claimed') return this.#held({ delivery, claim });
    if (claim.state === 'in_flight') return Ending.quiet('in_flight', delivery.envelope);
    return this.#done(delivery, claim.fingerprint);
  }

  /**
   * Mark what the claim holds done; a failure is reported, never thrown: the handlers succeeded,
   * so the delivery is still acknowledged.
   */
  async complete(claimed: Claimed<Parsed>): Promise<void> {
    await this.#settleReported(claimed, 'complete', 'record completion');
  }

  /** Give back what the claim holds; a failure is reported (its lease runs out by itself). */
  async release(claimed: Claimed<Parsed>): Promise<void> {
    await this.#settleReported(claimed, 'release', 'release the key');
  }

  /** {@link complete}, then end with `ending`. */
  async completeThen(claimed: Claimed<Parsed>, ending: Ending): Promise<Ending> {
    await this.complete(claimed);
    return ending;
  }

  /** {@link release}, then end with `ending`. */
  async releaseThen(claimed: Claimed<Parsed>, ending: Ending): Promise<Ending> {
    await this.release(claimed);
    return ending;
  }

  /**
   * Complete a claim that holds the handlers' transaction: the completion is their commit, so
   * unlike {@link complete} a failure is not acknowledged but answered 503 for a retry (the
   * handlers' writes are gone with it).
   */
  async commitThen(claimed: Claimed<Parsed>, ending: Ending): Promise<Ending> {
    try {
      await this.#config.store.settle(claimed.claim, 'complete');
      return ending;
    } catch (cause) {
      const error = this.storeFailed("commit the handlers' transaction", cause);
      return Ending.failed('store_unavailable', claimed.delivery.envelope, error);
    }
  }

  /** The store failed to `what`: the error says so, and what its cause chain says. */
  storeFailed(what: string, cause: unknown): StoreUnavailableError {
    const why = withCauses(`the idempotency store failed to ${what}`, cause, this.#config.secrets);
    return new StoreUnavailableError(why, { cause });
  }

  /** The store's claim; while another delivery holds the entity's record, a few more tries. */
  async #claim(request: ClaimRequest): Promise<Claim> {
    const { store } = this.#config;
    let claim = await store.claim(request);
    for (const delayMs of RECLAIM_DELAYS_MS) {
      if (claim.state !== 'in_flight' || claim.held !== 'record') return claim;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      claim = await store.claim(request);
    }
    return claim;
  }

  /** What the delivery asks the store for. */
  #requestOf(delivery: Parsed, tenant: string | undefined, wants: ClaimWants): ClaimRequest {
    const { leaseMs, dedupTtlMs } = this.#config;
    const records = this.#records;
    const record =
      records !== undefined && wants.records ? recordOf(delivery.envelope, tenant) : undefined;
    const version =
      wants.event === undefined
        ? undefined
        : versionToTake(wants.event, delivery.timestampMs, tenant, this.#config);
    return {
      key: delivery.key,
      leaseMs,
      completion: { fingerprint: delivery.fingerprint, ttlMs: dedupTtlMs, records },
      records: record === undefined ? undefined : [record],
      version,
    };
  }

  /**
   * A claim that holds the key: the delivery's, unless a reconcile run already recovered its
   * entity (`duplicate`) or a newer state of it was applied (`superseded`): then the key is
   * completed and no handler runs.
   */
  async #held<T extends Parsed>(claimed: Claimed<T>): Promise<Claimed<T> | Ending> {
    const { claim, delivery } = claimed;
    const recovered = claim.records.some(
      (record) => record.state === 'done' && record.fingerprint === RECOVERED_BY_RUN,
    );
    if (recovered) return this.completeThen(claimed, Ending.quiet('duplicate', delivery.envelope));
    if (claim.superseded) {
      return this.completeThen(claimed, Ending.quiet('superseded', delivery.envelope));
    }
    return claimed;
  }

  /**
   * A key already done: `duplicate` with the same body (under any of the delivery's secrets: the
   * list may have been reordered since, as in a rotation), `conflict` with another.
   */
  async #done(delivery: Parsed, remembered: string | undefined): Promise<Ending> {
    const { envelope, fingerprint } = delivery;
    if (remembered === undefined || remembered === fingerprint) {
      return Ending.quiet('duplicate', envelope);
    }
    const others = await delivery.verifier.otherFingerprints(delivery.body);
    return others.includes(remembered)
      ? Ending.quiet('duplicate', envelope)
      : Ending.failed('conflict', envelope, new IdempotencyConflictError(envelope.idempotencyKey));
  }

  /** Settle the claim; a failure is reported, not thrown. */
  async #settleReported({ claim }: Claimed<Parsed>, how: Settlement, what: string): Promise<void> {
    try {
      await this.#config.store.settle(claim, how);
    } catch (cause) {
      this.#config.reportError(this.storeFailed(what, cause));
    }
  }
}
