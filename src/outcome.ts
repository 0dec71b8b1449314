/**
 * What happened to one delivery, and the HTTP status it is answered with.
 * @module
 */

/** Every status the receiver answers with, by outcome (DESIGN section 3). */
export const OUTCOME_STATUS = {
  processed: 200,
  duplicate: 200,
  ignored: 200,
  method_not_allowed: 405,
  unsupported_media_type: 415,
  body_unavailable: 500,
  too_large: 413,
  invalid_signature: 401,
  malformed: 400,
  stale: 422,
  invalid_payload: 422,
  conflict: 409,
  in_flight: 409,
  store_unavailable: 503,
  handler_failed: 500,
  timeout: 503,
  queued: 202,
  inbox_unavailable: 503,
} as const satisfies Record<string, number>;

/** What happened to one delivery. */
export type Outcome = keyof typeof OUTCOME_STATUS;
