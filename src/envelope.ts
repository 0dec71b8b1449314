/**
 * Parsing the raw body into the envelope of interface 2.3.
 * @module
 */

/** The envelope every delivery carries (interface 2.3), before its `data` is validated. */
export interface Envelope {
  event: string;
  timestamp: string;
  idempotencyKey: string;
  data: Record<string, unknown>;
}

/** The envelope, or why the body is not one (the reason never quotes the body). */
export type EnvelopeResult =
  { ok: true; envelope: Envelope; timestampMs: number } | { ok: false; reason: string };

const decoder = new TextDecoder();

/**
 * Parse a verified body. Hand-written checks rather than a schema: this runs on every request
 * and four type checks are all the envelope needs.
 */
export function parseEnvelope(body: Uint8Array | string): EnvelopeResult {
  let value: unknown;
  try {
    value = JSON.parse(typeof body === 'string' ? body : decoder.decode(body));
  } catch {
    return { ok: false, reason: 'body is not valid JSON' };
  }
  if (!isRecord(value)) return { ok: false, reason: 'body is not a JSON object' };
  const { event, timestamp, idempotencyKey, data } = value;
  if (typeof event !== 'string' || event === '') {
    return { ok: false, reason: 'envelope.event must be a non-empty string' };
  }
  if (typeof idempotencyKey !== 'string' || idempotencyKey === '') {
    return { ok: false, reason: 'envelope.idempotencyKey must be a non-empty string' };
  }
  const timestampMs = typeof timestamp === 'string' ? Date.parse(timestamp) : Number.NaN;
  if (Number.isNaN(timestampMs)) {
    return { ok: false, reason: 'envelope.timestamp must be an ISO 8601 date-time string' };
  }
  if (!isRecord(data)) return { ok: false, reason: 'envelope.data must be a JSON object' };
  return { ok: true, envelope: value as unknown as Envelope, timestampMs };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
