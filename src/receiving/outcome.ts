/**
 * What happened to one delivery, and everything that follows from it: the HTTP status it is
 * answered with, whether the platform retries it, how loudly it is logged, how `schoolhooks
 * listen` and the inspector show it, how telemetry marks it, and what an inbox does after a run
 * that ends in it. One table, so a new outcome or a changed rule is written in one place.
 * @module
 */

import { isSuccessStatus } from '../platform/platform-contract.js';

/** How loudly an outcome is logged: a method of the receiver's `Logger`. */
export type OutcomeLogLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * How `schoolhooks listen`'s inspector colours (and filters) an outcome: `duplicate` (its key
 * done already, or, `superseded`, an older state than one processed); `queued` (accepted and
 * stored in an inbox, its handlers not run yet); any other acknowledgement is `processed`
 * (ignored included); `failed` when the platform will retry; `refused` otherwise.
 */
export type OutcomeClass = 'processed' | 'queued' | 'duplicate' | 'refused' | 'failed';

/** What an inbox does after a worker's run of a stored delivery ends in an outcome. */
export type OutcomeRun = 'succeeded' | 'retry' | 'dead_letter';

/** Everything that follows from one outcome. */
export interface OutcomeRule {
  /** The HTTP status of the answer. */
  readonly status: number;
  /** Whether the answer acknowledges the delivery (`body.ok`): the platform counts it delivered. */
  readonly success: boolean;
  /** Whether the platform delivers it again (any answer but its success statuses). */
  readonly platformRetries: boolean;
  /** The log level of its line. */
  readonly logLevel: OutcomeLogLevel;
  /** Reached only after the signature verified: `listen` may read and name the event. */
  readonly verified: boolean;
  /** Its class in `listen`'s inspector. */
  readonly class: OutcomeClass;
  /** Whether a delivery span ending in it is an error (`error.type` set to the outcome): 5xx only. */
  readonly spanError: boolean;
  /** What an inbox does after a run that ends in it; a job span is an error unless `succeeded`. */
  readonly run: OutcomeRun;
}

/**
 * The rules of every outcome, in the order of the pipeline's steps.
 *
 * @example
 * ```ts
 * import { OUTCOMES } from 'schoolhooks';
 *
 * if (OUTCOMES[result.outcome].platformRetries) metrics.increment('webhook.retried');
 * ```
 */
export const OUTCOMES = {
  method_not_allowed: rule(405, 'info', 'refused', { verified: false, run: 'dead_letter' }),
  unsupported_media_type: rule(415, 'info', 'refused', { verified: false, run: 'dead_letter' }),
  body_unavailable: rule(500, 'error', 'failed', { verified: false, run: 'dead_letter' }),
  too_large: rule(413, 'info', 'refused', { verified: false, run: 'dead_letter' }),
  unknown_tenant: rule(404, 'warn', 'refused', { verified: false, run: 'retry' }),
  secret_unavailable: rule(503, 'error', 'failed', { verified: false, run: 'retry' }),
  invalid_signature: rule(401, 'warn', 'refused', { verified: false, run: 'dead_letter' }),
  malformed: rule(400, 'warn', 'refused', { verified: false, run: 'dead_letter' }),
  stale: rule(422, 'warn', 'refused', { verified: true, run: 'dead_letter' }),
  invalid_payload: rule(422, 'warn', 'refused', { verified: true, run: 'dead_letter' }),
  duplicate: rule(200, 'debug', 'duplicate', { verified: true, run: 'succeeded' }),
  conflict: rule(409, 'error', 'refused', { verified: true, run: 'dead_letter' }),
  in_flight: rule(409, 'info', 'refused', { verified: true, run: 'retry' }),
  store_unavailable: rule(503, 'error', 'failed', { verified: true, run: 'retry' }),
  superseded: rule(200, 'info', 'duplicate', { verified: true, run: 'succeeded' }),
  ignored: rule(200, 'debug', 'processed', { verified: true, run: 'succeeded' }),
  handler_failed: rule(500, 'error', 'failed', { verified: true, run: 'retry' }),
  timeout: rule(503, 'warn', 'failed', { verified: true, run: 'retry' }),
  queued: rule(202, 'info', 'queued', { verified: true, run: 'dead_letter' }),
  inbox_unavailable: rule(503, 'error', 'failed', { verified: true, run: 'dead_letter' }),
  processed: rule(200, 'info', 'processed', { verified: true, run: 'succeeded' }),
} as const satisfies Record<string, OutcomeRule>;

/** What happened to one delivery. */
export type Outcome = keyof typeof OUTCOMES;

/** Every status the receiver answers with, by outcome (read from {@link OUTCOMES}). */
export const OUTCOME_STATUS = Object.fromEntries(
  Object.entries(OUTCOMES).map(([outcome, { status }]) => [outcome, status]),
) as { readonly [O in Outcome]: (typeof OUTCOMES)[O]['status'] };

/** One row: what the status decides (success, platform retry, span error) is derived from it. */
function rule<S extends number>(
  status: S,
  logLevel: OutcomeLogLevel,
  shownAs: OutcomeClass,
  { verified, run }: { verified: boolean; run: OutcomeRun },
): OutcomeRule & { readonly status: S } {
  // What the platform counts as delivered (src/platform/platform-contract.ts) is what acknowledges it.
  const success = isSuccessStatus(status);
  return {
    status,
    success,
    platformRetries: !success,
    logLevel,
    verified,
    class: shownAs,
    spanError: status >= 500,
    run,
  };
}
