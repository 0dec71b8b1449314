/**
 * Reconciliation from the platform's own lists: recover the paid invoices, product accesses,
 * certificates and users whose webhooks never arrived. @module schoolhooks/reconcile
 */

export { createReconciler } from './create-reconciler.js';
export { RecoveryError } from './recovery-error.js';
export type { RecoveryFailureCode } from './recovery-error.js';
export { TenantReconcileError } from './tenant-reconcile-error.js';
export type { TenantReconcileCode } from './tenant-reconcile-error.js';
// A mistake in the options of createReconciler or of a run; the receiver's class, so one catch serves both.
export { ConfigError } from '../errors.js';
export type {
  FailedEntity,
  ReconcileApi,
  ReconcileApiFactory,
  ReconcileContext,
  ReconciledEntity,
  ReconcileHandler,
  ReconcileItems,
  ReconcileKind,
  ReconcileProgress,
  ReconcileReport,
  ReconcileRunOptions,
  Reconciler,
  ReconcilerOptions,
  ReconcileTenants,
  TenantEntity,
  TenantFailedEntity,
  TenantReconcileReport,
  TenantsReconcileReport,
} from './types.js';
// The list items the handlers get, so a handler's types need no second import.
export type {
  CertificateListItem,
  InvoiceListItem,
  ProductAccessListItem,
  UserListItem,
} from '../api/list-schemas.js';
// The errors a run throws when the platform's API fails it (the run ends: nothing is lost, the
// next run reads the window again).
export {
  InvalidListItemsError,
  isSchoolApiError,
  RateLimitError,
  SchoolApiError,
} from '../api/errors.js';
// What a record's fingerprint says: which of a webhook and a run handled the entity.
export { RECORDED_BY_WEBHOOK, RECOVERED_BY_RUN } from '../keys/delivery-key.js';
