/**
 * The error of a school a reconciler of many tenants could not reconcile, as its report holds it.
 * @module
 */

import { quotedTenant } from '../keys/delivery-key.js';
import { SchoolhooksError, withCauses } from '../errors.js';

/** Why a school of a reconciler of many was not reconciled, as a stable code. */
export type TenantReconcileCode =
  /**
   * Its API failed: the `api` function threw, rejected or gave no API client, or a list call
   * failed (a refused key, the platform down, a rate limit that outlasted the client's wait).
   * The `cause` is what was thrown (the API client's `SchoolApiError`).
   */
  | 'api_unavailable'
  /**
   * `tenants` gave a name that cannot name a tenant (not a string, empty, over 256 characters,
   * or holding U+0000 or a lone surrogate): the receiver answers such a route 404 `unknown_tenant`.
   */
  | 'unknown_tenant';

/**
 * A school of a reconciler of many (`createReconciler({ tenants, api })`) whose run ended early:
 * `tenant` says which, `code` why, `cause` what was thrown. The other schools are reconciled all
 * the same; what this one recovered before it failed stays recovered, and the next run reads its
 * window again. Its message names the tenant and the cause's words, on one bounded line (never an
 * API key: the API client's errors carry none).
 *
 * @example
 * ```ts
 * const report = await reconciler.run({ since: '48h' });
 * for (const error of report.tenantErrors) {
 *   logger.warn({ tenant: error.tenant, code: error.code }, error.message);
 * }
 * ```
 */
export class TenantReconcileError extends SchoolhooksError {
  override name = 'TenantReconcileError' as const;
  declare readonly code: TenantReconcileCode;
  /** The tenant, as `tenants` gave it (a name that is not a string: as `String` writes it). */
  readonly tenant: string;

  constructor(code: TenantReconcileCode, tenant: string, what: string, cause?: unknown) {
    super(
      code,
      withCauses(`tenant ${quotedTenant(tenant)}: ${what}`, cause),
      cause === undefined ? undefined : { cause },
    );
    this.tenant = tenant;
  }
}
