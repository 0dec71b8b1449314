/**
 * The (h) rows' receiver: the adapters' work in one straight async function, so that a target
 * missed against a hand-written receiver can be told apart: the adapter against (h) is what the
 * receiver's pipeline costs (its steps, their endings, the adapter's reading of the request); (h)
 * against the hand-written receiver of (a) or (g) is what the work itself costs.
 *
 * The work, done with the receiver's own parts and settings, each called once in order: the
 * signature verified, the envelope parsed and its age checked, the payload validated, the key
 * claimed in the store with a lease, the handler raced against the deadline queue, the key
 * completed with the body's fingerprint, and the receiver's own answer. It is the cheapest this
 * work can be written (a receiver written by hand would race a timer per request and validate
 * with a schema library), and it has none of the pipeline.
 * @module
 */

import {
  isFixedContractEvent,
  validateEventData,
  type WebhookEvent,
  parseEnvelope,
} from '../src/platform/events/index.js';
import {
  answer,
  checkOptions,
  DeadlineQueue,
  isTimedOut,
  isWithinAgeWindow,
  runHandlers,
} from '../src/internal.js';
import type { Outcome } from '../src/receiving/outcome.js';
import { createVerifier } from '../src/platform/signature.js';
import { BENCH_RECEIVER_OPTIONS } from './bodies.js';

/** The status and JSON body a delivery is answered with. */
export interface SameWorkAnswer {
  status: number;
  json: string;
}

/** The receiver's answer to `outcome`, as JSON. */
function answered(outcome: Outcome, idempotencyKey?: string): SameWorkAnswer {
  const { status, body } = answer(outcome, idempotencyKey);
  return { status, json: JSON.stringify(body) };
}

/**
 * A receiver of raw bodies doing the adapters' work, with an async handler that calls `onEvent`
 * as the schoolhooks rows run one.
 */
export function sameWork(
  onEvent: () => void,
): (body: Uint8Array, signature: string | null | undefined) => Promise<SameWorkAnswer> {
  const { secrets, store, maxEventAgeMs, dedupTtlMs, leaseMs, handlerTimeoutMs, now } =
    checkOptions({ ...BENCH_RECEIVER_OPTIONS, logger: false });
  // The receiver's own secrets, prepared as it prepares them: the one verifier, whatever the tenant.
  const verifier = createVerifier(secrets);
  const deadlines = new DeadlineQueue(handlerTimeoutMs);
  const handlers = [
    async () => {
      onEvent();
    },
  ];
  return async (body, signature) => {
    // node:crypto verifies at once: a hand-written receiver would not wait for it.
    const fingerprint = verifier.verify(body, signature);
    if (fingerprint instanceof Promise) throw new Error('the signature was verified later');
    if (fingerprint === undefined) return answered('invalid_signature');
    const parsed = parseEnvelope(body);
    if (!parsed.ok) return answered('malformed');
    const { envelope, timestampMs } = parsed;
    const key = envelope.idempotencyKey;
    if (!isWithinAgeWindow(now() - timestampMs, maxEventAgeMs)) return answered('stale', key);
    if (isFixedContractEvent(envelope.event)) {
      if (!validateEventData(envelope.event, envelope.data).ok) {
        return answered('invalid_payload', key);
      }
    }
    const claim = await store.claim({
      key,
      leaseMs,
      completion: { fingerprint, ttlMs: dedupTtlMs },
    });
    if (claim.state === 'in_flight') return answered('in_flight', key);
    if (claim.state === 'done') return answered('duplicate', key);
    // What the checks above made sure of, as the pipeline's validate step hands it on.
    const event = envelope as unknown as WebhookEvent<string>;
    const handlersOutcome = await runHandlers(handlers, event, deadlines);
    if (isTimedOut(handlersOutcome)) return answered('timeout', key);
    if (!handlersOutcome.ok) {
      void store.settle(claim, 'release');
      return answered('handler_failed', key);
    }
    void store.settle(claim, 'complete');
    return answered('processed', key);
  };
}
