/**
 * `createReconciler`: handlers per kind, and runs that read the platform's lists over a window and
 * recover every entity no webhook handled (the platform gives a webhook up after its fifth
 * attempt, about 4 h 46 min after the first).
 * @module
 */

import type { InvalidListItem } from '../api/errors.js';
import { ConfigError } from '../errors.js';
import { listEntities, RECONCILE_KINDS, type ListingOptions } from './listings.js';
import { recoverEntity, type RecoveryConfig } from './recover-entity.js';
import { RecoveryError } from './recovery-error.js';
import { checkReconcilerOptions, type ReconcilerSettings } from './settings.js';
import type {
  FailedEntity,
  ReconcileHandler,
  ReconcileKind,
  ReconcileReport,
  ReconcileRunOptions,
  ReconciledEntity,
  Reconciler,
  ReconcilerOptions,
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
}

async function runReconcile(
  settings: ReconcilerSettings,
  handlers: Handlers,
  runOptions: ReconcileRunOptions,
): Promise<ReconcileReport> {
  if (typeof runOptions !== 'object' || runOptions === null) {
    throw new ConfigError("run takes an options object: { since: '48h' }");
  }
  const { since, until, dryRun = false, signal } = runOptions;
  const kinds = kindsOf(runOptions, handlers);
  const window = windowOf(since, until, {
    now: settings.now(),
    minAgeMs: settings.minAgeMs,
    lookbackMs: settings.lookbackMs,
    listsInvoices: kinds.includes('invoice'),
  });
  signal?.throwIfAborted();
  const tally: Tally = {
    checked: { invoice: 0, access: 0, certificate: 0, user: 0 },
    handled: 0,
    recovered: 0,
    missing: [],
    failed: [],
  };
  const config: RecoveryConfig = { ...settings, dryRun, signal };
  for (const kind of kinds) await reconcileKind(kind, window, handlers, settings, config, tally);
  return Object.freeze({
    window: { from: new Date(window.from).toISOString(), to: new Date(window.to).toISOString() },
    checked: Object.freeze(tally.checked),
    handled: tally.handled,
    recovered: tally.recovered,
    missing: Object.freeze(tally.missing),
    failed: Object.freeze(tally.failed),
  });
}

/**
 * Every item of `kind` over the window, one at a time. An item that fails its schema is `failed`
 * (`invalid_payload`); an error of the API client ends the run.
 */
async function reconcileKind<K extends ReconcileKind>(
  kind: K,
  window: ReconcileWindow,
  handlers: Handlers,
  { api, take }: ReconcilerSettings,
  config: RecoveryConfig,
  tally: Tally,
): Promise<void> {
  const onInvalidItem = ({ id, position, issues }: InvalidListItem) => {
    tally.checked[kind] += 1;
    const named = id === undefined ? `#${position}` : String(id);
    const what = `the list item at position ${position} does not match its schema (${issues.join(', ')})`;
    const error = new RecoveryError('invalid_payload', kind, named, what);
    tally.failed.push(Object.freeze({ kind, id: named, error }));
  };
  const { signal } = config;
  const options: ListingOptions = signal
    ? { take, signal, onInvalidItem }
    : { take, onInvalidItem };
  const handler = handlers[kind] as ReconcileHandler<K> | undefined;
  for await (const listed of listEntities(kind, api, window, options)) {
    tally.checked[kind] += 1;
    signal?.throwIfAborted();
    const recovery = await recoverEntity(kind, listed, handler, config);
    if (recovery.state === 'handled') tally.handled += 1;
    else if (recovery.state === 'recovered') tally.recovered += 1;
    else if (recovery.state === 'missing')
      tally.missing.push(Object.freeze({ kind, id: listed.id }));
    else tally.failed.push(Object.freeze({ kind, id: listed.id, error: recovery.error }));
  }
}
