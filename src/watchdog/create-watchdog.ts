/**
 * `createWatchdog`: a receiver's health from what its store kept of its answers, and, with the
 * school's API, from what the platform's lists hold that no delivery recorded (docs/watchdog.md).
 * @module
 */

import { WATCHDOG_DEFAULTS } from '../defaults.js';
import { isTenantName, quotedTenant } from '../keys/delivery-key.js';
import { ConfigError } from '../errors.js';
import type { Receiver } from '../receiving/receiver.js';
import { listEntities, type ListedEntity } from '../reconcile/listings.js';
import type { ReconcileApi, ReconcileKind } from '../reconcile/types.js';
import type { ReconcileWindow } from '../reconcile/window.js';
import type { IdempotencyStore } from '../stores/types.js';
import { ANSWER_NOTES, type AnswerNotes } from './answer-notes.js';
import { healthOf, type Health } from './health.js';
import type { WatchBatch, WatchState } from './types.js';

/** The API calls a watchdog reads for silence: `createSchoolApi(…)` has them. */
export type WatchdogApi = Pick<ReconcileApi, 'invoices' | 'productAccesses'>;

/** Options of {@link createWatchdog}. */
export interface WatchdogOptions {
  /** The receiver to watch: its store, and this process's answers not yet written to it. */
  receiver?: Receiver;
  /** The store a receiver keeps its answers in, when the watchdog runs apart from it. */
  store?: IdempotencyStore;
  /** The school's API (`createSchoolApi`): with it, `check()` reads the lists for silence. */
  api?: WatchdogApi;
  /** The school to watch, on a receiver of many (its tenant). */
  tenant?: string;
  /** The clock, in ms since the epoch. Default `Date.now`. */
  now?: () => number;
  /** No 2xx answer for this long while attempts come in is `failing`. Default 30 min. */
  failingAfterMs?: number;
  /** Listed entities older than this that no delivery recorded are `silent`. Default 30 min. */
  silentAfterMs?: number;
}

/** A watchdog: {@link Watchdog.check} reads the receiver's health. */
export interface Watchdog {
  /** The receiver's health now (its process's pending answers written first). */
  check(): Promise<Health>;
}

/** A store that keeps the watchdog's notes. */
type Watched = IdempotencyStore & { watch: (batch: WatchBatch) => Promise<WatchState | undefined> };

/**
 * A watchdog over a receiver (or its store): `check()` says `ok`, `at_risk` (a delivery answered
 * non-2xx whose retries are not over, with when the platform gives it up), `failing` (no 2xx answer
 * for `failingAfterMs`), or `silent` (with `api`: paid invoices or accesses older than
 * `silentAfterMs` that no delivery recorded: the endpoint may be disabled or point elsewhere), and
 * `disablesAt`, when the platform disables the endpoint if nothing succeeds before.
 *
 * @example
 * ```ts
 * import { createWatchdog } from 'schoolhooks/watchdog';
 *
 * const watchdog = createWatchdog({ receiver, api });
 * const health = await watchdog.check();
 * if (health.status !== 'ok') await page(`webhooks ${health.status}`, health);
 * ```
 */
export function createWatchdog(options: WatchdogOptions): Watchdog {
  const settings = checkWatchdogOptions(options);
  return {
    check: () => checkNow(settings),
  };
}

/** A watchdog's options, checked, with their defaults. */
interface WatchdogSettings {
  readonly store: Watched;
  readonly notes: AnswerNotes | undefined;
  readonly api: WatchdogApi | undefined;
  readonly tenant: string | undefined;
  readonly now: () => number;
  readonly failingAfterMs: number;
  readonly silentAfterMs: number;
}

function checkWatchdogOptions(options: WatchdogOptions): WatchdogSettings {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('createWatchdog takes an options object: { receiver } or { store }');
  }
  const {
    receiver,
    api,
    tenant,
    now = Date.now,
    failingAfterMs = WATCHDOG_DEFAULTS.failingAfterMs,
    silentAfterMs = WATCHDOG_DEFAULTS.silentAfterMs,
  } = options;
  const store = options.store ?? receiver?.store;
  if (store === undefined) {
    throw new ConfigError(
      'createWatchdog needs the receiver, or the store it keeps its answers in',
    );
  }
  if (typeof (store as { watch?: unknown }).watch !== 'function') {
    throw new ConfigError(
      'the store keeps no watchdog notes (it has no watch()): memoryStore, redisStore and postgresStore do',
    );
  }
  if (tenant !== undefined && (typeof tenant !== 'string' || !isTenantName(tenant))) {
    throw new ConfigError(
      `tenant ${typeof tenant === 'string' ? quotedTenant(tenant) : typeof tenant} cannot name a tenant`,
    );
  }
  if (
    api !== undefined &&
    (typeof api.invoices !== 'function' || typeof api.productAccesses !== 'function')
  ) {
    throw new ConfigError(
      'api must be the school’s API client (createSchoolApi from schoolhooks/api)',
    );
  }
  for (const [name, value] of Object.entries({ failingAfterMs, silentAfterMs })) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new ConfigError(`${name} must be a non-negative number of ms`);
    }
  }
  if (typeof now !== 'function') throw new ConfigError('now must be a function returning ms');
  const notes = (receiver as { [ANSWER_NOTES]?: AnswerNotes } | undefined)?.[ANSWER_NOTES];
  // Notes of a receiver on another store than the one watched are not this watchdog's.
  const own = notes !== undefined && receiver?.store === store ? notes : undefined;
  return {
    store: store as Watched,
    notes: own,
    api,
    tenant,
    now,
    failingAfterMs,
    silentAfterMs,
  };
}

async function checkNow(settings: WatchdogSettings): Promise<Health> {
  const scope = settings.tenant ?? '';
  const { keepFailingMs, keepSummaryMs, maxFailing } = WATCHDOG_DEFAULTS;
  const now = settings.now();
  const batch = { notes: [], keepMs: keepFailingMs, keepSummaryMs, maxFailing, now, read: scope };
  const state = (settings.notes === undefined
    ? await settings.store.watch(batch)
    : await settings.notes.write(scope)) ?? { failing: [] };
  const silence = settings.api === undefined ? undefined : await silenceOf(settings, now);
  return healthOf(state, { now, failingAfterMs: settings.failingAfterMs, silence });
}

/** The kinds whose lists tell silence: what a paying or enrolling student triggers. */
const WATCHED_KINDS: readonly ReconcileKind[] = ['invoice', 'access'];

/**
 * The paid invoices and accesses created within the last day but older than `silentAfterMs` that
 * no delivery recorded (no record done, none in flight), and the oldest of them.
 */
async function silenceOf(
  settings: WatchdogSettings,
  now: number,
): Promise<{ entities: number; oldestAt: number }> {
  const to = now - settings.silentAfterMs;
  const from = Math.min(to, now - WATCHDOG_DEFAULTS.silentWindowMs);
  const window: ReconcileWindow = { from, to, invoicesFrom: from };
  let entities = 0;
  let oldestAt = Infinity;
  for (const kind of WATCHED_KINDS) {
    const api = settings.api as ReconcileApi;
    const page: ListedEntity<typeof kind>[] = [];
    const check = async () => {
      const states = await settings.store.peek(page.flatMap((listed) => listed.records));
      let at = 0;
      for (const listed of page) {
        const mine = states.slice(at, (at += listed.records.length));
        if (mine.some((state) => state.state !== 'free')) continue;
        entities += 1;
        const created = Date.parse(String((listed.item as { createdAt?: unknown }).createdAt));
        oldestAt = Math.min(oldestAt, Number.isNaN(created) ? from : created);
      }
      page.length = 0;
    };
    for await (const listed of listEntities(
      kind,
      api,
      window,
      { take: 1000, onInvalidItem: () => {} },
      settings.tenant,
    )) {
      page.push(listed);
      if (page.length === 1000) await check();
    }
    if (page.length > 0) await check();
  }
  return { entities, oldestAt };
}
