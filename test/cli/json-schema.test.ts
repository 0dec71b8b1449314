/**
 * The JSON Schemas of `schoolhooks schema` say exactly what the receiver's schemas accept: every
 * fixture (full, sparse, realistic) passes them, every invalid payload fails them, and on fixtures
 * broken anywhere they answer as Zod does.
 */

import { readdirSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eventSchema } from '../../src/cli/schema.js';
import {
  envelopeSchema,
  eventDataSchemas,
  FIXED_CONTRACT_EVENTS,
  isFixedContractEvent,
  type FixedEventName,
} from '../../src/index.js';
import { mutatedData, RUNS } from '../properties/arbitraries.js';

type Schema = Record<string, unknown>;

/** Keywords that only annotate: they never decide validity. */
// `format` is an annotation in draft 2020-12 unless a validator asserts it; the timestamp's
// date-time rule is tested with Ajv's in test/envelope-rule.test.ts.
const ANNOTATIONS = new Set(['$schema', 'title', 'description', 'examples', 'format']);

/**
 * A validator of the part of JSON Schema draft 2020-12 the printed schemas use. An unknown
 * keyword throws, so a schema it cannot judge never passes by omission.
 */
function valid(schema: unknown, value: unknown): boolean {
  if (
    schema === true ||
    (typeof schema === 'object' && schema !== null && !Object.keys(schema).length)
  )
    return true;
  if (schema === false) return false;
  const s = schema as Schema;
  for (const [keyword, arg] of Object.entries(s)) {
    if (ANNOTATIONS.has(keyword)) continue;
    if (!check(keyword, arg, s, value)) return false;
  }
  return true;
}

function typeOf(value: unknown): string[] {
  if (value === null) return ['null'];
  if (Array.isArray(value)) return ['array'];
  if (typeof value === 'number')
    return Number.isInteger(value) ? ['number', 'integer'] : ['number'];
  return [typeof value];
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function check(keyword: string, arg: unknown, schema: Schema, value: unknown): boolean {
  switch (keyword) {
    case 'type': {
      const types = Array.isArray(arg) ? (arg as string[]) : [arg as string];
      return typeOf(value).some((t) => types.includes(t));
    }
    case 'const':
      return JSON.stringify(value) === JSON.stringify(arg);
    case 'enum':
      return (arg as unknown[]).some((item) => JSON.stringify(item) === JSON.stringify(value));
    case 'minLength':
      return typeof value !== 'string' || [...value].length >= (arg as number);
    case 'pattern':
      return typeof value !== 'string' || new RegExp(arg as string, 'u').test(value);
    case 'minimum':
      return typeof value !== 'number' || value >= (arg as number);
    case 'maximum':
      return typeof value !== 'number' || value <= (arg as number);
    case 'required':
      return !isObject(value) || (arg as string[]).every((key) => Object.hasOwn(value, key));
    case 'properties':
      return (
        !isObject(value) ||
        Object.entries(arg as Record<string, unknown>).every(
          ([key, sub]) => !Object.hasOwn(value, key) || valid(sub, value[key]),
        )
      );
    case 'additionalProperties': {
      if (!isObject(value)) return true;
      const known = new Set(Object.keys((schema['properties'] as Schema | undefined) ?? {}));
      return Object.entries(value).every(([key, item]) => known.has(key) || valid(arg, item));
    }
    case 'propertyNames':
      return !isObject(value) || Object.keys(value).every((key) => valid(arg, key));
    case 'items':
      return !Array.isArray(value) || value.every((item) => valid(arg, item));
    case 'anyOf':
      return (arg as unknown[]).some((sub) => valid(sub, value));
    case 'oneOf':
      return (arg as unknown[]).filter((sub) => valid(sub, value)).length === 1;
    case 'not':
      return !valid(arg, value);
    default:
      throw new Error(`the test's validator does not know the keyword ${keyword}`);
  }
}

const schemas = new Map(FIXED_CONTRACT_EVENTS.map((name) => [name, eventSchema(name)]));

/** Whether the printed JSON Schema of `event` accepts an envelope carrying `data`. */
function jsonSchemaAccepts(event: FixedEventName, data: unknown): boolean {
  const envelope = { event, timestamp: '2026-11-01T10:00:00.000Z', idempotencyKey: 'k', data };
  return valid(schemas.get(event), envelope);
}

function zodAccepts(event: FixedEventName, data: unknown): boolean {
  return (
    envelopeSchema.safeParse({
      event,
      timestamp: '2026-11-01T10:00:00.000Z',
      idempotencyKey: 'k',
      data,
    }).success && eventDataSchemas[event].safeParse(data).success
  );
}

function read(folder: string): { file: string; event: string; data: unknown }[] {
  const dir = new URL(`../../fixtures/${folder}`, import.meta.url);
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json') && file !== 'manifest.json')
    .flatMap((file) => {
      let envelope: { event: string; data: unknown } | null;
      try {
        envelope = JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as typeof envelope;
      } catch {
        return []; // fixtures/invalid holds bodies that are not JSON on purpose
      }
      if (!isObject(envelope)) return [];
      return [{ file: `${folder}${file}`, event: envelope.event, data: envelope.data }];
    });
}

const VALID = [...read(''), ...read('sparse/'), ...read('variants/')];
const INVALID = read('invalid/').filter(({ event }) => isFixedContractEvent(event));

describe('the JSON Schemas of `schoolhooks schema`', () => {
  it.each(VALID.map((f) => [f.file, f] as const))('accept %s', (_file, { event, data }) => {
    if (!isFixedContractEvent(event)) throw new Error(event);
    expect(jsonSchemaAccepts(event, data)).toBe(true);
  });

  it('refuse every invalid payload of fixtures/invalid', () => {
    const refused = INVALID.filter(({ event, data }) => {
      if (!isFixedContractEvent(event)) return false;
      return !jsonSchemaAccepts(event, data) && !zodAccepts(event, data);
    });
    const payloadFaults = INVALID.filter(({ event, data }) => {
      return isFixedContractEvent(event) && !zodAccepts(event, data);
    });
    expect(payloadFaults.length).toBeGreaterThanOrEqual(9);
    expect(refused.map((f) => f.file)).toEqual(payloadFaults.map((f) => f.file));
  });

  it('answer as Zod does on fixtures broken anywhere, sparse and full', () => {
    const fixtures = [...read(''), ...read('sparse/'), ...read('variants/')];
    const broken = fc.constantFrom(...fixtures).chain((fixture) =>
      mutatedData(fixture.data as Record<string, unknown>)
        .chain((data) => (Object.keys(data).length > 0 ? mutatedData(data) : fc.constant(data)))
        .map((data) => ({ event: fixture.event as FixedEventName, data })),
    );
    let refused = 0;
    fc.assert(
      fc.property(broken, ({ event, data }) => {
        const zod = zodAccepts(event, data);
        if (!zod) refused++;
        expect(jsonSchemaAccepts(event, data)).toBe(zod);
      }),
      { numRuns: RUNS },
    );
    expect(refused).toBeGreaterThan(RUNS / 20);
    expect(refused).toBeLessThan(RUNS);
  });

  it('carry the spine in required, nulls where allowed, and any string for an open union', () => {
    const payment = (schemas.get('PaymentCompleted') as { properties: { data: Schema } }).properties
      .data as { properties: { payment: Schema & { properties: Record<string, Schema> } } };
    const invoice = payment.properties.payment.properties['invoice'] as Schema & {
      properties: Record<string, Schema & { properties?: Record<string, Schema> }>;
    };
    expect(payment.properties.payment['required']).toEqual(['id', 'invoice']);
    expect(invoice['required']).toEqual(['id', 'totalAmount', 'currency', 'user']);
    // An open union accepts any string: its known values are in the TypeScript types only.
    expect(invoice.properties['currency']).toEqual({ type: 'string' });
    expect(invoice.properties['user']?.properties?.['email']).toEqual({ type: ['string', 'null'] });
  });
});
