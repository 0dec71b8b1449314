import { describe, expect, it } from 'vitest';
import { parseEnvelope } from '../src/platform/events/index.js';

const valid = {
  event: 'UserSignedUp',
  timestamp: '2026-01-02T03:04:05.000Z',
  idempotencyKey: 'key-1',
  data: { user: { id: 1 } },
};

function reasonFor(body: unknown): string | undefined {
  const result = parseEnvelope(typeof body === 'string' ? body : JSON.stringify(body));
  return result.ok ? undefined : result.reason;
}

describe('parseEnvelope', () => {
  it('gives the envelope, its timestamp in ms and the text it read', () => {
    const text = JSON.stringify(valid);
    expect(parseEnvelope(text)).toEqual({
      ok: true,
      envelope: valid,
      timestampMs: Date.UTC(2026, 0, 2, 3, 4, 5),
      text,
    });
  });

  it('decodes UTF-8 bytes exactly, and refuses bytes that are not UTF-8', () => {
    const text = JSON.stringify({ ...valid, data: { name: 'Мария' } });
    const bytes = new TextEncoder().encode(text);
    expect(parseEnvelope(bytes)).toMatchObject({ ok: true, text });

    // A lossy decode would make two keys one: bytes that are not UTF-8 are refused instead.
    const broken = new TextEncoder().encode(JSON.stringify({ ...valid, data: { name: 'XX' } }));
    const at = broken.indexOf('X'.charCodeAt(0));
    broken[at] = 0xff;
    expect(parseEnvelope(broken)).toEqual({ ok: false, reason: 'body is not valid UTF-8' });
  });

  it('names what is wrong without quoting the body', () => {
    expect(reasonFor('not json {"secret":"whsec_1"}')).toBe('body is not valid JSON');
    expect(reasonFor([valid])).toBe('body is not a JSON object');
    expect(reasonFor(null)).toBe('body is not a JSON object');
    expect(reasonFor('"UserSignedUp"')).toBe('body is not a JSON object');
  });

  it('refuses a missing, empty or non-string event', () => {
    const reason = 'envelope.event must be a non-empty string';
    expect(reasonFor({ ...valid, event: undefined })).toBe(reason);
    expect(reasonFor({ ...valid, event: '' })).toBe(reason);
    expect(reasonFor({ ...valid, event: 1 })).toBe(reason);
  });

  it('refuses a missing, empty or non-string idempotencyKey', () => {
    const reason = 'envelope.idempotencyKey must be a non-empty string';
    expect(reasonFor({ ...valid, idempotencyKey: undefined })).toBe(reason);
    expect(reasonFor({ ...valid, idempotencyKey: '' })).toBe(reason);
    expect(reasonFor({ ...valid, idempotencyKey: 7 })).toBe(reason);
  });

  it('refuses a timestamp that is not a date-time string, even a number Date.parse would read', () => {
    const reason = 'envelope.timestamp must be an RFC 3339 date-time string';
    expect(reasonFor({ ...valid, timestamp: undefined })).toBe(reason);
    expect(reasonFor({ ...valid, timestamp: 'yesterday' })).toBe(reason);
    expect(reasonFor({ ...valid, timestamp: 2026 })).toBe(reason);
  });

  it('refuses data that is missing, null, an array or a scalar', () => {
    const reason = 'envelope.data must be a JSON object';
    for (const data of [undefined, null, [], 'x', 1]) {
      expect(reasonFor({ ...valid, data })).toBe(reason);
    }
  });
});
