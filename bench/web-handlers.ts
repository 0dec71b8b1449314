/**
 * The Fetch handlers the (g) and (h) rows compare, shared by the servers (bench/server-web.ts) and
 * the in-process split of a Fetch delivery (bench/fetch-steps.ts): the schoolhooks Fetch adapter,
 * the fastest honest hand-written Fetch receiver, and that receiver doing the adapter's work in
 * a straight line.
 * @module
 */

import { Buffer } from 'node:buffer';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { fetchHandler } from '../adapters/fetch.js';
import { DeadlineQueue } from '../src/deadlines.js';
import { timestampMsOf } from '../src/envelope.js';
import { isFixedContractEvent, type WebhookEvent } from '../src/events/index.js';
import { validateEventData } from '../src/events/validate.js';
import { createReceiver, memoryStore, type SchoolhooksError } from '../src/index.js';
import { runHandlers } from '../src/run-handlers.js';
import { isPromiseLike } from '../src/run-steps.js';
import { BENCH_RECEIVER_OPTIONS, SECRET } from './bodies.js';

/** A Fetch handler as the servers call it: the `Request` and nothing else. */
export type WebHandler = (request: Request) => Promise<Response>;

/**
 * The schoolhooks Fetch adapter over a receiver with an async handler for both events (so each
 * delivery is validated, claimed, run against the timeout and completed).
 */
export function adapterHandler(
  onEvent: () => void,
  onFailure: (error: SchoolhooksError) => void,
): WebHandler {
  const receiver = createReceiver(BENCH_RECEIVER_OPTIONS);
  receiver.on(['UserSignedUp', 'PaymentCompleted'], async () => {
    onEvent();
  });
  receiver.onError(onFailure);
  return fetchHandler(receiver);
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const answer = (status: number, body: string) =>
  new Response(body, { status, headers: JSON_HEADERS });

/** The keys the hand-written handler remembers at most: as many as memoryStore holds by default. */
const REMEMBERED_KEYS = 100_000;

/**
 * The fastest honest hand-written Fetch receiver: the body by `arrayBuffer()`, HMAC-SHA256 with
 * node:crypto in constant time, `JSON.parse`, a duplicate told by its idempotencyKey in a Set,
 * then an async handler, as the schoolhooks rows run one.
 *
 * The keys it remembers are bounded, as a server's must be, by memoryStore's own rule: two
 * generations of half of {@link REMEMBERED_KEYS} each, the older dropped whole when the newer
 * fills (what it does not keep is the lease, the expiry and the fingerprint). An unbounded Set
 * grew by some 30 000 keys a second on Bun, and its collector's work grew with it: the
 * hand-written row went from 24 to 125 µs of CPU per request over one run, so it stopped being
 * the baseline the adapter was meant to be compared with.
 */
export function handWrittenHandler(onEvent: () => void): WebHandler {
  let recent = new Set<string>();
  let older = new Set<string>();
  const seen = (key: string) => recent.has(key) || older.has(key);
  const remember = (key: string) => {
    if (recent.size >= REMEMBERED_KEYS / 2) {
      older = recent;
      recent = new Set();
    }
    recent.add(key);
  };
  const decoder = new TextDecoder();
  const handle = async () => {
    onEvent();
  };
  return async (request) => {
    if (request.method !== 'POST') return answer(405, '{"ok":false}');
    const body = new Uint8Array(await request.arrayBuffer());
    const signature = request.headers.get('signature');
    if (signature === null || signature.length !== 64) return answer(401, '{"ok":false}');
    const expected = createHmac('sha256', SECRET).update(body).digest();
    if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) {
      return answer(401, '{"ok":false}');
    }
    let envelope: { idempotencyKey?: unknown };
    try {
      envelope = JSON.parse(decoder.decode(body)) as { idempotencyKey?: unknown };
    } catch {
      return answer(400, '{"ok":false}');
    }
    const key = envelope.idempotencyKey;
    if (typeof key !== 'string') return answer(400, '{"ok":false}');
    if (seen(key)) return answer(200, '{"ok":true,"duplicate":true}');
    remember(key);
    await handle();
    return answer(200, '{"ok":true}');
  };
}

/** How long the handler may run before the same-work handler answers 503: the receiver's default. */
const HANDLER_TIMEOUT_MS = 10_000;
/** The lease a claimed key holds while its handler runs: the receiver's default. */
const LEASE_MS = 60_000;

/**
 * (g)'s hand-written handler doing the work every schoolhooks row does, in one straight async
 * function: the envelope's checks and its age window, the payload validated by the receiver's own
 * validator, the key claimed in a `memoryStore` with a lease and completed with the body's
 * fingerprint after the handler, the handler raced against a deadline in one shared timer, and
 * an answer that names its outcome and key. It uses the receiver's own parts, so it is the
 * cheapest this work can be written (a hand-written receiver would race a timer per request and
 * validate with a schema library), and it has none of the pipeline: the
 * steps, their endings, the adapter's reading of the request. The adapter against it is what
 * the pipeline costs; it against (g) is what the work itself costs.
 */
export function sameWorkHandler(onEvent: () => void): WebHandler {
  const { maxEventAgeMs, dedupTtlMs } = BENCH_RECEIVER_OPTIONS;
  const store = memoryStore();
  const deadlines = new DeadlineQueue(HANDLER_TIMEOUT_MS);
  const handlers = [
    async () => {
      onEvent();
    },
  ];
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const refused = (status: number) => answer(status, '{"ok":false}');
  const answered = (status: number, outcome: string, idempotencyKey: string) =>
    answer(status, JSON.stringify({ ok: status < 300, outcome, idempotencyKey }));
  return async (request) => {
    if (request.method !== 'POST') return refused(405);
    const body = new Uint8Array(await request.arrayBuffer());
    const signature = request.headers.get('signature');
    if (signature === null || signature.length !== 64) return refused(401);
    const digest = createHmac('sha256', SECRET).update(body).digest();
    if (!timingSafeEqual(digest, Buffer.from(signature, 'hex'))) return refused(401);
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
