/**
 * The behaviour every `IdempotencyStore` must have, as one suite each store runs.
 * @module
 */

import { randomUUID } from 'node:crypto';
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
  });
}

function key(): string {
  return `contract-${randomUUID()}`;
}

function tokenOf(result: ClaimResult): string {
  if (result.state !== 'claimed') throw new Error(`expected a claim, got ${result.state}`);
  return result.token;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
