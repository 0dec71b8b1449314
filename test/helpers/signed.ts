/**
 * Requests for `receiver.handle()` in the core tests, built on the same independent signing
 * helpers as the adapter tests (test/helpers/deliveries.ts).
 */

import { createTestDelivery, sign, signedHeaders, SECRET } from './deliveries.js';

export { SECRET };

/** Sign independently of the code under test: node:crypto, the secret taken literally. */
export const hmacHex = sign;

/** The envelope fields a test may set; the rest default as in {@link createTestDelivery}. */
export interface EnvelopeOverrides {
  event?: string;
  timestamp?: string;
  idempotencyKey?: string;
  data?: Record<string, unknown>;
}

/** A signed POST of an envelope, ready for `receiver.handle()`. */
export function signedRequest(
  { event, timestamp, idempotencyKey, data }: EnvelopeOverrides = {},
  secret = SECRET,
) {
  const delivery = createTestDelivery(event, data, {
    secret,
    ...(timestamp === undefined ? {} : { timestamp }),
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
  });
  return { method: 'POST', ...delivery };
}

/** Sign a raw body as it is. */
export function signedRaw<B extends string | Uint8Array>(
  body: B,
  secret = SECRET,
): { method: string; headers: Record<string, string>; body: B } {
  return { method: 'POST', headers: signedHeaders(body, secret), body };
}

/** A promise with its resolve exposed, to hold a handler in flight. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
