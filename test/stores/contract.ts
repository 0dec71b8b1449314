/**
 * The behaviour every `IdempotencyStore` must have, as one suite each store runs.
 * @module
 */

import { randomBytes, randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClaimResult, IdempotencyStore } from '../../src/stores/types.js';

/** A store under test and how to dispose of it. */
export interface StoreUnderTest {
  store: IdempotencyStore;
  cleanup(): Promise<void>;
}

const LONG = 10_000;
const TTL = 60_000;

/**
 * Runs the store contract against fresh stores from `makeStore` (one per test). Lease and
 * ttl expiry use real time with short leases (60–100 ms).
 *
 * @example
 * ```ts
 * describeStoreContract('memoryStore', async () => ({
 *   store: memoryStore(),
 *   cleanup: async () => {},
 * }));
 * ```
 */
export function describeStoreContract(
  name: string,
  makeStore: () => Promise<StoreUnderTest>,
): void {
  describe(`${name}: the IdempotencyStore contract`, () => {
    let current: StoreUnderTest | undefined;
    let store: IdempotencyStore;

    beforeEach(async () => {
      current = await makeStore();
      store = current.store;
    });
    afterEach(async () => {
      await current?.cleanup();
      current = undefined;
    });

    it('gives the first claim of a key a token', async () => {
      const result = await store.claim(key(), LONG);
      expect(result.state).toBe('claimed');
      expect(tokenOf(result)).toMatch(/\S/);
    });

    it('gives every claim a different token', async () => {
      const k = key();
      const first = tokenOf(await store.claim(k, LONG));
      await store.release(k, first);
      expect(tokenOf(await store.claim(k, LONG))).not.toBe(first);
    });

    it('answers in_flight to a second claim while the first holds the key', async () => {
      const k = key();
      await store.claim(k, LONG);
      expect(await store.claim(k, LONG)).toEqual({ state: 'in_flight' });
      expect(await store.claim(k, LONG)).toEqual({ state: 'in_flight' });
    });

    it('answers done with the fingerprint once the holder completes', async () => {
      const k = key();
      const token = tokenOf(await store.claim(k, LONG));
      await store.complete(k, token, TTL, 'fp:1');
      expect(await store.claim(k, LONG)).toEqual({ state: 'done', fingerprint: 'fp:1' });
      expect(await store.claim(k, LONG)).toEqual({ state: 'done', fingerprint: 'fp:1' });
    });

    it('keeps a fingerprint exactly as given', async () => {
      const k = key();
      const fingerprint = 'sha256:Ab/+=: ü {x} %7B';
      await store.complete(k, tokenOf(await store.claim(k, LONG)), TTL, fingerprint);
      expect(await store.claim(k, LONG)).toEqual({ state: 'done', fingerprint });
    });

    it('lets the key be claimed again after the holder releases it', async () => {
      const k = key();
      const token = tokenOf(await store.claim(k, LONG));
      await store.release(k, token);
      expect((await store.claim(k, LONG)).state).toBe('claimed');
    });

    it('ignores complete and release with a token that never held the key', async () => {
      const k = key();
      await store.claim(k, LONG);
      await store.complete(k, 'not-the-token', TTL, 'fp');
      await store.release(k, 'not-the-token');
      expect(await store.claim(k, LONG)).toEqual({ state: 'in_flight' });
    });

    it('ignores complete and release of a key nobody holds', async () => {
      const k = key();
      await store.complete(k, 'some-token', TTL, 'fp');
      await store.release(k, 'some-token');
      expect((await store.claim(k, LONG)).state).toBe('claimed');
    });

    it('ignores a stale token once another delivery has claimed the released key', async () => {
      const k = key();
      const stale = tokenOf(await store.claim(k, LONG));
      await store.release(k, stale);
      const current = tokenOf(await store.claim(k, LONG));
      await store.complete(k, stale, TTL, 'stale');
      await store.release(k, stale);
      expect(await store.claim(k, LONG)).toEqual({ state: 'in_flight' });
      await store.complete(k, current, TTL, 'current');
      expect(await store.claim(k, LONG)).toEqual({ state: 'done', fingerprint: 'current' });
    });

    it('does not let a release undo a completion', async () => {
      const k = key();
      const token = tokenOf(await store.claim(k, LONG));
      await store.complete(k, token, TTL, 'fp');
      await store.release(k, token);
      expect(await store.claim(k, LONG)).toEqual({ state: 'done', fingerprint: 'fp' });
    });

    it('makes the key claimable again when the lease runs out', async () => {
      const k = key();
      await store.claim(k, 60);
      expect(await store.claim(k, LONG)).toEqual({ state: 'in_flight' });
      await sleep(150);
      expect((await store.claim(k, LONG)).state).toBe('claimed');
    });

    it('refuses complete and release from a holder whose lease ran out and was taken over', async () => {
      const k = key();
      const expired = tokenOf(await store.claim(k, 60));
      await sleep(150);
      const current = tokenOf(await store.claim(k, LONG));
      await store.complete(k, expired, TTL, 'expired');
      await store.release(k, expired);
      expect(await store.claim(k, LONG)).toEqual({ state: 'in_flight' });
      await store.complete(k, current, TTL, 'current');
      expect(await store.claim(k, LONG)).toEqual({ state: 'done', fingerprint: 'current' });
    });

    it('forgets a completed key after its ttl', async () => {
      const k = key();
      await store.complete(k, tokenOf(await store.claim(k, LONG)), 80, 'fp');
      expect(await store.claim(k, LONG)).toEqual({ state: 'done', fingerprint: 'fp' });
      await sleep(200);
      expect((await store.claim(k, LONG)).state).toBe('claimed');
    });

    it('gives exactly one of 50 concurrent claims of one key', async () => {
      const k = key();
      const results = await Promise.all(Array.from({ length: 50 }, () => store.claim(k, LONG)));
      expect(results.filter((r) => r.state === 'claimed')).toHaveLength(1);
      expect(results.filter((r) => r.state === 'in_flight')).toHaveLength(49);
    });

    it('keeps distinct keys independent', async () => {
      const [a, b, c] = [key(), key(), key()];
      const tokenA = tokenOf(await store.claim(a, LONG));
      expect((await store.claim(b, LONG)).state).toBe('claimed');
      await store.complete(a, tokenA, TTL, 'fp-a');
      expect(await store.claim(b, LONG)).toEqual({ state: 'in_flight' });
      expect((await store.claim(c, LONG)).state).toBe('claimed');
      expect(await store.claim(a, LONG)).toEqual({ state: 'done', fingerprint: 'fp-a' });
    });

    it('keeps keys with braces, percent signs, colons and non-ASCII apart', async () => {
      const base = key();
      const keys = ['{x}', 'x', '%7Bx%7D', '{x', 'x}', '}{', '', ':x', 'ключ', '{{x}}'].map(
        (suffix) => base + suffix,
      );
      const results = await Promise.all(keys.map((k) => store.claim(k, LONG)));
      expect(results.map((r) => r.state)).toEqual(keys.map(() => 'claimed'));
    });

    // Valid JSON escapes the platform may send: a lone surrogate has no UTF-8 form (a client
    // that encodes it as U+FFFD makes two keys one), PostgreSQL refuses U+0000 in text, and a
    // btree entry holds about 2.7 kB. Each key must be stored, claimed, completed and done on
    // its own, and never refused.
    it('keeps keys that differ only by a lone surrogate, U+0000 or length apart, each done alone', async () => {
      const base = key();
      const long = base + 'x'.repeat(10_000);
      const keys = [
        base,
        `${base}\ud800`,
        `${base}\udbff`,
        `${base}\udc00`,
        `${base}\ufffd`,
        `${base}\0`,
        `${base}\0\0`,
        `\0${base}`,
        `${base}\ud800\udc00`,
        long,
        `${long}\ud800`,
        `${long}\0`,
        long + 'x',
        `${base}${randomLetters(5_000)}`,
        `~sha256:${base}`,
      ];
      // One after the other (a Postgres claim holds a connection until it completes): a key
      // merged with an earlier one would be done already rather than claimed.
      for (const [i, k] of keys.entries()) {
        const claim = await store.claim(k, LONG);
        expect(claim.state, `key ${i}`).toBe('claimed');
        await store.complete(k, tokenOf(claim), TTL, `fp-${i}`);
      }
      const again = await Promise.all(keys.map((k) => store.claim(k, LONG)));
      expect(again).toEqual(keys.map((_, i) => ({ state: 'done', fingerprint: `fp-${i}` })));
    });

    it('gives each such key its own claim while the others are held', async () => {
      const base = key();
      const keys = [`${base}\ud800`, `${base}\udbff`, `${base}\udc00`, `${base}\0`, base];
      const tokens: string[] = [];
      for (const [i, k] of keys.entries()) {
        const claim = await store.claim(k, LONG);
        expect(claim.state, `key ${i}`).toBe('claimed');
        tokens.push(tokenOf(claim));
        // Every key claimed so far is held, none of the others is taken with it.
        for (const held of keys.slice(0, i + 1)) {
          expect(await store.claim(held, LONG)).toEqual({ state: 'in_flight' });
        }
      }
      // Each released alone: the key is free again, the others still held.
      await store.release(keys[0]!, tokens[0]!);
      expect(await store.claim(keys[1]!, LONG)).toEqual({ state: 'in_flight' });
      for (const [i, k] of keys.entries()) await store.release(k, tokens[i]!);
    });

    it('marks a key done again, with the new ttl, when it is completed again after its ttl', async () => {
      const k = key();
      await store.complete(k, tokenOf(await store.claim(k, LONG)), 80, 'first');
      await sleep(200);
      // Expired: a resend runs again, and completes with a ttl of its own.
      const token = tokenOf(await store.claim(k, LONG));
      await store.complete(k, token, TTL, 'second');
      expect(await store.claim(k, LONG)).toEqual({ state: 'done', fingerprint: 'second' });
      await sleep(200);
      // Still done well past the first ttl: the second completion's expiry counts.
      expect(await store.claim(k, LONG)).toEqual({ state: 'done', fingerprint: 'second' });
    });
  });
}

function key(): string {
  return `contract-${randomUUID()}`;
}

/** Random letters: a long key no storage compresses below its length. */
function randomLetters(length: number): string {
  return randomBytes(length)
    .toString('base64')
    .replace(/[^A-Za-z]/g, 'q')
    .slice(0, length);
}

function tokenOf(result: ClaimResult): string {
  if (result.state !== 'claimed') throw new Error(`expected a claim, got ${result.state}`);
  return result.token;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
