/**
 * The ordering guard (`on(name, handler, { latestOnly: true })`, docs/receiving.md): which entity a
 * delivery must hold before its handlers run, and the store calls that take, record and free it.
 * The pipeline's `order` step claims it after the key; completing or releasing the key does the
 * same to it first.
 * @module
 */

import { entityKeyOf } from './delivery-key.js';
import { entityOf } from './entity-of.js';
import type { WebhookEvent } from './events/index.js';
import { nowOrLater, type MaybePromise } from './run-steps.js';
import {
  keepsEntityVersions,
  type EntityClaimResult,
  type EntityVersionStore,
  type HeldKey,
  type IdempotencyStore,
} from './stores/types.js';

/** The entity a delivery holds while its handlers run. */
export interface HeldEntity {
  /** Its key in the store: `entityKeyOf(entity, tenant)`. */
  readonly key: string;
  /** Its lease token. */
  readonly token: string;
  /** The delivery's version of it: the event's timestamp, in ms since the epoch. */
  readonly versionMs: number;
}

/** What the guard reads of the receiver's settings. */
export interface OrderingGuardConfig {
  readonly store: IdempotencyStore;
  readonly leaseMs: number;
  readonly dedupTtlMs: number;
  /** Whether the handlers of an event run for its newest state only (the handler registry's). */
  readonly latestOnly?: ((event: string) => boolean) | undefined;
}

/** The ordering guard of one receiver. */
export class OrderingGuard {
  /** The store, when it keeps entity versions (`on()` refuses `latestOnly` otherwise). */
  readonly #store: EntityVersionStore | undefined;
  readonly #leaseMs: number;
  readonly #dedupTtlMs: number;
  readonly #latestOnly: (event: string) => boolean;

  constructor({ store, leaseMs, dedupTtlMs, latestOnly }: OrderingGuardConfig) {
    this.#store = keepsEntityVersions(store) ? store : undefined;
    this.#leaseMs = leaseMs;
    this.#dedupTtlMs = dedupTtlMs;
    this.#latestOnly = latestOnly ?? (() => false);
  }

  /**
   * The store key of the entity a delivery of `event` must hold, or undefined when its handlers
   * run whatever the order: none is `latestOnly`, or its payload names no entity (entity-of.ts).
   */
  entityToHold(event: WebhookEvent<string>, tenant: string | undefined): string | undefined {
    if (this.#store === undefined || !this.#latestOnly(event.event)) return undefined;
    const entity = entityOf(event);
    return entity === undefined ? undefined : entityKeyOf(entity.key, tenant);
  }

  /** Take the entity at `versionMs` for a delivery that holds `held`. */
  claim(entity: string, versionMs: number, held: HeldKey): MaybePromise<EntityClaimResult> {
    return this.#store!.claimEntity(entity, versionMs, this.#leaseMs, held);
  }

  /** The handlers succeeded: record the delivery's version (for dedupTtlMs) and free the entity. */
  complete({ key, token, versionMs }: HeldEntity): MaybePromise<void> {
    return this.#store!.completeEntity(key, token, versionMs, this.#dedupTtlMs);
  }

  /** The handlers failed: free the entity, recording nothing. */
  release({ key, token }: HeldEntity): MaybePromise<void> {
    return this.#store!.releaseEntity(key, token);
  }

  /**
   * {@link complete} the entity if the delivery holds one, then `completeKey`: a failure to
   * record the version is `reported`, never thrown (the handlers succeeded; the entity's lease
   * runs out by itself).
   */
  completeThen(
    entity: HeldEntity | undefined,
    completeKey: () => MaybePromise<void>,
    reported: (cause: unknown) => void,
  ): MaybePromise<void> {
    if (entity === undefined) return completeKey();
    return nowOrLater(
      () => this.complete(entity),
      completeKey,
      (cause) => {
        reported(cause);
        return completeKey();
      },
    );
  }

  /** {@link release} the entity if the delivery holds one, then `releaseKey`; as {@link completeThen}. */
  releaseThen(
    entity: HeldEntity | undefined,
    releaseKey: () => MaybePromise<void>,
    reported: (cause: unknown) => void,
  ): MaybePromise<void> {
    if (entity === undefined) return releaseKey();
    return nowOrLater(
      () => this.release(entity),
      releaseKey,
      (cause) => {
        reported(cause);
        return releaseKey();
      },
    );
  }
}
