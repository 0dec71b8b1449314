/**
 * One listed entity, recovered at most once across every run and every webhook: its records
 * claimed in one store call as a delivery claims its key, its handler run against
 * `handlerTimeoutMs`, the records completed `reconciled` on success and freed on failure.
 * @module
 */

import type { RunResult } from '../utils/run-result.js';
import { RECOVERED_BY_RUN } from '../keys/delivery-key.js';
import type { ClaimRequest, HeldClaim, IdempotencyStore } from '../stores/types.js';
import { RECONCILE_DEFAULTS } from '../defaults.js';
import type { ListedEntity } from './listings.js';
import { RecoveryError } from './recovery-error.js';
import type { ReconcileContext, ReconcileHandler, ReconcileKind } from './types.js';

/** What became of one entity. */
export type Recovery =
  /** A webhook or a run handled it (one of its records is done). */
  | { readonly state: 'handled' }
  /** Its handler ran and its records say so. */
  | { readonly state: 'recovered' }
  /** Another claim holds one of its records (a webhook's or a run's, live or dead): not yet known. */
  | { readonly state: 'in_flight' }
  /** Its handler succeeded, but its records could not be written: it may run again. */
  | { readonly state: 'unrecorded'; readonly error: RecoveryError }
  | { readonly state: 'failed'; readonly error: RecoveryError };

/** What every recovery of a run shares. */
export interface RecoveryConfig {
  readonly store: IdempotencyStore;
  readonly tenant: string | undefined;
  readonly leaseMs: number;
  readonly handlerTimeoutMs: number;
  /** The run's signal: its abort stops the handler running and the run. */
  readonly signal: AbortSignal | undefined;
}

const HANDLED: Recovery = { state: 'handled' };
const RECOVERED: Recovery = { state: 'recovered' };
const IN_FLIGHT: Recovery = { state: 'in_flight' };

/**
 * The waits before each new try to record a recovery whose handler succeeded (a store that is
 * briefly unreachable, as a Redis restarting): 3.5 s in all, then it is `unrecorded`.
 */
const RECORD_RETRY_DELAYS_MS = [250, 1000, 2250] as const;

/** What a recovery asks the store for: the entity's records, completed `reconciled`. */
function requestOf({ records }: ListedEntity<ReconcileKind>, leaseMs: number): ClaimRequest {
  const [key, ...others] = records;
  return {
    key: key!,
    leaseMs,
    completion: { fingerprint: RECOVERED_BY_RUN, ttlMs: RECONCILE_DEFAULTS.recordTtlMs },
    records: others.length === 0 ? undefined : others,
  };
}

/**
 * Recover `listed` with `handler`. A failure of the handler or of the store is the entity's, in
 * the answer; only the run's abort is thrown (its reason).
 */
export async function recoverEntity<K extends ReconcileKind>(
  kind: K,
  listed: ListedEntity<K>,
  handler: ReconcileHandler<K>,
  config: RecoveryConfig,
): Promise<Recovery> {
  const { store, leaseMs } = config;
  const failed = (code: RecoveryError['code'], what: string, cause?: unknown): Recovery => ({
    state: 'failed',
    error: new RecoveryError(code, kind, listed.id, what, cause),
  });
  let claim;
  try {
    claim = await store.claim(requestOf(listed, leaseMs));
  } catch (cause) {
    return failed('store_unavailable', "the store failed to claim the entity's records", cause);
  }
  if (claim.state === 'done') return HANDLED;
  if (claim.state === 'in_flight') return IN_FLIGHT;
  // A webhook recorded it under its other record (an enrollment without `access`).
  if (claim.records.some((record) => record.state === 'done')) {
    await freeQuietly(store, claim);
    return HANDLED;
  }
  if (config.signal?.aborted) {
    await freeQuietly(store, claim);
    throw config.signal.reason;
  }
  const ended = await runHandler(kind, listed, handler, config, claim);
  if (ended === 'aborted') throw config.signal?.reason;
  if (ended === 'timeout') {
    return failed('timeout', `the ${kind} handler still ran after ${config.handlerTimeoutMs} ms`);
  }
  if (!ended.ok) {
    await freeQuietly(store, claim);
    return failed('handler_failed', `the ${kind} handler failed`, ended.error);
  }
  const recorded = await recordRecovery(store, claim);
  if (recorded.ok) return RECOVERED;
  const what = 'the store failed to record the recovery';
  // With a transaction the record is the commit: the handler's writes are gone with it.
  if (claim.transaction !== undefined) return failed('store_unavailable', what, recorded.error);
  return {
    state: 'unrecorded',
    error: new RecoveryError('store_unavailable', kind, listed.id, what, recorded.error),
  };
}

/**
 * Record a recovery whose handler succeeded, trying again while the store fails (a transaction's
 * commit is tried once: once it failed there is nothing left to commit). A recording that never
 * succeeds is left to the claim's lease.
 */
async function recordRecovery(store: IdempotencyStore, claim: HeldClaim): Promise<RunResult> {
  const retries = claim.transaction === undefined ? RECORD_RETRY_DELAYS_MS : [];
  for (let attempt = 0; ; attempt++) {
    try {
      await store.settle(claim, 'complete');
      return { ok: true };
    } catch (error) {
      const delayMs = retries[attempt];
      if (delayMs === undefined) return { ok: false, error };
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}

/**
 * Run `handler` until it settles, `handlerTimeoutMs` passes or the run is aborted. In the last
 * two cases its signal is aborted and its claim's transaction abandoned (nothing it writes later
 * commits); its records stay held until it ends, then are completed or freed by how it ended (or
 * freed by the lease), so no other run starts the same recovery while it still runs.
 */
async function runHandler<K extends ReconcileKind>(
  kind: K,
  { item, id, entity }: ListedEntity<K>,
  handler: ReconcileHandler<K>,
  { store, tenant, handlerTimeoutMs, signal: runSignal }: RecoveryConfig,
  claim: HeldClaim,
): Promise<RunResult | 'timeout' | 'aborted'> {
  // A controller and a timer of its own, not AbortSignal.timeout and AbortSignal.any: once the
  // handler ended, its signal must be left alone (work it left behind is not aborted later), and
  // neither can be stopped: a timeout signal has no clear (it aborts at `handlerTimeoutMs`, its
  // timer pending till then), and a signal of AbortSignal.any stays tied to the run's, which lives
  // for the whole run. Here the timer is cleared and the listener on the run's signal removed as
  // the handler ends. And a timeout signal's reason is a bare TimeoutError, not this error that
  // names the handler and its bound.
  const controller = new AbortController();
  const ctx: ReconcileContext = {
    kind,
    id,
    entity,
    tenant,
    transaction: claim.transaction?.client,
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
    (): RunResult => ({ ok: true }),
    (error: unknown): RunResult => ({ ok: false, error }),
  );
  const ended = await Promise.race([settled, stop]);
  clearTimeout(timer);
  runSignal?.removeEventListener('abort', onAbort);
  if (typeof ended !== 'string') return ended;
  claim.transaction?.abandon();
  // Its end settles the records: completed if it succeeded and the store records it, else freed
  // now rather than at the end of the lease (a store may throw as well as reject: both caught).
  void settled.then(async (late) => {
    if (late.ok && (await recordRecovery(store, claim)).ok) return;
    await freeQuietly(store, claim);
  });
  return ended;
}

/** Free a claim this run holds; a failure leaves it to its lease. */
async function freeQuietly(store: IdempotencyStore, claim: HeldClaim): Promise<void> {
  try {
    await store.settle(claim, 'release');
  } catch {
    // The lease frees it.
  }
}
