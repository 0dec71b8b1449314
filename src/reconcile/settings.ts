/**
 * The options of `createReconciler`, checked once, defaults applied: a mistake is a `ConfigError`
 * at creation, never at the first run.
 * @module
 */

import { RECONCILE_DEFAULTS } from '../defaults.js';
import { isTenantName, quotedTenant } from '../delivery-key.js';
import { ConfigError } from '../errors.js';
import { PLATFORM_LIMITS } from '../platform-contract.js';
import { checkStore } from '../stores/check-store.js';
import type { IdempotencyStore } from '../stores/types.js';
import type { ReconcileApi, ReconcilerOptions } from './types.js';

/** The most items a list page holds (docs/platform.md#list-operations). */
const MAX_TAKE = PLATFORM_LIMITS.maxListTake;

/** A reconciler's options, checked, with their defaults. */
export interface ReconcilerSettings {
  readonly api: ReconcileApi;
  readonly store: IdempotencyStore;
  readonly tenant: string | undefined;
  readonly minAgeMs: number;
  readonly lookbackMs: number;
  readonly handlerTimeoutMs: number;
  /** How long a run waits for entities another claim holds. */
  readonly inFlightWaitMs: number;
  /** How long a recovery holds its entity's record: past its handler's timeout. */
  readonly leaseMs: number;
  readonly take: number;
  readonly now: () => number;
}

/** The options with their defaults, checked: the first wrong one is a `ConfigError`. */
export function checkReconcilerOptions(options: ReconcilerOptions): ReconcilerSettings {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('createReconciler takes an options object: { api, store or receiver }');
  }
  const {
    api,
    tenant,
    minAgeMs = RECONCILE_DEFAULTS.minAgeMs,
    lookbackMs = RECONCILE_DEFAULTS.lookbackMs,
    handlerTimeoutMs = RECONCILE_DEFAULTS.handlerTimeoutMs,
    inFlightWaitMs = RECONCILE_DEFAULTS.inFlightWaitMs,
    take = MAX_TAKE,
    now = Date.now,
  } = options;
  checkApi(api);
  const store = storeOf(options);
  if (tenant !== undefined && (typeof tenant !== 'string' || !isTenantName(tenant))) {
    throw new ConfigError(
      typeof tenant === 'string'
        ? `tenant ${quotedTenant(tenant)} cannot name a tenant (empty, too long, or holding U+0000 or a lone surrogate)`
        : 'tenant must be a string: the tenant the receiver names the school by',
    );
  }
  checkMs({ minAgeMs, lookbackMs, inFlightWaitMs }, 0);
  checkMs({ handlerTimeoutMs }, 1);
  if (!Number.isInteger(take) || take < 1 || take > MAX_TAKE) {
    throw new ConfigError(`take must be an integer from 1 to ${MAX_TAKE}`);
  }
  if (typeof now !== 'function') throw new ConfigError('now must be a function returning ms');
  return {
    api,
    store,
    tenant,
    minAgeMs,
    lookbackMs,
    handlerTimeoutMs,
    inFlightWaitMs,
    // A recovery whose handler timed out keeps its record until the handler ends (or the lease):
    // the lease must outlast the timeout, or a second run could start the same recovery.
    leaseMs: Math.max(RECONCILE_DEFAULTS.leaseMs, 2 * handlerTimeoutMs),
    take,
    now,
  };
}

const LIST_METHODS = ['invoices', 'productAccesses', 'certificates', 'users'] as const;

function checkApi(api: unknown): asserts api is ReconcileApi {
  const methods = api as Partial<Record<(typeof LIST_METHODS)[number], unknown>> | undefined;
  const missing = LIST_METHODS.filter((name) => typeof methods?.[name] !== 'function');
  if (typeof api !== 'object' || api === null || missing.length > 0) {
    throw new ConfigError(
      `api must be the school's API client (createSchoolApi from schoolhooks/api), with ${missing.join(', ')}`,
    );
  }
}

/**
 * The store: the one given, else the receiver's. A receiver whose webhooks record no entity is
 * refused, as is neither a store nor a receiver: a run against no records recovers everything.
 */
function storeOf({ store, receiver }: ReconcilerOptions): IdempotencyStore {
  if (receiver !== undefined && (typeof receiver !== 'object' || receiver === null)) {
    throw new ConfigError('receiver must be a receiver made by createReceiver');
  }
  if (receiver?.recordsEntities === false) {
    throw new ConfigError(
      'the receiver does not record the entities its webhooks handle (recordEntities: false), so ' +
        'a reconciler would recover every one of them again: let it record them',
    );
  }
  const chosen = store ?? receiver?.store;
  if (chosen === undefined) {
    throw new ConfigError(
      'createReconciler needs the store where the receiver records the entities it handled: ' +
        'pass store (the receiver\u2019s) or receiver',
    );
  }
  return checkStore(chosen, 'store');
}

/** Every duration a finite number of ms, at least `least`. */
function checkMs(durations: Readonly<Record<string, unknown>>, least: number): void {
  for (const [name, value] of Object.entries(durations)) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < least) {
      throw new ConfigError(
        `${name} must be a ${least === 0 ? 'non-negative' : 'positive'} number of ms`,
      );
    }
  }
}
