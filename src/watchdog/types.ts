/**
 * What the watchdog keeps of a receiver's answers (docs/watchdog.md): notes a receiver writes to its
 * store in batches, what the store gives back per tenant, and the health a watchdog reads from it.
 * @module
 */

/** One answer a receiver gave the platform, as the watchdog keeps it. */
export interface AnswerNote {
  /** The tenant the route named (many schools on one endpoint), `''` for none. */
  readonly scope: string;
  /** When it was answered, in ms since the epoch (the receiver's clock). */
  readonly at: number;
  /** Whether the platform counts the answer as delivered (200, 201 or 202). */
  readonly ok: boolean;
  /** The delivery's idempotencyKey, once its signature and envelope were read. */
  readonly key?: string | undefined;
  /** Its event's name, with the key. */
  readonly event?: string | undefined;
}

/** A delivery answered non-2xx, as the store keeps it until a retry succeeds or its retries are over. */
export interface FailingDelivery {
  readonly key: string;
  readonly event: string;
  /** Its first attempt answered non-2xx, in ms since the epoch. */
  readonly firstAttemptAt: number;
  /** How many of its attempts were answered non-2xx, by every process of the receiver. */
  readonly attemptsSeen: number;
  /** Its latest attempt, in ms since the epoch. */
  readonly lastAttemptAt: number;
}

/** What a store keeps of one tenant's (or the receiver's) answers. */
export interface WatchState {
  /** The last answer the platform counted as delivered, in ms since the epoch. */
  readonly lastSuccessAt?: number | undefined;
  /** The last answer of any kind. */
  readonly lastAttemptAt?: number | undefined;
  /** The first answer not 2xx since the last success: how long the endpoint has been failing. */
  readonly failingSince?: number | undefined;
  /** The deliveries answered non-2xx and not since answered 2xx, oldest first attempt first. */
  readonly failing: readonly FailingDelivery[];
}

/**
 * One call of a store's `watch`: the notes to keep (maybe none), how long and how many failing
 * deliveries to keep per tenant, how long its summary, and the tenant whose state to give back
 * (if any).
 */
export interface WatchBatch {
  readonly notes: readonly AnswerNote[];
  /** A failing delivery whose first attempt is older than this is forgotten (its retries are over). */
  readonly keepMs: number;
  /**
   * How long a tenant's last success, last attempt and failing time are kept after its last
   * write, on a server that expires them (Redis, Postgres; memoryStore keeps them with the
   * process). At least keepMs, and longer than the platform's disable span (14 days without a
   * success, src/platform/platform-contract.ts): an endpoint that hears nothing still knows when it is
   * disabled. WATCHDOG_DEFAULTS.keepSummaryMs (src/defaults.ts).
   */
  readonly keepSummaryMs: number;
  /** The most failing deliveries kept per tenant; those of the oldest first attempt go first. */
  readonly maxFailing: number;
  /** The receiver's clock now, in ms since the epoch: what `keepMs` counts back from. */
  readonly now: number;
  /** The tenant whose state to give back (`''` for none); undefined: write only. */
  readonly read?: string | undefined;
}
