/**
 * A delivery's one claim and one settle (docs/stores.md): the claim takes its key, its entity's
 * record (reconciliation) and its entity's version (`latestOnly`) in one store call, and the
 * settle ends all of them in one more. Here too the answers a claim can end a delivery with:
 * `duplicate`, `conflict`, `in_flight`, `superseded`, `store_unavailable`.
 * @module
 */

import { DeliveryOutcome } from '../receiving/delivery-outcome.js';
import { entityKeyOf, RECORDED_BY_WEBHOOK, recordOf, RECOVERED_BY_RUN } from './delivery-key.js';
import {
  IdempotencyConflictError,
  StoreUnavailableError,
  withCauses,
  type SchoolhooksError,
} from '../errors.js';
import { entityOf } from '../platform/entity-of.js';
import type { WebhookEvent } from '../platform/events/index.js';
import type { Parsed } from '../receiving/pipeline.js';
import type {
  Claim,
  ClaimRequest,
  Completion,
  HeldClaim,
  IdempotencyStore,
  Settlement,
  VersionRequest,
} from '../stores/types.js';

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
   * `superseded`, `store_unavailable`). Written with `then` rather than `async`, as the settles
   * below: they run for every delivery, and each async layer is one more promise and turn.
   */
  take<T extends Parsed>(
    delivery: T,
    tenant: string | undefined,
    wants: ClaimWants,
  ): Promise<Claimed<T> | DeliveryOutcome> {
    const request = this.#requestOf(delivery, tenant, wants);
    return this.#claimed(request).then(
      (claim) => this.#answer(delivery, request, claim, 0),
      (cause: unknown) => this.#claimFailed(delivery, cause),
    );
  }

  /**
   * Mark what the claim holds done; a failure is reported, never thrown: the handlers succeeded,
   * so the delivery is still acknowledged.
   */
  complete(claimed: Claimed<Parsed>): Promise<void> {
    return this.#settleReported(claimed, 'complete', 'record completion', undefined);
  }

  /** Give back what the claim holds; a failure is reported (its lease runs out by itself). */
  release(claimed: Claimed<Parsed>): Promise<void> {
    return this.#settleReported(claimed, 'release', 'release the key', undefined);
  }

  /** {@link complete}, then end with `ending`. */
  completeThen(claimed: Claimed<Parsed>, ending: DeliveryOutcome): Promise<DeliveryOutcome> {
    return this.#settleReported(claimed, 'complete', 'record completion', ending);
  }

  /** {@link release}, then end with `ending`. */
  releaseThen(claimed: Claimed<Parsed>, ending: DeliveryOutcome): Promise<DeliveryOutcome> {
    return this.#settleReported(claimed, 'release', 'release the key', ending);
  }

  /**
   * Complete a claim that holds the handlers' transaction: the completion is their commit, so
   * unlike {@link complete} a failure is not acknowledged but answered 503 for a retry (the
   * handlers' writes are gone with it).
   */
  commitThen(claimed: Claimed<Parsed>, ending: DeliveryOutcome): Promise<DeliveryOutcome> {
    const failed = (cause: unknown): DeliveryOutcome => {
      const error = this.storeFailed("commit the handlers' transaction", cause);
      return DeliveryOutcome.failed('store_unavailable', claimed.delivery.envelope, error);
    };
    return this.#settled(claimed.claim, 'complete').then(() => ending, failed);
  }

  /** The store failed to `what`: the error says so, and what its cause chain says. */
  storeFailed(what: string, cause: unknown): StoreUnavailableError {
    const why = withCauses(`the idempotency store failed to ${what}`, cause, this.#config.secrets);
    return new StoreUnavailableError(why, { cause });
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

  /** What a claim answered means for the delivery. */
  #answer<T extends Parsed>(
    delivery: T,
    request: ClaimRequest,
    claim: Claim,
    tries: number,
  ): Claimed<T> | DeliveryOutcome | Promise<Claimed<T> | DeliveryOutcome> {
    if (claim.state === 'claimed') return this.#held({ delivery, claim });
    if (claim.state === 'done') return this.#done(delivery, claim.fingerprint);
    // Another delivery holds the entity's record (two events of one access at once): a few more
    // tries before the platform's retry, 11 minutes later.
    const delayMs = claim.held === 'record' ? RECLAIM_DELAYS_MS[tries] : undefined;
    if (delayMs === undefined) return DeliveryOutcome.quiet('in_flight', delivery.envelope);
    return new Promise((resolve) => setTimeout(resolve, delayMs))
      .then(() => this.#claimed(request))
      .then(
        (again) => this.#answer(delivery, request, again, tries + 1),
        (cause: unknown) => this.#claimFailed(delivery, cause),
      );
  }

  /**
   * A claim that holds the key: the delivery's, unless a newer state of its entity was applied
   * (`superseded`) or a reconcile run already recovered it (`duplicate`): then the key is
   * completed and no handler runs.
   */
  #held<T extends Parsed>(claimed: Claimed<T>): Claimed<T> | Promise<DeliveryOutcome> {
    const { claim, delivery } = claimed;
    if (claim.superseded) {
      return this.completeThen(claimed, DeliveryOutcome.quiet('superseded', delivery.envelope));
    }
    for (const record of claim.records) {
      if (record.state === 'done' && record.fingerprint === RECOVERED_BY_RUN) {
        return this.completeThen(claimed, DeliveryOutcome.quiet('duplicate', delivery.envelope));
      }
    }
    return claimed;
  }

  /**
   * A key already done: `duplicate` with the same body (under any of the delivery's secrets: the
   * list may have been reordered since, as in a rotation), `conflict` with another.
   */
  async #done(delivery: Parsed, remembered: string | undefined): Promise<DeliveryOutcome> {
    const { envelope, fingerprint } = delivery;
    if (remembered === undefined || remembered === fingerprint) {
      return DeliveryOutcome.quiet('duplicate', envelope);
    }
    const others = await delivery.verifier.otherFingerprints(delivery.body);
    return others.includes(remembered)
      ? DeliveryOutcome.quiet('duplicate', envelope)
      : DeliveryOutcome.failed(
          'conflict',
          envelope,
          new IdempotencyConflictError(envelope.idempotencyKey),
        );
  }

  /** 503 `store_unavailable` for a claim the store failed. */
  #claimFailed(delivery: Parsed, cause: unknown): DeliveryOutcome {
    const error = this.storeFailed('claim the key', cause);
    return DeliveryOutcome.failed('store_unavailable', delivery.envelope, error);
  }

  /** Settle the claim, then give `ending`; a failure is reported, not thrown. */
  #settleReported<E extends DeliveryOutcome | undefined>(
    { claim }: Claimed<Parsed>,
    how: Settlement,
    what: string,
    ending: E,
  ): Promise<E> {
    return this.#settled(claim, how).then(
      () => ending,
      (cause: unknown) => {
        this.#config.reportError(this.storeFailed(what, cause));
        return ending;
      },
    );
  }

  /** The store's claim: one that throws instead of rejecting rejects all the same. */
  #claimed(request: ClaimRequest): Promise<Claim> {
    try {
      return this.#config.store.claim(request);
    } catch (cause) {
      return Promise.reject(cause);
    }
  }

  /** The store's settle: one that throws instead of rejecting rejects all the same. */
  #settled(claim: HeldClaim, how: Settlement): Promise<void> {
    try {
      return this.#config.store.settle(claim, how);
    } catch (cause) {
      return Promise.reject(cause);
    }
  }
}

/*
 * The ordering guard (`on(name, handler, { latestOnly: true })`, docs/receiving.md): which entity
 * a delivery takes with its key, at which version. The store records the version at claim time
 * (src/stores/types.ts): an older state is `superseded` from then on, even if the process dies
 * before the handlers end.
 */

/**
 * The entity a delivery of `event` must take, at its version (the event's timestamp), or
 * undefined when its handlers run whatever the order: none is `latestOnly`, or its payload names
 * no entity (entity-of.ts).
 */
export function versionToTake(
  event: WebhookEvent<string>,
  timestampMs: number,
  tenant: string | undefined,
  { latestOnly, dedupTtlMs }: OrderingSettings,
): VersionRequest | undefined {
  if (latestOnly === undefined || !latestOnly(event.event)) return undefined;
  const entity = entityOf(event);
  if (entity === undefined) return undefined;
  return { entity: entityKeyOf(entity.key, tenant), versionMs: timestampMs, ttlMs: dedupTtlMs };
}

/** What the guard reads of the receiver's settings. */
export interface OrderingSettings {
  /** Whether the handlers of an event run for its newest state only (the handler registry's). */
  readonly latestOnly?: ((event: string) => boolean) | undefined;
  /** How long an entity's newest version is remembered: as long as a completed key. */
  readonly dedupTtlMs: number;
}
