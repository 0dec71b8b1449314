/**
 * The public types of `schoolhooks/reconcile`: the reconciler, its handlers, a run's options and
 * its report.
 * @module
 */

import type { ListKind } from '../api/list-operations.js';
import type {
  CertificateListItem,
  InvoiceListItem,
  ProductAccessListItem,
  UserListItem,
} from '../api/list-schemas.js';
import type { SchoolApi } from '../api/create-school-api.js';
import type { Receiver } from '../receiving/receiver.js';
import type { HandlerTransaction } from '../receiving/run-handlers.js';
import type { IdempotencyStore } from '../stores/types.js';
import type { RecoveryError } from './recovery-error.js';
import type { TenantReconcileError } from './tenant-reconcile-error.js';

/** What a reconciler recovers: `invoice` (paid), `access`, `certificate`, `user`. */
export type ReconcileKind = ListKind;

/** The list item a handler of each kind gets. */
export interface ReconcileItems {
  invoice: InvoiceListItem;
  access: ProductAccessListItem;
  certificate: CertificateListItem;
  user: UserListItem;
}

/** What a reconcile handler gets beside the item. */
export interface ReconcileContext {
  /** What the item is. */
  readonly kind: ReconcileKind;
  /** Its id within its kind (`invoiceId`, `accessId`, `certificateId`, a user's `id`), as text. */
  readonly id: string;
  /** The entity's key, as `entityOf` gives it for the webhook about it (`invoice:<id>`). */
  readonly entity: string;
  /** The reconciler's tenant, when it reconciles one school of many. */
  readonly tenant: string | undefined;
  /**
   * The store's transaction for this recovery (`postgresStore`): write through it and the
   * record of the recovery commits with your writes, or neither does.
   */
  readonly transaction: HandlerTransaction | undefined;
  /** Aborted when the run is aborted or the handler runs past `handlerTimeoutMs`. */
  readonly signal: AbortSignal;
}

/** A handler of one kind: runs once for each entity no webhook and no earlier run handled. */
export type ReconcileHandler<K extends ReconcileKind> = (
  item: ReconcileItems[K],
  ctx: ReconcileContext,
) => unknown;

/** The API calls a reconciler reads: `createSchoolApi(…)` has them. */
export type ReconcileApi = Pick<
  SchoolApi,
  'invoices' | 'productAccesses' | 'certificates' | 'users'
>;

/**
 * The API client of one school of many, for its tenant: called once per school at each run of a
 * reconciler with `tenants`, before the school's lists are read.
 *
 * @example
 * ```ts
 * const api: ReconcileApiFactory = async ({ tenant }) =>
 *   createSchoolApi({ baseUrl, ...(await db.apiCredentialsOf(tenant)) });
 * ```
 */
export type ReconcileApiFactory = (school: {
  readonly tenant: string;
}) => ReconcileApi | PromiseLike<ReconcileApi>;

/**
 * The schools a reconciler of many reads, by their tenant names: a list, or a function that lists
 * them at the start of each run (from your table of schools).
 *
 * @example
 * ```ts
 * const tenants: ReconcileTenants = async () => db.schoolNames();
 * ```
 */
export type ReconcileTenants =
  readonly string[] | (() => readonly string[] | PromiseLike<readonly string[]>);

/** Options of `createReconciler`. */
export interface ReconcilerOptions {
  /**
   * The school's API client (`createSchoolApi` from `schoolhooks/api`); with `tenants`, a
   * function that gives each school's client for its tenant (`({ tenant }) => createSchoolApi(…)`).
   */
  api: ReconcileApi | ReconcileApiFactory;
  /**
   * The receiver's store: where its webhooks recorded the entities they handled, and where
   * recoveries are claimed and recorded. Default: the `receiver`'s.
   */
  store?: IdempotencyStore;
  /**
   * The receiver whose webhooks this reconciler completes: its store is the default `store`, and
   * one that does not record entities (`recordEntities: false`) is refused.
   */
  receiver?: Receiver;
  /** The school this reconciler reads, on a receiver of many schools (its `tenant`). */
  tenant?: string;
  /**
   * Many schools on one receiver: their tenant names, or a function that lists them at each run.
   * A run reconciles them one after another, each as a reconciler with its `tenant` and the API
   * client `api` gives for it, and reports each one apart (`report.tenants[name]`).
   */
  tenants?: ReconcileTenants;
  /**
   * Entities younger than this are left to their webhooks (the platform may still be retrying
   * them). Default: the platform's retry span and a margin, 5 hours.
   */
  minAgeMs?: number;
  /**
   * How much further back than `since` paid invoices are listed: the list dates an invoice by
   * when it was issued, and a buyer may pay days later. Default 7 days.
   */
  lookbackMs?: number;
  /** How long one handler may run before its recovery counts as failed. Default 60 s. */
  handlerTimeoutMs?: number;
  /**
   * How long a run waits, at the end of each kind, for entities another claim holds (a webhook
   * being handled, or a run that died with them claimed) before it reports them in `inFlight`.
   * Default 30 s.
   */
  inFlightWaitMs?: number;
  /** Items per page, 1 to 1000. Default 1000. */
  take?: number;
  /** The clock, in ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** Options of `reconciler.run`. */
export interface ReconcileRunOptions {
  /**
   * The start of the window: a Date, ms since the epoch, or a duration before now (`'48h'`,
   * `'7d'`, `'90m'`).
   */
  since: Date | number | string;
  /** The end of the window. Default: now, less `minAgeMs`. */
  until?: Date | number;
  /** List and report what is missing, run no handler, record nothing. */
  dryRun?: boolean;
  /** The kinds to check. Default: those with a handler (every kind for a `dryRun` with none). */
  kinds?: readonly ReconcileKind[];
  /** Stops the run: it throws the signal's reason, and what it recovered stays recovered. */
  signal?: AbortSignal;
  /**
   * Told after each page is checked: the kind being read and the items checked so far, by kind
   * (a long run's progress; `schoolhooks reconcile` prints it on stderr). A callback that throws
   * is ignored.
   */
  onProgress?: (progress: ReconcileProgress) => void;
}

/** Where a run is: the school and kind it reads, and the items it checked so far by kind. */
export interface ReconcileProgress {
  /** The school being read, on a reconciler of one tenant or of many (`tenants`). */
  readonly tenant?: string;
  readonly kind: ReconcileKind;
  /** The items checked so far, by kind (of the school being read, on a reconciler of many). */
  readonly checked: Readonly<Record<ReconcileKind, number>>;
}

/** An entity of the report. */
export interface ReconciledEntity {
  readonly kind: ReconcileKind;
  readonly id: string;
}

/** An entity whose handler failed, or whose records the store could not claim or write. */
export interface FailedEntity extends ReconciledEntity {
  /** Why, by its `code`, with the handler's (or the store's) error as its `cause`. */
  readonly error: RecoveryError;
}

/** What one run did. */
export interface ReconcileReport {
  /** The window read, as ISO dates (invoices reach `lookbackMs` further back). */
  readonly window: { readonly from: string; readonly to: string };
  /** The items listed, by kind. */
  readonly checked: Readonly<Record<ReconcileKind, number>>;
  /** Items a webhook or an earlier run handled: done, and recorded so. */
  readonly handled: number;
  /** Items this run's handlers recovered. */
  readonly recovered: number;
  /** With `dryRun`: the items no webhook and no run handled. */
  readonly missing: readonly ReconciledEntity[];
  /** Items whose handler failed (or whose records the store could not claim): the next run tries them again. */
  readonly failed: readonly FailedEntity[];
  /**
   * Items another claim still held after `inFlightWaitMs`: a webhook's handlers still running, or
   * a claim of a process that died, until its lease ends. Not done: the next run checks them again.
   */
  readonly inFlight: readonly ReconciledEntity[];
  /**
   * Items whose handler succeeded but whose records the store could not write (it was
   * unreachable): recovered, but not recorded, so a later run may recover them again.
   */
  readonly unrecorded: readonly FailedEntity[];
  /** True only when nothing is left: `failed`, `inFlight` and `unrecorded` are all empty. */
  readonly complete: boolean;
}

/** An entity of a report of many schools: which school's. */
export interface TenantEntity extends ReconciledEntity {
  readonly tenant: string;
}

/** A failed or unrecorded entity of a report of many schools: which school's. */
export interface TenantFailedEntity extends FailedEntity {
  readonly tenant: string;
}

/** One school's report, in a run of many: a {@link ReconcileReport}, and why it ended early. */
export interface TenantReconcileReport extends ReconcileReport {
  /**
   * Set when the school's run ended early: its API failed (`api_unavailable`) or its name cannot
   * name a tenant (`unknown_tenant`). Its counts are what it did until then; `complete` is false.
   */
  readonly error?: TenantReconcileError;
}

/**
 * What a run of a reconciler of many schools did: each school's report under its tenant, and
 * beside them the totals (the counts summed, the lists merged, each entity with its `tenant`).
 */
export interface TenantsReconcileReport extends ReconcileReport {
  readonly missing: readonly TenantEntity[];
  readonly failed: readonly TenantFailedEntity[];
  readonly inFlight: readonly TenantEntity[];
  readonly unrecorded: readonly TenantFailedEntity[];
  /** True only when every school's report is complete and none ended early. */
  readonly complete: boolean;
  /**
   * Each school's report, by tenant (the keys in the order the schools were read, apart from
   * names that read as array indexes, `'12'`, which an object lists first, in numeric order).
   */
  readonly tenants: Readonly<Record<string, TenantReconcileReport>>;
  /** The errors of the schools whose run ended early (each one's `error`), in that order. */
  readonly tenantErrors: readonly TenantReconcileError[];
}

/**
 * A reconciler: handlers per kind, and runs over a window. `R` is what a run resolves to: a
 * {@link TenantsReconcileReport} for a reconciler of many schools.
 */
export interface Reconciler<R extends ReconcileReport = ReconcileReport> {
  /** The handler of one kind (one per kind; a second replaces nothing: it is a `ConfigError`). */
  on<K extends ReconcileKind>(kind: K, handler: ReconcileHandler<K>): Reconciler<R>;
  /** Read the lists over the window, and recover every entity no webhook handled. */
  run(options: ReconcileRunOptions): Promise<R>;
}
