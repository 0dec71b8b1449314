/**
 * The bodies `send` and `replay` deliver: a fixture by event name, or a file, re-stamped so it is
 * neither stale nor a duplicate.
 * @module
 */

import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isFixedContractEvent } from '../platform/events/index.js';
import { didYouMean } from '../utils/nearest-name.js';
import { resolveData, serializeEnvelope } from '../testing/create-delivery.js';
import { UsageError } from './errors.js';
import { KNOWN_EVENTS } from './event-names.js';

/** A body ready to sign, and what to call it in the output. */
export interface DeliveryBody {
  body: string | Uint8Array;
  /** The event name, when the body is an envelope that names one. */
  event: string | undefined;
}

/** How a file is turned into a body. */
export interface FileBodyOptions {
  /** Send the file's bytes exactly as they are. */
  raw?: boolean | undefined;
  /** The file holds only `data`; wrap it in an envelope of this event. */
  event?: string | undefined;
  /** The idempotencyKey to send. Default: a new UUID. */
  key?: string | undefined;
  /** The timestamp to send. Default: now. */
  timestamp?: string | undefined;
}

/** The envelope of a fixed-contract event's fixture, stamped now with a new key. */
export function fixtureBody(
  event: string,
  key: string = randomUUID(),
  timestamp: string = new Date().toISOString(),
): DeliveryBody {
  if (!isFixedContractEvent(event)) {
    throw new UsageError(
      `${event} has no fixture (its data has no contract): send a JSON file of its data with --event ${event}`,
    );
  }
  const body = serializeEnvelope({
    event,
    data: resolveData(event, undefined),
    idempotencyKey: key,
    timestamp,
  });
  return { body, event };
}

/**
 * The body of a file. Unless `raw`, a JSON object is re-stamped: its `timestamp` set to now and a
 * non-empty string `idempotencyKey` replaced by a new one, so a fixture is neither stale nor a
 * duplicate while a deliberately broken file stays broken. Only those two values change: the
 * rest of the bytes (formatting, size) stay as in the file. Anything else goes as it is.
 */
export async function fileBody(
  path: string,
  { raw, event, key, timestamp }: FileBodyOptions = {},
): Promise<DeliveryBody> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ENOENT') {
      throw new UsageError(
        `${path}: no such file, and not an event name${didYouMean(path, KNOWN_EVENTS)}`,
      );
    }
    throw new UsageError(`${path}: cannot be read (${String(code ?? error)})`);
  }
  const text = new TextDecoder().decode(bytes);
  const json = parse(text);
  if (raw) return { body: bytes, event: eventOf(json) };
  if (event !== undefined) {
    if (!isObject(json)) {
      throw new UsageError(`${path}: --event needs a file holding a JSON object of data`);
    }
    const body = serializeEnvelope({
      event,
      data: json,
      idempotencyKey: key ?? randomUUID(),
      timestamp: timestamp ?? new Date().toISOString(),
    });
    return { body, event };
  }
  if (!isObject(json)) return { body: bytes, event: undefined };
  let body = text;
  if (typeof json.timestamp === 'string') {
    body = replaceTopLevel(
      body,
      'timestamp',
      json.timestamp,
      timestamp ?? new Date().toISOString(),
    );
  }
  if (
    typeof json.idempotencyKey === 'string' &&
    (json.idempotencyKey !== '' || key !== undefined)
  ) {
    body = replaceTopLevel(body, 'idempotencyKey', json.idempotencyKey, key ?? randomUUID());
  }
  return { body, event: eventOf(json) };
}

/**
 * `text` with the top-level string `name` changed from `from` to `to`, touching nothing else; if
 * the text cannot be edited in place, the object is serialised again.
 */
function replaceTopLevel(text: string, name: string, from: string, to: string): string {
  const pattern = new RegExp(`("${name}"\\s*:\\s*)${escapeRegExp(JSON.stringify(from))}`);
  const edited = text.replace(
    pattern,
    (_match, prefix: string) => `${prefix}${JSON.stringify(to)}`,
  );
  const check = parse(edited);
  if (isObject(check) && check[name] === to) return edited;
  const whole = parse(text) as Record<string, unknown>;
  return JSON.stringify({ ...whole, [name]: to });
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
function eventOf(json: unknown): string | undefined {
  return isObject(json) && typeof json.event === 'string' ? json.event : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
