/**
 * A run of a reconciler of many schools (`tenants`): the schools listed, then reconciled one
 * after another, each as a reconciler of its own tenant, and their reports gathered under their
 * names beside the totals.
 * @module
 */

import { isTenantName } from '../keys/delivery-key.js';
import type { RunPlan, SchoolRun } from './create-reconciler.js';
import { RECONCILE_KINDS } from './listings.js';
import { checkApi, type SchoolSettings, type TenantsSettings } from './settings.js';
import { TenantReconcileError } from './tenant-reconcile-error.js';
import type {
  ReconcileApi,
  ReconcileKind,
  TenantEntity,
  TenantFailedEntity,
  TenantReconcileReport,
  TenantsReconcileReport,
} from './types.js';

/** One school's run, as a reconciler of its tenant would make it (create-reconciler.ts). */
export type SchoolRunner = (school: SchoolSettings) => Promise<SchoolRun>;

/**
 * List the schools (`tenants`), then run each one in turn with `runSchool`, never two at once: a
 * school's run ends before the next one's `api` is even asked for. A school whose API fails, or
 * whose name cannot name a tenant, is reported in its own report and the next one runs; a name
 * given twice is run once. Throws what `tenants()` throws, and the run's abort reason.
 *
 * @example
 * ```ts
 * const report = await runTenants(settings, plan, (school) => runSchool(school, handlers, plan));
 * ```
 */
export async function runTenants(
  settings: TenantsSettings,
  plan: RunPlan,
  runSchool: SchoolRunner,
): Promise<TenantsReconcileReport> {
  const names = await settings.tenants();
  const reports = new Map<string, TenantReconcileReport>();
  for (const name of names) {
    plan.signal?.throwIfAborted();
    const tenant = typeof name === 'string' ? name : String(name);
    if (reports.has(tenant)) continue;
    reports.set(tenant, await runTenant(name, settings, plan, runSchool));
  }
  return totalsOf(reports, plan);
}

/** One school's report: its run's, or one that says why it did not run (or ended early). */
async function runTenant(
  name: unknown,
  settings: TenantsSettings,
  plan: RunPlan,
  runSchool: SchoolRunner,
): Promise<TenantReconcileReport> {
  if (typeof name !== 'string' || !isTenantName(name)) {
    const why =
      typeof name === 'string'
        ? 'cannot name a tenant (empty, over 256 characters, or holding U+0000 or a lone surrogate)'
        : `is a ${name === null ? 'null' : typeof name}, not a tenant name (a string)`;
    const tenant = typeof name === 'string' ? name : String(name);
    return notRun(plan, new TenantReconcileError('unknown_tenant', tenant, `${why}; not read`));
  }
  let api: ReconcileApi;
  try {
    api = await settings.api({ tenant: name });
    checkApi(api);
  } catch (error) {
    plan.signal?.throwIfAborted();
    const what = 'api gave no API client for it; not read';
    return notRun(plan, new TenantReconcileError('api_unavailable', name, what, error));
  }
  const { report, failure } = await runSchool({
    ...settings,
    api,
    tenant: name,
    tenants: undefined,
  });
  if (failure === undefined) return report;
  // Aborted: the whole run ends, as a reconciler of one school's would.
  plan.signal?.throwIfAborted();
  const what = 'its API failed, so it was read only in part (the next run reads it again)';
  const error = new TenantReconcileError('api_unavailable', name, what, failure.error);
  return Object.freeze({ ...report, error });
}

/** The report of a school that was not read: nothing checked, not complete, and why. */
function notRun(plan: RunPlan, error: TenantReconcileError): TenantReconcileReport {
  return Object.freeze({
    window: isoWindow(plan),
    checked: Object.freeze({ invoice: 0, access: 0, certificate: 0, user: 0 }),
    handled: 0,
    recovered: 0,
    missing: Object.freeze([]),
    failed: Object.freeze([]),
    inFlight: Object.freeze([]),
    unrecorded: Object.freeze([]),
    complete: false,
    error,
  });
}

/** Every school's report, and the totals: counts summed, lists merged with each one's tenant. */
function totalsOf(
  reports: ReadonlyMap<string, TenantReconcileReport>,
  plan: RunPlan,
): TenantsReconcileReport {
  const checked: Record<ReconcileKind, number> = { invoice: 0, access: 0, certificate: 0, user: 0 };
  let handled = 0;
  let recovered = 0;
  const missing: TenantEntity[] = [];
  const inFlight: TenantEntity[] = [];
  const failed: TenantFailedEntity[] = [];
  const unrecorded: TenantFailedEntity[] = [];
  const tenantErrors: TenantReconcileError[] = [];
  for (const [tenant, report] of reports) {
    for (const kind of RECONCILE_KINDS) checked[kind] += report.checked[kind];
    handled += report.handled;
    recovered += report.recovered;
    missing.push(...report.missing.map((entity) => Object.freeze({ ...entity, tenant })));
    inFlight.push(...report.inFlight.map((entity) => Object.freeze({ ...entity, tenant })));
    failed.push(...report.failed.map((entity) => Object.freeze({ ...entity, tenant })));
    unrecorded.push(...report.unrecorded.map((entity) => Object.freeze({ ...entity, tenant })));
    if (report.error !== undefined) tenantErrors.push(report.error);
  }
  return Object.freeze({
    window: isoWindow(plan),
    checked: Object.freeze(checked),
    handled,
    recovered,
    missing: Object.freeze(missing),
    failed: Object.freeze(failed),
    inFlight: Object.freeze(inFlight),
    unrecorded: Object.freeze(unrecorded),
    complete: [...reports.values()].every((report) => report.complete),
    tenants: Object.freeze(Object.fromEntries(reports)),
    tenantErrors: Object.freeze(tenantErrors),
  });
}

function isoWindow({ window }: RunPlan): { readonly from: string; readonly to: string } {
  return Object.freeze({
    from: new Date(window.from).toISOString(),
    to: new Date(window.to).toISOString(),
  });
}
