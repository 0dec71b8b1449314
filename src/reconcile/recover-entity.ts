/**
 * One listed entity, recovered at most once across every run and every webhook: its record
 * (`recordKeyOf`) claimed as a delivery claims its key, its handler run against
 * `handlerTimeoutMs`, the record completed `reconciled` on success and freed on failure.
 * @module
 */

import { recordKeyOf } from '../delivery-key.js';
import { RECOVERED_BY_RUN } from '../entity-records.js';
import type { ClaimedKey, IdempotencyStore } from '../stores/types.js';
import { RECONCILE_DEFAULTS } from '../defaults.js';
import type { ListedEntity } from './listings.js';
import { RecoveryError } from './recovery-error.js';
import type { ReconcileContext, ReconcileHandler, ReconcileKind } from './types.js';

/** What became of one entity. */
export type Recovery =
  /** A webhook or a run handled it, or is handling it now. */
  | { readonly state: 'handled' }
  /** Its handler ran and its record says so. */
  | { readonly state: 'recovered' }
  /** Nobody handled it (a dry run: nothing was run or recorded). */
  | { readonly state: 'missing' }
  | { readonly state: 'failed'; readonly error: RecoveryError };

/** What every recovery of a run shares. */
export interface RecoveryConfig {
  readonly store: IdempotencyStore;
  readonly tenant: string | undefined;
  readonly leaseMs: number;
  readonly handlerTimeoutMs: number;
  readonly dryRun: boolean;
  /** The run's signal: its abort stops the handler running and the run. */
  readonly signal: AbortSignal | undefined;
}

const HANDLED: Recovery = { state: 'handled' };
const RECOVERED: Recovery = { state: 'recovered' };
const MISSING: Recovery = { state: 'missing' };

/**
 * Recover `listed` with `handler` (none with `dryRun`). A failure of the handler or of the store
 * is the entity's, in the answer; only the run's abort is thrown (its reason).
 */
export async function recoverEntity<K extends ReconcileKind>(
  kind: K,
  listed: ListedEntity<K>,
  handler: ReconcileHandler<K> | undefined,
  config: RecoveryConfig,
): Promise<Recovery> {
  const { store, leaseMs, dryRun } = config;
  const record = recordKeyOf(listed.entity, config.tenant);
  const failed = (code: RecoveryError['code'], what: string, cause?: unknown): Recovery => ({
    state: 'failed',
    error: new RecoveryError(code, kind, listed.id, what, cause),
  });
  let claimed;
  try {
    claimed = await store.claim(record, leaseMs);
  } catch (cause) {
    return failed('store_unavailable', "the store failed to claim the entity's record", cause);
  }
  // `done`: a webhook (`webhook`) or a run (`reconciled`) recorded it; `in_flight`: one is at it.
  if (claimed.state !== 'claimed') return HANDLED;
  if (config.signal?.aborted) {
    await freeQuietly(store, record, claimed);
    throw config.signal.reason;
  }
  if (dryRun || handler === undefined) {
    await freeQuietly(store, record, claimed);
    return MISSING;
  }
  const ended = await runHandler(kind, listed, handler, config, claimed);
  if (ended === 'aborted') throw config.signal?.reason;
  if (ended === 'timeout') {
    return failed('timeout', `the ${kind} handler still ran after ${config.handlerTimeoutMs} ms`);
  }
  if (!ended.ok) {
    await freeQuietly(store, record, claimed);
    return failed('handler_failed', `the ${kind} handler failed`, ended.error);
  }
  const recorded = await recordRecovery(store, record, claimed);
  return recorded.ok
    ? RECOVERED
    : failed('store_unavailable', 'the store failed to record the recovery', recorded.error);
}

/** How a handler, or the recording of its recovery, ended. */
type Settled = { readonly ok: true } | { readonly ok: false; readonly error: unknown };

/**
 * Record a recovery whose handler succeeded, or, when the store cannot (it rejects, or throws:
 * a store's operations may be synchronous), free its record for the next run. With a claim's
 * transaction the handler's writes are then gone too.
 */
async function recordRecovery(
  store: IdempotencyStore,
  record: string,
  claimed: ClaimedKey,
): Promise<Settled> {
  try {
    await store.complete(record, claimed.token, RECONCILE_DEFAULTS.recordTtlMs, RECOVERED_BY_RUN);
    return { ok: true };
  } catch (error) {
    await freeQuietly(store, record, claimed);
    return { ok: false, error };
  }
}

/**
 * Run `handler` until it settles, `handlerTimeoutMs` passes or the run is aborted. In the last
 * two cases its signal is aborted and its claim's transaction abandoned (nothing it writes later
 * commits); its record stays held until it ends, then is completed or freed by how it ended (or
 * freed by the lease), so no other run starts the same recovery while it still runs.
 */
async function runHandler<K extends ReconcileKind>(
  kind: K,
  { item, id, entity }: ListedEntity<K>,
  handler: ReconcileHandler<K>,
  { store, tenant, handlerTimeoutMs, signal: runSignal }: RecoveryConfig,
  claimed: ClaimedKey,
): Promise<Settled | 'timeout' | 'aborted'> {
  const controller = new AbortController();
  const ctx: ReconcileContext = {
    kind,
    id,
    entity,
    tenant,
    transaction: claimed.transaction?.client,
    signal: controller.signal,
  };
  let stopped: (why: 'timeout' | 'aborted') => void = () => {};
  const stop = new Promise<'timeout' | 'aborted'>((resolve) => (stopped = resolve));
  const onAbort = () => {
    controller.abort(runSignal?.reason);
    stopped('aborted');
  };
  runSignal?.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => {
    controller.abort(new Error(`the ${kind} handler timed out after ${handlerTimeoutMs} ms`));
    stopped('timeout');
  }, handlerTimeoutMs);
  const settled = new Promise((resolve) => resolve(handler(item, ctx))).then(
    (): Settled => ({ ok: true }),
    (error: unknown): Settled => ({ ok: false, error }),
  );
  try {
    const ended = await Promise.race([settled, stop]);
    if (typeof ended !== 'string') return ended;
    claimed.transaction?.abandon();
    const record = recordKeyOf(entity, tenant);
    void settled.then((late): Promise<unknown> =>
      late.ok ? recordRecovery(store, record, claimed) : freeQuietly(store, record, claimed),
    );
    return ended;
  } finally {
    clearTimeout(timer);
    runSignal?.removeEventListener('abort', onAbort);
  }
}

/** Free a record this run holds; a failure leaves it to its lease. */
async function freeQuietly(
  store: IdempotencyStore,
  record: string,
  { token }: ClaimedKey,
): Promise<void> {
  try {
    await store.release(record, token);
  } catch {
    // The lease frees it.
  }
}
