/**
 * The behaviour every `IdempotencyStore` must have, as one suite each store runs.
 * @module
 */

import { randomBytes, randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  keepsEntityVersions,
  type ClaimResult,
  type EntityClaimResult,
  type EntityVersionStore,
  type HeldKey,
  type IdempotencyStore,
} from '../../src/stores/types.js';

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
  // First: the key contract leaves claims open until their lease ends (on Postgres, each holds
  // a connection of the pool).
  describeEntityContract(name, makeStore);
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

/** A delivery of the entity contract: the key it holds, and its claim of the entity. */
interface EntityDelivery {
  held: HeldKey;
  claim: EntityClaimResult;
}

/**
 * The ordering guard's part of the contract (`claimEntity`, `completeEntity`, `releaseEntity`):
 * as the receiver uses it, each entity claim is made by a delivery that holds a key of its own
 * (a store whose claim is a transaction takes the entity in it), and the key's claim ends after
 * the entity's (completed with it, or released).
 */
function describeEntityContract(name: string, makeStore: () => Promise<StoreUnderTest>): void {
  describe(`${name}: the entity versions of the ordering guard`, () => {
    let current: StoreUnderTest | undefined;
    let store: EntityVersionStore;
    /** Every delivery of the test, each ended in afterEach (a second end changes nothing). */
    const arrived: [EntityDelivery, string][] = [];

    beforeEach(async () => {
      current = await makeStore();
      if (!keepsEntityVersions(current.store)) throw new Error(`${name} keeps no entity versions`);
      store = current.store;
    });
    afterEach(async () => {
      // No claim is left open, even by a test that failed midway.
      for (const [delivery, e] of arrived.splice(0)) await fail(delivery, e).catch(() => {});
      await current?.cleanup();
      current = undefined;
    });

    /** A delivery claims a key of its own, then the entity at `versionMs`. */
    async function arrive(
      entity: string,
      versionMs: number,
      leaseMs = LONG,
    ): Promise<EntityDelivery> {
      const k = key();
      const held = { key: k, token: tokenOf(await store.claim(k, leaseMs)) };
      const delivery = { held, claim: await store.claimEntity(entity, versionMs, leaseMs, held) };
      arrived.push([delivery, entity]);
      return delivery;
    }

    /** The delivery's handlers succeeded: the entity's version recorded, then its key completed. */
    async function succeed(
      { held, claim }: EntityDelivery,
      entity: string,
      versionMs: number,
      ttlMs = TTL,
    ) {
      if (claim.state === 'claimed')
        await store.completeEntity(entity, claim.token, versionMs, ttlMs);
      await store.complete(held.key, held.token, TTL, 'fp');
    }

    /** The delivery's handlers failed (or it did not run them): the entity released, then its key. */
    async function fail({ held, claim }: EntityDelivery, entity: string) {
      if (claim.state === 'claimed') await store.releaseEntity(entity, claim.token);
      await store.release(held.key, held.token);
    }

    /** Whether a delivery of `versionMs` would run now: the state of its claim, the claim ended. */
    async function probe(entity: string, versionMs: number): Promise<EntityClaimResult['state']> {
      const delivery = await arrive(entity, versionMs);
      await fail(delivery, entity);
      return delivery.claim.state;
    }

    it('gives the first claim of an entity a token', async () => {
      const e = entity();
      const first = await arrive(e, 1_000);
      expect(first.claim).toEqual({ state: 'claimed', token: expect.stringMatching(/\S/) });
      await fail(first, e);
    });

    it('answers in_flight to every other delivery while one holds the entity, whatever its version', async () => {
      const e = entity();
      const first = await arrive(e, 1_000);
      for (const versionMs of [999, 1_000, 1_001]) {
        const other = await arrive(e, versionMs);
        expect(other.claim, String(versionMs)).toEqual({ state: 'in_flight' });
        await fail(other, e);
      }
      await fail(first, e);
    });

    it('answers superseded to an older version than the newest completed; an equal or newer one is claimed', async () => {
      const e = entity();
      await succeed(await arrive(e, 1_000), e, 1_000);
      expect(await probe(e, 999)).toBe('superseded');
      expect(await probe(e, 0)).toBe('superseded');
      expect(await probe(e, 1_000)).toBe('claimed');
      expect(await probe(e, 1_001)).toBe('claimed');
    });

    it('keeps the newest version: a newer completion raises it, an older one leaves it', async () => {
      const e = entity();
      await succeed(await arrive(e, 1_000), e, 1_000);
      await succeed(await arrive(e, 2_000), e, 2_000);
      expect(await probe(e, 1_999)).toBe('superseded');
      // Completed with an older version than the one recorded (its claim came with an equal one).
      await succeed(await arrive(e, 2_000), e, 1_500);
      expect(await probe(e, 1_999)).toBe('superseded');
      expect(await probe(e, 2_000)).toBe('claimed');
    });

    it('answers superseded at once to an older version even while a newer one is in flight', async () => {
      const e = entity();
      await succeed(await arrive(e, 1_000), e, 1_000);
      const running = await arrive(e, 3_000);
      expect(await probe(e, 500)).toBe('superseded');
      expect(await probe(e, 2_000)).toBe('in_flight');
      await succeed(running, e, 3_000);
      expect(await probe(e, 2_000)).toBe('superseded');
    });

    it('records nothing for a released claim, and frees the entity', async () => {
      const e = entity();
      await fail(await arrive(e, 5_000), e);
      expect(await probe(e, 1_000)).toBe('claimed');
    });

    it('lets a delivery whose claim was superseded or in_flight take nothing', async () => {
      const e = entity();
      await succeed(await arrive(e, 1_000), e, 1_000);
      const old = await arrive(e, 10);
      expect(old.claim.state).toBe('superseded');
      // Its key completed (nothing to do): the entity is free for the next one.
      await store.complete(old.held.key, old.held.token, TTL, 'fp');
      expect(await probe(e, 2_000)).toBe('claimed');
    });

    it('ignores completeEntity and releaseEntity with a token that never held the entity', async () => {
      const e = entity();
      const first = await arrive(e, 1_000);
      await store.completeEntity(e, 'not-the-token', 9_000, TTL);
      await store.releaseEntity(e, 'not-the-token');
      const other = await arrive(e, 2_000);
      expect(other.claim).toEqual({ state: 'in_flight' });
      await fail(other, e);
      await succeed(first, e, 1_000);
      // The stray completion recorded nothing: 9 000 would supersede 2 000.
      expect(await probe(e, 2_000)).toBe('claimed');
    });

    it('ignores completeEntity of an entity nobody holds', async () => {
      const e = entity();
      await store.completeEntity(e, 'some-token', 9_000, TTL);
      await store.releaseEntity(e, 'some-token');
      expect(await probe(e, 1_000)).toBe('claimed');
    });

    it("frees the entity when the lease runs out, and refuses the expired holder's completion", async () => {
      const e = entity();
      const expired = await arrive(e, 5_000, 60);
      expect(await probe(e, 1_000)).toBe('in_flight');
      await sleep(150);
      const next = await arrive(e, 1_000);
      expect(next.claim.state).toBe('claimed');
      await succeed(expired, e, 5_000);
      await succeed(next, e, 1_000);
      // The expired holder's 5 000 was never recorded.
      expect(await probe(e, 2_000)).toBe('claimed');
    });

    it('forgets a version after its ttl', async () => {
      const e = entity();
      await succeed(await arrive(e, 1_000), e, 1_000, 80);
      expect(await probe(e, 999)).toBe('superseded');
      await sleep(200);
      expect(await probe(e, 999)).toBe('claimed');
    });

    it('gives exactly one of 10 concurrent deliveries of one entity the claim', async () => {
      const e = entity();
      const deliveries = await Promise.all(Array.from({ length: 10 }, () => arrive(e, 1_000)));
      const states = deliveries.map((delivery) => delivery.claim.state);
      expect(states.filter((state) => state === 'claimed')).toHaveLength(1);
      expect(states.filter((state) => state === 'in_flight')).toHaveLength(9);
      for (const delivery of deliveries) await fail(delivery, e);
    });

    it('answers superseded to all of 10 concurrent older deliveries', async () => {
      const e = entity();
      await succeed(await arrive(e, 1_000), e, 1_000);
      const deliveries = await Promise.all(Array.from({ length: 10 }, () => arrive(e, 999)));
      expect(deliveries.map((delivery) => delivery.claim.state)).toEqual(
        deliveries.map(() => 'superseded'),
      );
      for (const delivery of deliveries) await fail(delivery, e);
    });

    it('keeps distinct entities independent, and apart from a key of the same name', async () => {
      const [a, b] = [entity(), entity()];
      await succeed(await arrive(a, 1_000), a, 1_000);
      const holding = await arrive(b, 1);
      expect(holding.claim.state).toBe('claimed');
      expect(await probe(a, 999)).toBe('superseded');
      await fail(holding, b);
      // A delivery key spelt as the entity: its own, unaffected either way.
      const claim = await store.claim(a, LONG);
      expect(claim.state).toBe('claimed');
      await store.complete(a, tokenOf(claim), TTL, 'fp');
      expect(await probe(a, 999)).toBe('superseded');
      expect(await probe(b, 0)).toBe('claimed');
    });

    it('keeps entities that differ only by a lone surrogate, U+0000, braces or length apart', async () => {
      const base = entity();
      const long = base + 'x'.repeat(10_000);
      const entities = [
        base,
        `${base}\ud800`,
        `${base}\udc00`,
        `${base}\ufffd`,
        `${base}\0`,
        `\0${base}`,
        `${base}{x}`,
        `${base}%7Bx%7D`,
        long,
        `${long}\ud800`,
        long + 'x',
        `~sha256:${base}`,
      ];
      // Entity i completed at version 1 000 + i, one after the other.
      for (const [i, e] of entities.entries()) {
        const delivery = await arrive(e, 1_000 + i);
        expect(delivery.claim.state, `entity ${i}`).toBe('claimed');
        await succeed(delivery, e, 1_000 + i);
      }
      // Each has its own version: one just under it is superseded, its own is not.
      for (const [i, e] of entities.entries()) {
        expect(await probe(e, 999 + i), `entity ${i}`).toBe('superseded');
        expect(await probe(e, 1_000 + i), `entity ${i}`).toBe('claimed');
      }
    });
  });
}

function key(): string {
  return `contract-${randomUUID()}`;
}

/** An entity as the receiver names it (delivery-key.ts' entityKeyOf). */
function entity(): string {
  return `~["entity",null,"progress:${randomUUID()}"]`;
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
