/**
 * Signed deliveries, byte for byte what the platform sends (docs/platform.md#envelope and #signature).
 * @module
 */

import { randomUUID } from 'node:crypto';
import {
  isFixedContractEvent,
  type EventData,
  type FixedEventName,
} from '../platform/events/index.js';
import { ConfigError } from '../errors.js';
import { fixtureData } from './fixtures.js';
import { signBody } from './sign-body.js';

/** Options of {@link createDelivery}. */
export interface DeliveryOptions {
  /** The endpoint's secretKey to sign with. Default: the `SCHOOL_WEBHOOK_SECRET` variable. */
  secret?: string;
  /** The envelope's idempotencyKey. Default: a random UUID. */
  idempotencyKey?: string;
  /** When the event occurred. Default: now. A string is sent as given. */
  timestamp?: string | Date | number;
}

/** A signed delivery: the raw body and the headers the platform sends with it. */
export interface SignedDelivery {
  /** The envelope as JSON text: the exact bytes that were signed. */
  body: string;
  headers: { 'content-type': 'application/json'; signature: string };
}

/** `data` of event `N` as {@link createDelivery} takes it: optional where a fixture exists. */
export type DeliveryData<N extends string> = N extends FixedEventName
  ? EventData<N> | undefined
  : EventData<N>;

/** What an envelope is built from, before it is signed. @internal */
export interface EnvelopeInput {
  event: string;
  data: unknown;
  idempotencyKey: string;
  timestamp: string;
}

/**
 * A signed delivery of one event, as the platform would send it: the envelope (`event`,
 * `timestamp`, `idempotencyKey`, `data`) as JSON and its `signature` header. Without `data`, a
 * fixed-contract event carries its fixture's data (see {@link fixtures}).
 *
 * @example
 * ```ts
 * import { createDelivery, fixtures } from 'schoolhooks/testing';
 *
 * const { body, headers } = createDelivery('PaymentCompleted', undefined, { secret });
 * const result = await receiver.handle({ method: 'POST', headers, body });
 *
 * const refund = createDelivery('ProductRefundCompleted', { paymentId: 7 }, { secret, idempotencyKey: 'k-1' });
 * ```
 */
export function createDelivery<N extends FixedEventName>(
  event: N,
  data?: EventData<N>,
  options?: DeliveryOptions,
): SignedDelivery;
export function createDelivery<N extends string>(
  event: N,
  data: DeliveryData<N>,
  options?: DeliveryOptions,
): SignedDelivery;
export function createDelivery(
  event: string,
  data?: unknown,
  {
    secret = process.env.SCHOOL_WEBHOOK_SECRET,
    idempotencyKey = randomUUID(),
    timestamp = new Date(),
  }: DeliveryOptions = {},
): SignedDelivery {
  if (secret === undefined || secret === '') {
    throw new ConfigError('createDelivery needs { secret } or the SCHOOL_WEBHOOK_SECRET variable');
  }
  const body = serializeEnvelope({
    event,
    data: resolveData(event, data),
    idempotencyKey,
    timestamp: toTimestamp(timestamp),
  });
  return {
    body,
    headers: { 'content-type': 'application/json', signature: signBody(body, secret) },
  };
}

/** The envelope as the JSON text the platform sends, fields in the envelope's order (docs/platform.md#envelope). @internal */
export function serializeEnvelope({
  event,
  timestamp,
  idempotencyKey,
  data,
}: EnvelopeInput): string {
  return JSON.stringify({ event, timestamp, idempotencyKey, data });
}

/** `data` as given, else the fixture's; an event without a fixture must be given data. @internal */
export function resolveData(event: string, data: unknown): unknown {
  if (data !== undefined) return data;
  if (isFixedContractEvent(event)) return fixtureData(event);
  throw new TypeError(`${event} has no fixture: pass its data`);
}

/** An ISO 8601 timestamp of a Date or an epoch in ms; a string is kept as given. @internal */
export function toTimestamp(value: string | Date | number): string {
  return typeof value === 'string' ? value : new Date(value).toISOString();
}
