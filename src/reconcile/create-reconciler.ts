/**
 * `createReconciler`: handlers per kind, and runs that read the platform's lists over a window and
 * recover every entity no webhook handled (the platform gives a webhook up after its fifth
 * attempt, about 4 h 46 min after the first).
 * @module
 */

import type { InvalidListItem } from '../api/errors.js';
import { ConfigError } from '../errors.js';
import type { KeyState } from '../stores/types.js';
import { sleep } from '../api/retry-delay.js';
import {
  listEntities,
  RECONCILE_KINDS,
  type ListedEntity,
  type ListingOptions,
} from './listings.js';
import { recoverEntity, type Recovery, type RecoveryConfig } from './recover-entity.js';
import { eachAtMost, RECOVERIES_AT_ONCE } from './recover-together.js';
import { RecoveryError } from './recovery-error.js';
import { runTenants } from './run-tenants.js';
import {
  checkReconcilerOptions,
  type ReconcilerSettings,
  type SchoolSettings,
} from './settings.js';
import type {
  FailedEntity,
  ReconcileHandler,
  ReconcileKind,
  ReconcileProgress,
  ReconcileReport,
  ReconcileRunOptions,
  ReconcileApi,
  ReconcileApiFactory,
  ReconciledEntity,
  Reconciler,
  ReconcilerOptions,
  ReconcileTenants,
  TenantsReconcileReport,
} from './types.js';
import { windowOf, type ReconcileWindow } from './window.js';

type Handlers = { [K in ReconcileKind]?: ReconcileHandler<K> };

/**
 * A reconciler over the school's lists (`api`) and the store where the receiver records the
 * entities its webhooks handled. Each run lists the paid invoices, product accesses, certificates
 * and users of its window and runs the kind's handler once for each entity no webhook and no
 * earlier run handled, exactly once across processes that share the store: the entity's record is
 * claimed as a delivery claims its key, and completed `reconciled` when the handler succeeds (a
 * webhook that comes later for it runs nothing: `200 duplicate`). A handler that fails or times
 * out is in the report's `failed`, its record freed for the next run.
 *
 * Options are checked now (a `ConfigError`): `store` or a `receiver` that records entities;
 * `minAgeMs` (default 5 h: younger entities are left to their webhooks), `lookbackMs` (default
 * 7 days, how much further back paid invoices are listed), `handlerTimeoutMs` (60 s), `take` (1
 * to 1000, default 1000) and `tenant`.
 *
 * @example
 * ```ts
 * import { createSchoolApi } from 'schoolhooks/api';
 * import { createReconciler } from 'schoolhooks/reconcile';
 *
 * const api = createSchoolApi({ baseUrl, apiKey, sellerId, schoolId });
 * const reconciler = createReconciler({ api, receiver })
 *   .on('invoice', async (invoice, ctx) => grantAccess(invoice.user.id, invoice.products, ctx.signal))
 *   .on('user', (user) => crm.upsert(user));
 *
 * const report = await reconciler.run({ since: '48h' });
 * console.log(`recovered ${report.recovered}, failed ${report.failed.length}`);
 * ```
 */
export function createReconciler(
  options: ReconcilerOptions & { readonly api: ReconcileApi; readonly tenants?: undefined },
): Reconciler;
/**
 * A reconciler of many schools on one receiver (docs/tenants.md): `tenants` names them (a list,
 * or a function that lists them at each run) and `api` gives each one's API client for its
 * tenant. A run reconciles them **one after another**, never two at once, each exactly as a
 * reconciler with that `tenant` (its records, `ctx.tenant`), over one window; it resolves to each
 * school's report under `report.tenants[name]` beside the totals, whose entities carry their
 * `tenant`. A school whose API fails (`api` throws, or a list call fails), or whose name cannot
 * name a tenant, is reported in its own report (`error`, and `report.tenantErrors`) and the
 * others carry on; `complete` is then false. `tenants()` failing, or the run's `signal`, ends the
 * whole run. `tenant` beside `tenants`, or an `api` that is no function, is a `ConfigError`.
 *
 * @example
 * ```ts
 * const reconciler = createReconciler({
 *   receiver,
 *   tenants: async () => db.schoolNames(),
 *   api: async ({ tenant }) => createSchoolApi({ baseUrl, ...(await db.apiCredentialsOf(tenant)) }),
 * }).on('invoice', (invoice, ctx) => grantAccess(ctx.tenant, invoice.user.id));
 *
 * const report = await reconciler.run({ since: '48h' });
 * for (const error of report.tenantErrors) console.warn(error.message);
 * ```
 */
export function createReconciler(
  options: ReconcilerOptions & {
    readonly api: ReconcileApiFactory;
    readonly tenants: ReconcileTenants;
  },
): Reconciler<TenantsReconcileReport>;
/** Options of either kind, when the compiler cannot tell which (checked when it is called). */
export function createReconciler(options: ReconcilerOptions): Reconciler;
export function createReconciler(options: ReconcilerOptions): Reconciler {
  const settings = checkReconcilerOptions(options);
  const handlers: Handlers = {};
  const reconciler: Reconciler = {
    on(kind, handler) {
      if (!RECONCILE_KINDS.includes(kind)) {
        throw new ConfigError(
          `unknown kind ${JSON.stringify(String(kind))}: a reconciler recovers ${RECONCILE_KINDS.join(', ')}`,
        );
      }
      if (typeof handler !== 'function') {
        throw new ConfigError(`the handler of ${kind} must be a function`);
      }
      if (handlers[kind] !== undefined) {
        throw new ConfigError(`${kind} has a handler already: a reconciler takes one per kind`);
      }
      (handlers as Record<ReconcileKind, unknown>)[kind] = handler;
      return reconciler;
    },
    run: (runOptions) => runReconcile(settings, handlers, runOptions),
  };
  return reconciler;
}

/** The kinds a run checks: those asked for, else those with a handler (every one for a dry run of none). */
function kindsOf(
  { kinds, dryRun = false }: ReconcileRunOptions,
  handlers: Handlers,
): readonly ReconcileKind[] {
  if (kinds !== undefined && !Array.isArray(kinds)) {
    throw new ConfigError(`kinds must be an array of ${RECONCILE_KINDS.join(', ')}`);
  }
  const asked = kinds as readonly unknown[] | undefined;
  for (const kind of asked ?? []) {
    if (!RECONCILE_KINDS.includes(kind as ReconcileKind)) {
      throw new ConfigError(
        `unknown kind ${JSON.stringify(String(kind))} in kinds: ${RECONCILE_KINDS.join(', ')}`,
      );
    }
  }
  const registered = RECONCILE_KINDS.filter((kind) => handlers[kind] !== undefined);
  const chosen =
    asked !== undefined
      ? RECONCILE_KINDS.filter((kind) => asked.includes(kind))
      : registered.length === 0 && dryRun
        ? RECONCILE_KINDS
        : registered;
  if (chosen.length === 0) {
    throw new ConfigError(
      'nothing to reconcile: register a handler with on(kind, handler), or run with dryRun',
    );
  }
  const unhandled = dryRun ? [] : chosen.filter((kind) => !registered.includes(kind));
  if (unhandled.length > 0) {
    throw new ConfigError(
      `no handler for ${unhandled.join(', ')}: register one with on(), or run with dryRun`,
    );
  }
  return chosen;
}

/** What a run gathers as it goes. */
interface Tally {
  readonly checked: Record<ReconcileKind, number>;
  handled: number;
  recovered: number;
  readonly missing: ReconciledEntity[];
  readonly failed: FailedEntity[];
  readonly inFlight: ReconciledEntity[];
  readonly unrecorded: FailedEntity[];
}

/** A run's options, checked: its kinds, its window (the same for every school of a run), the rest. */
export interface RunPlan {
  readonly kinds: readonly ReconcileKind[];
  readonly window: ReconcileWindow;
  readonly dryRun: boolean;
  readonly signal: AbortSignal | undefined;
  readonly onProgress: ((progress: ReconcileProgress) => void) | undefined;
}

/** How one school's run ended: its report, and what ended it early, if anything did. */
export interface SchoolRun {
  /** What it did (until it ended, when it failed). */
  readonly report: ReconcileReport;
  /** What was thrown, when the run ended early (its API failed, or it was aborted). */
  readonly failure: { readonly error: unknown } | undefined;
}

/** A run's options, checked (a `ConfigError` for a mistake), with its window from now. */
function planOf(
  settings: ReconcilerSettings,
  handlers: Handlers,
  runOptions: ReconcileRunOptions,
): RunPlan {
  if (typeof runOptions !== 'object' || runOptions === null) {
    throw new ConfigError("run takes an options object: { since: '48h' }");
  }
  const { since, until, dryRun = false, signal, onProgress } = runOptions;
  const kinds = kindsOf(runOptions, handlers);
  const window = windowOf(since, until, {
    now: settings.now(),
    minAgeMs: settings.minAgeMs,
    lookbackMs: settings.lookbackMs,
    listsInvoices: kinds.includes('invoice'),
  });
  signal?.throwIfAborted();
  return { kinds, window, dryRun, signal, onProgress };
}

/** A run of one school, or of each school in turn. */
async function runReconcile(
  settings: ReconcilerSettings,
  handlers: Handlers,
  runOptions: ReconcileRunOptions,
): Promise<ReconcileReport> {
  const plan = planOf(settings, handlers, runOptions);
  if (settings.tenants !== undefined) {
    return runTenants(settings, plan, (school) => runSchool(school, handlers, plan));
  }
  const { report, failure } = await runSchool(settings, handlers, plan);
  if (failure !== undefined) throw failure.error;
  return report;
}

/**
 * One school's run over the plan's window: each kind in turn. What ends it early (an error of
 * the API client, the run's abort) is its `failure`, beside what it did until then.
 */
async function runSchool(
  school: SchoolSettings,
  handlers: Handlers,
  plan: RunPlan,
): Promise<SchoolRun> {
  const tally: Tally = {
    checked: { invoice: 0, access: 0, certificate: 0, user: 0 },
    handled: 0,
    recovered: 0,
    missing: [],
    failed: [],
    inFlight: [],
    unrecorded: [],
  };
  const config: RecoveryConfig = { ...school, signal: plan.signal };
  let failure: SchoolRun['failure'];
  try {
    for (const kind of plan.kinds) {
      const handler = handlers[kind] as ReconcileHandler<typeof kind>;
      const run = new KindRun(kind, handler, school, config, tally);
      run.onPage = plan.onProgress;
      await run.reconcile(plan.window, plan.dryRun);
    }
  } catch (error) {
    failure = { error };
  }
  const { failed, inFlight, unrecorded } = tally;
  const { window } = plan;
  const report: ReconcileReport = Object.freeze({
    window: { from: new Date(window.from).toISOString(), to: new Date(window.to).toISOString() },
    checked: Object.freeze(tally.checked),
    handled: tally.handled,
    recovered: tally.recovered,
    missing: Object.freeze(tally.missing),
    failed: Object.freeze(failed),
    inFlight: Object.freeze(inFlight),
    unrecorded: Object.freeze(unrecorded),
    complete:
      failure === undefined &&
      failed.length === 0 &&
      inFlight.length === 0 &&
      unrecorded.length === 0,
  });
  return { report, failure };
}

/** How long a run waits between two tries of the entities another claim holds. */
const IN_FLIGHT_RETRY_MS = 1000;

/**
 * One kind of a run: its items read page by page, each page's records looked at in one store
 * call, every entity none of whose records is done claimed and recovered, a few at once
 * (recover-together.ts), and those another claim holds tried again at the end for up to
 * `inFlightWaitMs`.
 */
class KindRun<K extends ReconcileKind> {
  readonly #kind: K;
  readonly #handler: ReconcileHandler<K> | undefined;
  readonly #settings: SchoolSettings;
  readonly #config: RecoveryConfig;
  readonly #tally: Tally;
  /** Entities another claim held when they were checked: tried again at the end. */
  readonly #held: ListedEntity<K>[] = [];
  /** Told after each page (the run's `onProgress`). */
  onPage: ((progress: ReconcileProgress) => void) | undefined;

  constructor(
    kind: K,
    handler: ReconcileHandler<K> | undefined,
    settings: SchoolSettings,
    config: RecoveryConfig,
    tally: Tally,
  ) {
    this.#kind = kind;
    this.#handler = handler;
    this.#settings = settings;
    this.#config = config;
    this.#tally = tally;
  }

  /**
   * Every item of the kind over the window. An item that fails its schema is `failed`
   * (`invalid_payload`); an error of the API client ends the run.
   */
  async reconcile(window: ReconcileWindow, dryRun: boolean): Promise<void> {
    const kind = this.#kind;
    const tally = this.#tally;
    const onInvalidItem = ({ id, position, issues }: InvalidListItem) => {
      tally.checked[kind] += 1;
      const named = id === undefined ? `#${position}` : String(id);
      const what = `the list item at position ${position} does not match its schema (${issues.join(', ')})`;
      const error = new RecoveryError('invalid_payload', kind, named, what);
      tally.failed.push(Object.freeze({ kind, id: named, error }));
    };
    const { api, take, tenant } = this.#settings;
    const { signal } = this.#config;
    const options: ListingOptions = signal
      ? { take, signal, onInvalidItem }
      : { take, onInvalidItem };
    let page: ListedEntity<K>[] = [];
    for await (const listed of listEntities(kind, api, window, options, tenant)) {
      tally.checked[kind] += 1;
      page.push(listed);
      if (page.length < take) continue;
      await this.#check(page, dryRun);
      page = [];
    }
    if (page.length > 0) await this.#check(page, dryRun);
    await this.#waitForHeld();
  }

  /** One page: its records looked at in one call; what no record names done is recovered. */
  async #check(page: readonly ListedEntity<K>[], dryRun: boolean): Promise<void> {
    await this.#checkPage(page, dryRun);
    const { tenant } = this.#settings;
    const checked = { ...this.#tally.checked };
    try {
      this.onPage?.(
        tenant === undefined
          ? { kind: this.#kind, checked }
          : { tenant, kind: this.#kind, checked },
      );
    } catch {
      // A progress line that cannot be written never stops a run.
    }
  }

  async #checkPage(page: readonly ListedEntity<K>[], dryRun: boolean): Promise<void> {
    const { signal, store } = this.#config;
    signal?.throwIfAborted();
    let states: readonly KeyState[];
    try {
      states = await store.peek(page.flatMap((listed) => listed.records));
    } catch (cause) {
      for (const listed of page) {
        this.#failed(
          listed,
          new RecoveryError(
            'store_unavailable',
            this.#kind,
            listed.id,
            "the store failed to read the entities' records",
            cause,
          ),
        );
      }
      return;
    }
    let at = 0;
    const free: ListedEntity<K>[] = [];
    for (const listed of page) {
      const mine = states.slice(at, (at += listed.records.length));
      if (mine.some((state) => state.state === 'done')) this.#tally.handled += 1;
      else if (mine.some((state) => state.state === 'in_flight')) {
        if (dryRun) this.#entity(this.#tally.inFlight, listed);
        else this.#held.push(listed);
      } else if (dryRun) this.#entity(this.#tally.missing, listed);
      else free.push(listed);
    }
    await this.#recover(free, this.#held);
  }

  /**
   * Recover `entities`, {@link RECOVERIES_AT_ONCE} at a time, and count what became of each, in
   * their order; one another claim holds goes to `held`. The run's abort starts no more and is
   * thrown once those under way have ended, what they did counted.
   */
  async #recover(entities: readonly ListedEntity<K>[], held: ListedEntity<K>[]): Promise<void> {
    const { signal } = this.#config;
    const { results, failure } = await eachAtMost(entities, RECOVERIES_AT_ONCE, (listed) => {
      signal?.throwIfAborted();
      return recoverEntity(this.#kind, listed, this.#handler!, this.#config);
    });
    results.forEach((recovery, at) => {
      if (recovery !== undefined) this.#count(entities[at]!, recovery, held);
    });
    if (failure !== undefined) throw failure.error;
  }

  /** What became of one entity, counted; one another claim holds goes to `held`. */
  #count(listed: ListedEntity<K>, recovery: Recovery, held: ListedEntity<K>[]): void {
    const tally = this.#tally;
    if (recovery.state === 'handled') tally.handled += 1;
    else if (recovery.state === 'recovered') tally.recovered += 1;
    else if (recovery.state === 'in_flight') held.push(listed);
    else if (recovery.state === 'unrecorded') {
      tally.unrecorded.push(
        Object.freeze({ kind: this.#kind, id: listed.id, error: recovery.error }),
      );
    } else this.#failed(listed, recovery.error);
  }

  /**
   * The entities another claim held, tried again every second for up to `inFlightWaitMs` (a
   * webhook's handlers end in seconds); those still held then are `inFlight`, never `handled`:
   * the claim may be of a process that died, and its entity not handled at all.
   */
  async #waitForHeld(): Promise<void> {
    const deadline = Date.now() + this.#settings.inFlightWaitMs;
    let held = this.#held.splice(0);
    while (held.length > 0 && Date.now() < deadline) {
      await sleep(Math.min(IN_FLIGHT_RETRY_MS, deadline - Date.now()), this.#config.signal);
      const still: ListedEntity<K>[] = [];
      await this.#recover(held, still);
      held = still;
    }
    for (const listed of held) this.#entity(this.#tally.inFlight, listed);
  }

  #failed(listed: ListedEntity<K>, error: RecoveryError): void {
    this.#tally.failed.push(Object.freeze({ kind: this.#kind, id: listed.id, error }));
  }

  #entity(list: ReconciledEntity[], listed: ListedEntity<K>): void {
    list.push(Object.freeze({ kind: this.#kind, id: listed.id }));
  }
}
