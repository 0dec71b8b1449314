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

/** A parsed envelope, with the text it was parsed from. */
export interface ParsedEnvelope {
  ok: true;
  envelope: Envelope;
  timestampMs: number;
  /** The body as text: the UTF-8 decoding of its bytes, which gives them back exactly. */
  text: string;
}

/** The envelope, or why the body is not one (the reason never quotes the body). */
export type EnvelopeResult = ParsedEnvelope | { ok: false; reason: string };

// Fatal: bytes that are not UTF-8 make the body malformed. A lenient decoder would turn each of
// them into U+FFFD, so two keys differing by such a byte would read as one and the second be a
// 409 `conflict`, never processed. On Node this decoder is as fast as Buffer's toString.
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parse a verified body. Hand-written checks rather than a schema: this runs on every request
 * and four type checks are all the envelope needs.
 */
export function parseEnvelope(body: Uint8Array | string): EnvelopeResult {
  let text: string;
  if (typeof body === 'string') text = body;
  else {
    try {
      text = utf8.decode(body);
    } catch {
      return { ok: false, reason: 'body is not valid UTF-8' };
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
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
  return { ok: true, envelope: value as unknown as Envelope, timestampMs, text };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
