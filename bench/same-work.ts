/**
 * The (h) rows' receiver: the hand-written receiver of (a) and (g) doing the work every
 * schoolhooks row does, in one straight async function, so that a target missed against a
 * hand-written receiver can be told apart: the adapter against (h) is what the receiver's
 * pipeline costs (its steps, their endings, the adapter's reading of the request); (h) against
 * the hand-written receiver is what the work itself costs.
 *
 * The work: the envelope's checks and its age window, the payload validated by the receiver's
 * own validator, the key claimed in a `memoryStore` with a lease and completed with the body's
 * fingerprint after the handler, the handler raced against a deadline in one shared timer, and
 * an answer that names its outcome and key. It uses the receiver's own parts, so it is the
 * cheapest this work can be written: a receiver written by hand would race a timer per request
 * and validate with a schema library.
 * @module
 */

import { Buffer } from 'node:buffer';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { DeadlineQueue } from '../src/deadlines.js';
import { timestampMsOf } from '../src/envelope.js';
import { isFixedContractEvent, type WebhookEvent } from '../src/events/index.js';
import { validateEventData } from '../src/events/validate.js';
import { memoryStore } from '../src/index.js';
import { runHandlers } from '../src/run-handlers.js';
import { isPromiseLike } from '../src/run-steps.js';
import { BENCH_RECEIVER_OPTIONS, SECRET } from './bodies.js';

/** How long the handler may run before the delivery is answered 503: the receiver's default. */
const HANDLER_TIMEOUT_MS = 10_000;
/** The lease a claimed key holds while its handler runs: the receiver's default. */
const LEASE_MS = 60_000;

/** The status and JSON body a delivery is answered with. */
export interface SameWorkAnswer {
  status: number;
  json: string;
}

const REFUSED = '{"ok":false}';

/**
 * A receiver of raw bodies doing the adapter's work with an async handler that calls `onEvent`,
 * as the schoolhooks rows run one.
 */
export function sameWork(
  onEvent: () => void,
): (body: Uint8Array, signature: string | null | undefined) => Promise<SameWorkAnswer> {
  const { maxEventAgeMs, dedupTtlMs } = BENCH_RECEIVER_OPTIONS;
  const store = memoryStore();
  const deadlines = new DeadlineQueue(HANDLER_TIMEOUT_MS);
  const handlers = [
    async () => {
      onEvent();
    },
  ];
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const refused = (status: number): SameWorkAnswer => ({ status, json: REFUSED });
  const answered = (status: number, outcome: string, idempotencyKey: string): SameWorkAnswer => ({
    status,
    json: JSON.stringify({ ok: status < 300, outcome, idempotencyKey }),
  });
  return async (body, signature) => {
    if (typeof signature !== 'string' || signature.length !== 64) return refused(401);
    const digest = createHmac('sha256', SECRET).update(body).digest();
    const given = Buffer.from(signature, 'hex');
    if (given.length !== 32 || !timingSafeEqual(digest, given)) return refused(401);
    let envelope: {
      event?: unknown;
      idempotencyKey?: unknown;
      timestamp?: unknown;
      data?: unknown;
    };
    try {
      envelope = JSON.parse(decoder.decode(body)) as typeof envelope;
    } catch {
      return refused(400);
    }
    const { event, idempotencyKey: key, timestamp, data } = envelope;
    const at = typeof timestamp === 'string' ? timestampMsOf(timestamp) : undefined;
    if (typeof event !== 'string' || typeof key !== 'string' || at === undefined) {
      return refused(400);
    }
    if (typeof data !== 'object' || data === null) return refused(400);
    if (Math.abs(Date.now() - at) > maxEventAgeMs) return answered(422, 'stale', key);
    if (isFixedContractEvent(event)) {
      if (!validateEventData(event, data as Record<string, unknown>).ok) {
        return answered(422, 'invalid_payload', key);
      }
    }
    const claim = store.claim(key, LEASE_MS);
    // memoryStore answers at once, as the receiver's pipeline relies on too.
    if (isPromiseLike(claim)) throw new Error('memoryStore claimed asynchronously');
    if (claim.state === 'in_flight') return answered(409, 'in_flight', key);
    if (claim.state === 'done') return answered(200, 'duplicate', key);
    // What the checks above made sure of, as the pipeline's validate step hands it on.
    const validated = envelope as WebhookEvent<string>;
    const ran = await runHandlers(handlers, validated, deadlines);
    if (!('ok' in ran)) return answered(503, 'timeout', key);
    if (!ran.ok) {
      void store.release(key, claim.token);
      return answered(500, 'handler_failed', key);
    }
    void store.complete(key, claim.token, dedupTtlMs, digest.toString('hex', 0, 8));
    return answered(200, 'processed', key);
  };
}
