/**
 * Signed deliveries for the adapter tests, signed with node:crypto directly so the tests do not
 * trust the code under test.
 */

import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { StoredDelivery } from '../../src/inbox/types.js';

/** A secret shaped like the platform's: 64 characters, used as they are. */
export const SECRET = '7c1e9b04d25fa3867c1e9b04d25fa3867c1e9b04d25fa3867c1e9b04d25fa386';

/** One delivery: the body as sent, its headers and its key. */
export interface Delivery {
  body: string;
  headers: Record<string, string>;
  idempotencyKey: string;
}

/** Overrides of {@link createTestDelivery}. */
export interface DeliveryOptions {
  idempotencyKey?: string;
  timestamp?: string;
  secret?: string;
}

/** Lowercase hex HMAC-SHA256 of the body, keyed by the secret taken literally. */
export function sign(body: string | Uint8Array, secret = SECRET): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/** The headers the platform sends with a body. */
export function signedHeaders(body: string | Uint8Array, secret = SECRET): Record<string, string> {
  return { 'content-type': 'application/json', signature: sign(body, secret) };
}

/** A signed envelope, stamped now with a fresh idempotencyKey unless told otherwise. */
export function createTestDelivery(
  event = 'UserSignedIn',
  data: Record<string, unknown> = { user: { id: 1 } },
  {
    idempotencyKey = randomUUID(),
    timestamp = new Date().toISOString(),
    secret,
  }: DeliveryOptions = {},
): Delivery {
  const body = JSON.stringify({ event, timestamp, idempotencyKey, data });
  return { body, headers: signedHeaders(body, secret), idempotencyKey };
}

/** `fixtures/<event>.json`, re-stamped and signed; `edit` may change its `data` first. */
export function fixtureDelivery(
  event: string,
  edit: (data: Record<string, unknown>) => void = () => {},
  options: DeliveryOptions = {},
): Delivery {
  const file = new URL(`../../fixtures/${event}.json`, import.meta.url);
  const { data } = JSON.parse(readFileSync(file, 'utf8')) as { data: Record<string, unknown> };
  edit(data);
  return createTestDelivery(event, data, options);
}

/** A fixture file under `fixtures/` (e.g. `variants/user-signed-up-phone-only.json`), re-stamped and signed. */
export function fixtureFileDelivery(file: string, options: DeliveryOptions = {}): Delivery {
  const url = new URL(`../../fixtures/${file}`, import.meta.url);
  const { event, data } = JSON.parse(readFileSync(url, 'utf8')) as {
    event: string;
    data: Record<string, unknown>;
  };
  return createTestDelivery(event, data, options);
}

/** A promise with its resolve exposed, to hold a handler in flight. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A signed delivery as the receiver stores it in an inbox, for `enqueue()` without HTTP. */
export function storedOf(delivery: Delivery, event = 'UserSignedIn'): StoredDelivery {
  return {
    body: delivery.body,
    signature: delivery.headers['signature']!,
    event,
    idempotencyKey: delivery.idempotencyKey,
    receivedAt: new Date().toISOString(),
  };
}
