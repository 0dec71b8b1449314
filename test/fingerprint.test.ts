import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fingerprintEnvelope } from '../src/fingerprint.js';
import { validFixtures } from './helpers/fixtures.js';

/** JSON with the keys of every object sorted: equal exactly for equal envelopes. */
function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  const entries = Object.keys(value)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${sortedJson((value as Record<string, unknown>)[key])}`);
  return `{${entries.join(',')}}`;
}

/** The same JSON value with the keys of every object in reverse order. */
function reversed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversed);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([key, item]) => [key, reversed(item)]),
  );
}

const json = fc
  .jsonValue({ maxDepth: 4 })
  .map((value) => JSON.parse(JSON.stringify(value)) as unknown);

describe('fingerprintEnvelope', () => {
  it('is 16 lowercase hex digits', () => {
    expect(fingerprintEnvelope({ event: 'UserSignedIn', data: {} })).toMatch(/^[0-9a-f]{16}$/);
  });

  it('ignores key order and whitespace, at every depth', () => {
    fc.assert(
      fc.property(json, (value) => {
        const wire = JSON.stringify(reversed(value), null, 2);
        expect(fingerprintEnvelope(JSON.parse(wire))).toBe(fingerprintEnvelope(value));
      }),
    );
  });

  it('agrees with a sorted-key serialisation on which envelopes are the same', () => {
    fc.assert(
      fc.property(json, json, (a, b) => {
        const same = sortedJson(a) === sortedJson(b);
        expect(fingerprintEnvelope(a) === fingerprintEnvelope(b)).toBe(same);
      }),
    );
  });

  it('tells apart values that differ in type, place or one character', () => {
    const variants: unknown[] = [
      { a: 1 },
      { a: '1' },
      { a: [1] },
      { a: { 1: 1 } },
      { a: true },
      { a: null },
      { b: 1 },
      { a: 1, b: 2 },
      { a: 2, b: 1 },
      { a: [1, 2] },
      { a: [2, 1] },
      { a: {} },
      { a: [] },
      { a: 'ab' },
      { a: 'ba' },
      { a: { b: 1 }, c: 2 },
      { a: { c: 2 }, b: 1 },
      [],
      {},
    ];
    const fingerprints = new Set(variants.map(fingerprintEnvelope));
    expect(fingerprints.size).toBe(variants.length);
  });

  it('changes when any one leaf of a payment changes', () => {
    const payment = structuredClone(validFixtures().get('PaymentCompleted')) as unknown;
    const original = fingerprintEnvelope(payment);
    const leaves: { parent: Record<string, unknown> | unknown[]; key: string | number }[] = [];
    (function collect(node: unknown): void {
      if (typeof node !== 'object' || node === null) return;
      for (const [key, child] of Object.entries(node)) {
        if (typeof child === 'object' && child !== null) collect(child);
        else leaves.push({ parent: node as Record<string, unknown>, key });
      }
    })(payment);
    expect(leaves.length).toBeGreaterThan(100);
    for (const { parent, key } of leaves) {
      const target = parent as Record<string | number, unknown>;
      const before = target[key];
      target[key] =
        typeof before === 'number'
          ? before + 1
          : typeof before === 'string'
            ? `${before}x`
            : before === null
              ? 0
              : !before;
      expect(fingerprintEnvelope(payment)).not.toBe(original);
      target[key] = before;
    }
    expect(fingerprintEnvelope(payment)).toBe(original);
  });

  it('treats 0 and -0 as one number, as a JSON serialisation does', () => {
    expect(fingerprintEnvelope({ a: -0 })).toBe(fingerprintEnvelope({ a: 0 }));
  });

  it('ignores enumerable properties that something added to Object.prototype', () => {
    const clean = fingerprintEnvelope({ a: 1 });
    Object.defineProperty(Object.prototype, 'polluted', {
      value: 1,
      enumerable: true,
      writable: true,
      configurable: true,
    });
    let polluted: string;
    try {
      polluted = fingerprintEnvelope({ a: 1 });
    } finally {
      delete (Object.prototype as Record<string, unknown>)['polluted'];
    }
    expect(polluted).toBe(clean);
  });
});
