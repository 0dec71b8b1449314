/**
 * The Fetch handlers the (g) and (h) rows compare, shared by the servers (bench/server-web.ts) and
 * the in-process split of a Fetch delivery (bench/fetch-steps.ts): the schoolhooks Fetch adapter,
 * the fastest honest hand-written Fetch receiver, and that receiver doing the adapter's work in
 * a straight line.
 * @module
 */

import { Buffer } from 'node:buffer';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { fetchHandler } from '../src/adapters/fetch.js';
import { createReceiver, type SchoolhooksError } from '../src/index.js';
import { BENCH_RECEIVER_OPTIONS, SECRET } from './bodies.js';
import { sameWork } from './same-work.js';

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

/**
 * (g)'s hand-written handler doing the adapter's work in a straight line (bench/same-work.ts):
 * the (h) rows, on the same servers as (g).
 */
export function sameWorkHandler(onEvent: () => void): WebHandler {
  const receive = sameWork(onEvent);
  return async (request) => {
    if (request.method !== 'POST') return answer(405, '{"ok":false}');
    const body = new Uint8Array(await request.arrayBuffer());
    const { status, json } = await receive(body, request.headers.get('signature'));
    return answer(status, json);
  };
}
