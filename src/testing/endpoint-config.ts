/**
 * Webhook endpoint configs, checked as the platform's account UI checks them (docs/platform.md#webhook-endpoints and #limits).
 * @module
 */

import { randomInt } from 'node:crypto';
import { ConfigError } from '../errors.js';
import {
  FIXED_CONTRACT_EVENTS,
  UNCONTRACTED_EVENTS,
  type KnownEventName,
} from '../platform/events/index.js';
import { PLATFORM_LIMITS } from '../platform/platform-contract.js';

const { maxFieldLength, secretKeyLength } = PLATFORM_LIMITS;

/** The request an in-process endpoint receives; it fits `receiver.handle()` as it is. */
export interface SimulatedRequest {
  method: 'POST';
  headers: { 'content-type': 'application/json'; signature: string };
  /** The envelope as JSON text, exactly as signed. */
  body: string;
}

/** What an in-process endpoint answers; `receiver.handle()`'s result fits. */
export interface SimulatedResponse {
  status: number;
  body?: unknown;
}

/** An in-process endpoint, e.g. `(request) => receiver.handle(request)`. */
export type EndpointHandler = (
  request: SimulatedRequest,
) => SimulatedResponse | Promise<SimulatedResponse>;

/** One webhook endpoint as configured in the account UI; give either `url` or `handler`. */
export interface EndpointConfig {
  /** The name the delivery log uses. Default `endpoint-1`, `endpoint-2`, … */
  id?: string;
  /** A real receiver, sent an HTTP POST; at most 255 characters. */
  url?: string;
  /** An in-process receiver, called directly. */
  handler?: EndpointHandler;
  /** The endpoint's secretKey. Default: 64 random characters, as the platform generates. */
  secret?: string;
  /** The events the endpoint is subscribed to. */
  events: readonly KnownEventName[];
  /** Default true; an inactive endpoint gets no new events. */
  active?: boolean;
  /** Free-form; at most 255 characters. */
  note?: string;
}

/** What may change on a saved endpoint. */
export type EndpointUpdate = Partial<Pick<EndpointConfig, 'url' | 'events' | 'active' | 'note'>>;

const KNOWN_EVENTS: ReadonlySet<string> = new Set([
  ...FIXED_CONTRACT_EVENTS,
  ...UNCONTRACTED_EVENTS,
]);
const SECRET_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A fresh secretKey: 64 random ASCII letters and digits. */
export function generateSecretKey(): string {
  let key = '';
  for (let i = 0; i < secretKeyLength; i++)
    key += SECRET_ALPHABET[randomInt(SECRET_ALPHABET.length)];
  return key;
}

/** Throw a {@link ConfigError} for anything the platform's form would refuse. */
export function checkEndpointConfig(config: EndpointConfig | EndpointUpdate, label: string): void {
  if ('handler' in config && config.handler !== undefined && typeof config.handler !== 'function') {
    throw new ConfigError(`${label}: handler must be a function`);
  }
  if (config.url !== undefined) {
    if (config.url.length > maxFieldLength) {
      throw new ConfigError(`${label}: url is longer than ${maxFieldLength} characters`);
    }
    if (!isHttpUrl(config.url)) throw new ConfigError(`${label}: url must be an http(s) URL`);
  }
  if (config.note !== undefined && config.note.length > maxFieldLength) {
    throw new ConfigError(`${label}: note is longer than ${maxFieldLength} characters`);
  }
  if (config.events !== undefined) {
    if (!Array.isArray(config.events))
      throw new ConfigError(`${label}: events must be a list of event names`);
    for (const name of config.events) {
      if (!KNOWN_EVENTS.has(name)) {
        throw new ConfigError(`${label}: ${String(name)} is not an event the platform offers`);
      }
    }
  }
  if ('secret' in config && config.secret !== undefined) {
    if (typeof config.secret !== 'string' || config.secret.length === 0) {
      throw new ConfigError(`${label}: secret must be a non-empty string`);
    }
  }
}

/** True for an absolute http:// or https:// URL. @internal also used by the CLI */
export function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === 'https:' || protocol === 'http:';
  } catch {
    return false;
  }
}
