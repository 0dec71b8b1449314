/**
 * The options of `createReconciler`, checked once, defaults applied: a mistake is a `ConfigError`
 * at creation, never at the first run.
 * @module
 */

import { RECONCILE_DEFAULTS } from '../defaults.js';
import { isTenantName, quotedTenant } from '../keys/delivery-key.js';
import { ConfigError } from '../errors.js';
import { PLATFORM_LIMITS } from '../platform/platform-contract.js';
import { checkStore } from '../stores/check-store.js';
import type { IdempotencyStore } from '../stores/types.js';
import type {
  ReconcileApi,
  ReconcileApiFactory,
  ReconcilerOptions,
  ReconcileTenants,
} from './types.js';

/** The most items a list page holds (docs/platform.md#list-operations). */
const MAX_TAKE = PLATFORM_LIMITS.maxListTake;

/** What every run reads, of one school or of many. */
interface RunSettings {
  readonly store: IdempotencyStore;
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

/** One school: its API client, and its tenant on a receiver of many. */
export interface SchoolSettings extends RunSettings {
  readonly api: ReconcileApi;
  readonly tenant: string | undefined;
  readonly tenants?: undefined;
}

/** Many schools (`tenants`): how each run lists them, and how it gets each one's API client. */
export interface TenantsSettings extends RunSettings {
  readonly api: ReconcileApiFactory;
  readonly tenant: undefined;
  /** The names `tenants` gives, as it gives them (each one checked when its turn comes). */
  readonly tenants: () => Promise<readonly unknown[]>;
}

/** A reconciler's options, checked, with their defaults: of one school, or of many. */
export type ReconcilerSettings = SchoolSettings | TenantsSettings;

/** The options with their defaults, checked: the first wrong one is a `ConfigError`. */
export function checkReconcilerOptions(options: ReconcilerOptions): ReconcilerSettings {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('createReconciler takes an options object: { api, store or receiver }');
  }
  const {
    api,
    tenant,
    tenants,
    minAgeMs = RECONCILE_DEFAULTS.minAgeMs,
    lookbackMs = RECONCILE_DEFAULTS.lookbackMs,
    handlerTimeoutMs = RECONCILE_DEFAULTS.handlerTimeoutMs,
    inFlightWaitMs = RECONCILE_DEFAULTS.inFlightWaitMs,
    take = MAX_TAKE,
    now = Date.now,
  } = options;
  const list = tenants === undefined ? undefined : tenantsOf(tenants, tenant, api);
  if (list === undefined) checkApi(api);
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
  const settings: RunSettings = {
    store,
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
  return list === undefined
    ? { ...settings, api: api as ReconcileApi, tenant }
    : { ...settings, api: api as ReconcileApiFactory, tenant: undefined, tenants: list };
}

/**
 * `tenants` as a function that lists the names at each run; a `ConfigError` when it is neither a
 * list nor a function, when `tenant` is given beside it, or when `api` is not a function of the
 * tenant. Each name is checked when its turn comes: one that cannot name a tenant is reported.
 */
function tenantsOf(
  tenants: ReconcileTenants,
  tenant: unknown,
  api: unknown,
): () => Promise<readonly unknown[]> {
  if (tenant !== undefined) {
    throw new ConfigError(
      'tenant and tenants cannot go together: tenant names the one school a reconciler reads, ' +
        'tenants the schools a reconciler of many reads one after another',
    );
  }
  if (typeof api !== 'function') {
    throw new ConfigError(
      'with tenants, api must be a function that gives each school\u2019s API client: ' +
        'api: ({ tenant }) => createSchoolApi(…)',
    );
  }
  if (typeof tenants === 'function') {
    return async () => {
      const names: unknown = await tenants();
      if (!Array.isArray(names)) {
        throw new ConfigError('tenants() must give a list of tenant names (strings)');
      }
      return names;
    };
  }
  if (!Array.isArray(tenants)) {
    throw new ConfigError(
      'tenants must be a list of tenant names, or a function that gives one (async () => db.schoolNames())',
    );
  }
  return async () => tenants;
}

const LIST_METHODS = ['invoices', 'productAccesses', 'certificates', 'users'] as const;

/**
 * `api` as an API client, or a `ConfigError` naming what it lacks (a bare function: it is a
 * function of the tenant, and `tenants` is missing).
 */
export function checkApi(api: unknown): asserts api is ReconcileApi {
  const methods = api as Partial<Record<(typeof LIST_METHODS)[number], unknown>> | undefined;
  const missing = LIST_METHODS.filter((name) => typeof methods?.[name] !== 'function');
  if (typeof api === 'function' && missing.length === LIST_METHODS.length) {
    throw new ConfigError(
      'api is a function of the tenant only on a reconciler of many schools: give tenants ' +
        '(the schools it reads), or the school\u2019s API client (createSchoolApi from schoolhooks/api)',
    );
  }
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
