/**
 * storageKey: two different keys are never one stored key, every stored key is one Redis and
 * PostgreSQL keep as sent (well-formed UTF-16, no U+0000, short enough for a btree entry), and
 * the keys earlier versions stored are kept as they are.
 */

import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MAX_PLAIN_KEY_BYTES,
  STORAGE_KEY_MARKER,
  storageKey,
} from '../../src/stores/storage-key.js';

/** PostgreSQL's limit for one btree entry (a page's third, less headers), in bytes. */
const BTREE_ENTRY_BYTES = 2704;

/** Any code unit, with the troublesome ones (surrogates, U+0000, the marker's) often. */
const unit = fc.oneof(
  fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
  fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff', '\0', '\ufffd', '~', 's', ':'),
  fc.constant(STORAGE_KEY_MARKER),
  fc.constant('\ud83d\ude00'),
);

/** Keys of any code units, up to past the plain key's length. */
const anyKey = fc.oneof(
  fc.string({ unit, maxLength: 40 }),
  fc.string({ unit, minLength: 600, maxLength: 3000 }),
  fc.string({ unit: 'grapheme-ascii', minLength: 2000, maxLength: 2100 }),
);

/** A key and the same key with one code unit changed, added or removed. */
const nearKeys = fc
  .tuple(fc.string({ unit, maxLength: 30 }), unit, unit, fc.string({ unit, maxLength: 30 }))
  .map(([before, one, other, after]) => [before + one + after, before + other + after] as const);

/** Whether the string is what a server's UTF-8 gives back unchanged: no lone surrogate. */
function isWellFormed(text: string): boolean {
  return Buffer.from(text, 'utf8').toString('utf8') === text;
}

function expectStorable(stored: string): void {
  expect(isWellFormed(stored)).toBe(true);
  expect(stored).not.toContain('\0');
  expect(Buffer.byteLength(stored, 'utf8')).toBeLessThan(BTREE_ENTRY_BYTES);
}

describe('storageKey', () => {
  it('gives different keys different stored keys, each one a server keeps as sent', () => {
    fc.assert(
      fc.property(anyKey, anyKey, (a, b) => {
        const [storedA, storedB] = [storageKey(a), storageKey(b)];
        expectStorable(storedA);
        expectStorable(storedB);
        expect(storedA === storedB).toBe(a === b);
        // And the UTF-8 the server receives is as different as the keys.
        expect(Buffer.from(storedA).equals(Buffer.from(storedB))).toBe(a === b);
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps apart keys that differ in one code unit, a lone surrogate or U+0000 among them', () => {
    fc.assert(
      fc.property(nearKeys, ([a, b]) => {
        expect(storageKey(a) === storageKey(b)).toBe(a === b);
      }),
      { numRuns: 2000 },
    );
    const keys = ['k\ud800', 'k\udbff', 'k\udc00', 'k\ufffd', 'k\0', 'k', 'k\0\0', 'k\u2400'];
    expect(new Set(keys.map(storageKey)).size).toBe(keys.length);
  });

  it('keeps a key a server stores faithfully as it is, so stored keys are found after an upgrade', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (key) => {
        fc.pre(!key.startsWith(STORAGE_KEY_MARKER) && !key.includes('\0'));
        expect(storageKey(key)).toBe(key);
      }),
      { numRuns: 1000 },
    );
    for (const key of ['8b0c6a4e-3f0e-4c43-9d59-2b7d0f1c9e11', 'order:42', '{x}%7B', 'ключ', '']) {
      expect(storageKey(key)).toBe(key);
    }
    expect(storageKey('x'.repeat(MAX_PLAIN_KEY_BYTES))).toBe('x'.repeat(MAX_PLAIN_KEY_BYTES));
  });

  it('rewrites the keys a server cannot keep, and any key that looks rewritten', () => {
    const hashOf = (key: string) =>
      STORAGE_KEY_MARKER + createHash('sha256').update(Buffer.from(key, 'utf16le')).digest('hex');
    const rewritten = [
      '\ud800',
      'a\udbff',
      '\udc00b',
      'a\0b',
      'x'.repeat(MAX_PLAIN_KEY_BYTES + 1),
      // 683 code units of 3 bytes each: 2049 bytes of UTF-8.
      '€'.repeat(683),
      STORAGE_KEY_MARKER,
      hashOf('\ud800'),
    ];
    for (const key of rewritten) expect(storageKey(key)).toBe(hashOf(key));
    expect(storageKey('€'.repeat(682))).toBe('€'.repeat(682));
  });
});
