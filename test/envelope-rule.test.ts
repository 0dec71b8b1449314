/**
 * One envelope rule: the JSON Schema the package publishes (`schoolhooks schema`, the exported
 * `envelopeSchema`) accepts exactly the envelopes the receiver accepts. Both run over the same
 * cases: valid ones, each kind of invalid one, and the edges of a timestamp.
 */

import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { eventSchema } from '../src/cli/schema.js';
import {
  commonFormMsOf,
  parseEnvelope,
  TIMESTAMP_PATTERN,
  timestampMsOf,
  envelopeSchema,
} from '../src/platform/events/index.js';

const ajv = new Ajv2020({ allowUnionTypes: true });
addFormats.default(ajv);
/** The published schemas, asserted by Ajv with its date-time format. */
const published = {
  envelope: ajv.compile(z.toJSONSchema(envelopeSchema, { io: 'input' })),
  uncontracted: ajv.compile(eventSchema('UserSignedIn')),
};

const VALID = {
  event: 'UserSignedIn',
  timestamp: '2026-11-01T10:00:00.000Z',
  idempotencyKey: 'key-1',
  data: { user: { id: 1 } },
};

/** Timestamps at the edges of the rule, and whether the rule accepts each. */
const TIMESTAMPS: [string, boolean][] = [
  ['2026-11-01T10:00:00.000Z', true],
  ['2026-11-01T10:00:00Z', true],
  ['2026-11-01T10:00:00.123456789Z', true],
  ['2026-11-01T13:00:00+03:00', true],
  ['2026-11-01T07:00:00-03:00', true],
  ['2026-11-01t10:00:00z', true],
  ['2026-11-01 10:00:00Z', true],
  ['2024-02-29T00:00:00Z', true],
  ['2000-02-29T00:00:00Z', true],
  ['0001-01-01T00:00:00Z', true],
  ['2026-12-31T23:59:59.999+23:59', true],
  ['2023-02-29T00:00:00Z', false],
  ['1900-02-29T00:00:00Z', false],
  ['2026-04-31T00:00:00Z', false],
  ['2026-13-01T00:00:00Z', false],
  ['2026-00-10T00:00:00Z', false],
  ['2026-11-00T00:00:00Z', false],
  ['2026-11-01T24:00:00Z', false],
  ['2026-11-01T10:60:00Z', false],
  ['2026-11-01T23:59:60Z', false],
  ['2026-11-01T10:00:00', false],
  ['2026-11-01T10:00:00+0300', false],
  ['2026-11-01T10:00:00+03', false],
  ['2026-11-01T10:00Z', false],
  ['2026-11-01', false],
  ['10:00:00Z', false],
  ['Sun, 01 Nov 2026 10:00:00 GMT', false],
  ['1793007600000', false],
  ['yesterday', false],
  ['', false],
  [' 2026-11-01T10:00:00Z', false],
  ['2026-11-01T10:00:00Z\n', false],
];

/** Envelopes the rule refuses, one kind of mistake each. */
const INVALID: [string, unknown][] = [
  ['an array', [VALID]],
  ['null', null],
  ['a string', 'UserSignedIn'],
  ['no event', { ...VALID, event: undefined }],
  ['an empty event', { ...VALID, event: '' }],
  ['an event that is a number', { ...VALID, event: 7 }],
  ['no idempotencyKey', { ...VALID, idempotencyKey: undefined }],
  ['an empty idempotencyKey', { ...VALID, idempotencyKey: '' }],
  ['an idempotencyKey that is a number', { ...VALID, idempotencyKey: 7 }],
  ['no timestamp', { ...VALID, timestamp: undefined }],
  ['a timestamp that is a number', { ...VALID, timestamp: 1_793_007_600_000 }],
  ['no data', { ...VALID, data: undefined }],
  ['data that is null', { ...VALID, data: null }],
  ['data that is an array', { ...VALID, data: [] }],
  ['data that is a string', { ...VALID, data: 'x' }],
];

/** Whether the receiver, the published schemas and Zod accept `value`: all must agree. */
function verdicts(value: unknown) {
  // JSON drops the undefined members: the body the receiver reads is this text.
  const body = JSON.stringify(value);
  const parsed = JSON.parse(body) as unknown;
  return {
    receiver: parseEnvelope(body).ok,
    published: published.envelope(parsed),
    schoolhooksSchema: published.uncontracted(parsed),
    zod: envelopeSchema.safeParse(parsed).success,
  };
}

const all = (accepted: boolean) => ({
  receiver: accepted,
  published: accepted,
  schoolhooksSchema: accepted,
  zod: accepted,
});

describe('one envelope rule: the published JSON Schema and the receiver', () => {
  it('both accept a valid envelope, and one with fields they do not know', () => {
    expect(verdicts(VALID)).toEqual(all(true));
    expect(verdicts({ ...VALID, version: 2, data: {} })).toEqual(all(true));
  });

  it.each(INVALID)('both refuse %s', (_, value) => {
    expect(verdicts(value)).toEqual(all(false));
  });

  it.each(TIMESTAMPS)('agree on the timestamp %j (accepted: %s)', (timestamp, accepted) => {
    expect(verdicts({ ...VALID, timestamp })).toEqual(all(accepted));
  });

  it('publishes the timestamp as format: date-time', () => {
    const { properties } = eventSchema('UserSignedIn') as {
      properties: { timestamp: { format?: string } };
    };
    expect(properties.timestamp.format).toBe('date-time');
  });

  it('reads the instant of a timestamp with its offset and its fraction', () => {
    expect(timestampMsOf('2026-11-01T13:00:00+03:00')).toBe(Date.UTC(2026, 10, 1, 10));
    expect(timestampMsOf('2026-11-01T07:00:00-03:00')).toBe(Date.UTC(2026, 10, 1, 10));
    // The platform's form with one more character is no timestamp, for the fast path too.
    expect(commonFormMsOf('2026-11-01T10:00:00.000Z0')).toBeUndefined();
    expect(timestampMsOf('2026-11-01T10:00:00.000Z0')).toBeUndefined();
    expect(timestampMsOf('2026-11-01T15:30:00+05:30')).toBe(Date.UTC(2026, 10, 1, 10));
    expect(timestampMsOf('2026-11-01T04:15:00-05:45')).toBe(Date.UTC(2026, 10, 1, 10));
    expect(timestampMsOf('2026-11-01 10:00:00.1239z')).toBe(Date.UTC(2026, 10, 1, 10, 0, 0, 123));
    expect(timestampMsOf('0001-01-01T00:00:00Z')).toBe(Date.parse('0001-01-01T00:00:00.000Z'));
  });

  it("reads the platform's own form (YYYY-MM-DDTHH:MM:SS.sssZ) as the pattern does, near misses too", () => {
    const pattern = new RegExp(TIMESTAMP_PATTERN);
    /** The rule written plainly: the pattern, a day of its month, and Date.parse of the ISO form. */
    const expected = (text: string): number | undefined => {
      const match = pattern.exec(text);
      if (match === null) return undefined;
      const [year, month, day] = [match[1], match[2], match[3]].map(Number) as [
        number,
        number,
        number,
      ];
      const daysInMonth = new Date(Date.UTC(2001, month, 0)).getUTCDate();
      if (day > daysInMonth + (month === 2 && isLeap(year) ? 1 : 0)) return undefined;
      return Date.parse(`${text.slice(0, 10)}T${text.slice(11, 23)}Z`);
    };
    // Fields around their bounds, the separators mostly right, and now and then one character
    // anywhere replaced by a near miss.
    const pad = (n: number, width: number) => String(n).padStart(width, '0');
    const form = fc
      .record({
        year: fc.oneof(fc.integer({ min: 0, max: 120 }), fc.integer({ min: 1890, max: 2110 })),
        month: fc.integer({ min: 0, max: 13 }),
        day: fc.integer({ min: 0, max: 32 }),
        hour: fc.integer({ min: 0, max: 25 }),
        minute: fc.integer({ min: 0, max: 61 }),
        second: fc.integer({ min: 0, max: 61 }),
        ms: fc.integer({ min: 0, max: 999 }),
        t: fc.constantFrom('T', 't', ' ', 'x'),
        z: fc.constantFrom('Z', 'z', 'Z', '+', 'Q'),
        swap: fc.option(
          fc.tuple(fc.nat(23), fc.constantFrom(...'0123456789/:-.TtZz a'.split(''))),
          {
            freq: 4,
          },
        ),
      })
      .map(({ year, month, day, hour, minute, second, ms, t, z, swap }) => {
        const text = (
          `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}${t}` +
          `${pad(hour, 2)}:${pad(minute, 2)}:${pad(second, 2)}.${pad(ms, 3)}${z}`
        ).split('');
        if (swap !== null) text[swap[0]] = swap[1];
        return text.join('');
      });
    fc.assert(
      fc.property(form, (text) => {
        const want = expected(text);
        expect(timestampMsOf(text)).toBe(want);
        // The platform's own form is read by the fast path itself, never left to the pattern
        // (a year under 100 is, on purpose); anything else it leaves to the pattern.
        expect(commonFormMsOf(text)).toBe(
          want !== undefined && Number(text.slice(0, 4)) >= 100 ? want : undefined,
        );
      }),
      { numRuns: 20_000 },
    );
  });
});

function isLeap(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
}
