/**
 * The behaviour every `IdempotencyStore` must have, as one suite each store runs: one claim and
 * one settle per delivery (its key, its entity's records and its entity's version taken together,
 * or nothing), and a look at many keys that takes nothing.
 * @module
 */

import { randomBytes, randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type {
  Claim,
  ClaimRequest,
  HeldClaim,
  IdempotencyStore,
  VersionRequest,
} from '../../src/stores/types.js';

/** A store under test and how to dispose of it. */
export interface StoreUnderTest {
  store: IdempotencyStore;
  cleanup(): Promise<void>;
  /**
   * Whether a claim is a transaction (postgresStore): a claim whose lease runs out unsettled is
   * rolled back, its version with it, where another store keeps the version it took.
   */
  transactional?: boolean;
}

const LONG = 10_000;
const TTL = 60_000;

/** What a test asks for beside the key. */
interface Asking {
  leaseMs?: number;
  fingerprint?: string;
  ttlMs?: number;
  records?: readonly string[];
  recordsAs?: { fingerprint: string; ttlMs: number };
  version?: { entity: string; versionMs: number; ttlMs?: number };
}

/** A claim request for `key`, with what `asking` adds. */
export function requestFor(key: string, asking: Asking = {}): ClaimRequest {
  const { leaseMs = LONG, fingerprint = 'fp', ttlMs = TTL, records, recordsAs, version } = asking;
  const versionRequest: VersionRequest | undefined =
    version === undefined ? undefined : { ttlMs: TTL, ...version };
  return {
    key,
    leaseMs,
    completion: { fingerprint, ttlMs, records: recordsAs },
    records,
    version: versionRequest,
  };
}

/**
 * Runs the store contract against fresh stores from `makeStore` (one per test). Lease and ttl
 * expiry use real time with short leases (60–100 ms).
 *
 * @example
 * ```ts
 * describeStoreContract('memoryStore', async () => ({ store: memoryStore(), cleanup: async () => {} }));
 * ```
 */
export function describeStoreContract(
  name: string,
  makeStore: () => Promise<StoreUnderTest>,
): void {
  describe(`${name}: the IdempotencyStore contract`, () => {
    let current: StoreUnderTest | undefined;
    let store: IdempotencyStore;
    /** Claims a test left held: released after it, so no pool stays drained. */
    let open: HeldClaim[] = [];

    beforeEach(async () => {
      current = await makeStore();
      store = current.store;
      open = [];
    });
    afterEach(async () => {
      await Promise.allSettled(open.map((claim) => store.settle(claim, 'release')));
      await current?.cleanup();
      current = undefined;
    });

    /** `request` claimed: the claim, kept to be released after the test unless settled. */
    async function claim(request: ClaimRequest): Promise<Claim> {
      const answer = await store.claim(request);
      if (answer.state === 'claimed') open.push(answer);
      return answer;
    }

    async function held(request: ClaimRequest): Promise<HeldClaim> {
      return heldOf(await claim(request));
    }

    async function settle(claimed: HeldClaim, how: 'complete' | 'release'): Promise<void> {
      await store.settle(claimed, how);
      open = open.filter((other) => other !== claimed);
    }

    /** What a probe claim of `key` answers, given back at once when it takes it. */
    async function probe(request: ClaimRequest): Promise<Claim> {
      const answer = await claim(request);
      if (answer.state === 'claimed') await settle(answer, 'release');
      return answer;
    }

    describe('the key', () => {
      it('gives the first claim of a key a token, and the request back', async () => {
        const request = requestFor(key());
        const result = await held(request);
        expect(result.token).toMatch(/\S/);
        expect(result.request).toBe(request);
        expect(result.records).toEqual([]);
        expect(result.superseded).toBe(false);
      });

      it('gives every claim a different token', async () => {
        const k = key();
        const first = await held(requestFor(k));
        await settle(first, 'release');
        expect((await held(requestFor(k))).token).not.toBe(first.token);
      });

      it('answers in_flight naming the key to a second claim while the first holds it', async () => {
        const k = key();
        await held(requestFor(k));
        expect(await claim(requestFor(k))).toEqual({ state: 'in_flight', held: 'key' });
        expect(await claim(requestFor(k))).toEqual({ state: 'in_flight', held: 'key' });
      });

      it('answers done with the fingerprint once the holder completes', async () => {
        const k = key();
        await settle(await held(requestFor(k, { fingerprint: 'fp:1' })), 'complete');
        expect(await claim(requestFor(k))).toEqual({ state: 'done', fingerprint: 'fp:1' });
        expect(await claim(requestFor(k, { fingerprint: 'other' }))).toEqual({
          state: 'done',
          fingerprint: 'fp:1',
        });
      });

      it('keeps a fingerprint exactly as given', async () => {
        const k = key();
        const fingerprint = 'sha256:Ab/+=: ü {x} %7B|L:D:';
        await settle(await held(requestFor(k, { fingerprint })), 'complete');
        expect(await claim(requestFor(k))).toEqual({ state: 'done', fingerprint });
      });

      it('lets the key be claimed again after the holder releases it', async () => {
        const k = key();
        await settle(await held(requestFor(k)), 'release');
        expect((await claim(requestFor(k))).state).toBe('claimed');
      });

      it('ignores a settle with a token that never held the key', async () => {
        const k = key();
        const holder = await held(requestFor(k));
        const forged: HeldClaim = { ...holder, token: randomUUID(), transaction: undefined };
        await store.settle(forged, 'complete');
        await store.settle(forged, 'release');
        expect(await claim(requestFor(k))).toEqual({ state: 'in_flight', held: 'key' });
      });

      it('ignores a stale claim once another delivery has claimed the released key', async () => {
        const k = key();
        const stale = await held(requestFor(k, { fingerprint: 'stale' }));
        await settle(stale, 'release');
        const currentClaim = await held(requestFor(k, { fingerprint: 'current' }));
        await store.settle(stale, 'complete');
        await store.settle(stale, 'release');
        expect(await claim(requestFor(k))).toEqual({ state: 'in_flight', held: 'key' });
        await settle(currentClaim, 'complete');
        expect(await claim(requestFor(k))).toEqual({ state: 'done', fingerprint: 'current' });
      });

      it('does not let a release undo a completion', async () => {
        const k = key();
        const holder = await held(requestFor(k));
        await settle(holder, 'complete');
        await store.settle(holder, 'release');
        expect(await claim(requestFor(k))).toEqual({ state: 'done', fingerprint: 'fp' });
      });

      it('makes the key claimable again when the lease runs out', async () => {
        const k = key();
        await held(requestFor(k, { leaseMs: 60 }));
        expect(await claim(requestFor(k))).toEqual({ state: 'in_flight', held: 'key' });
        await sleep(200);
        expect((await claim(requestFor(k))).state).toBe('claimed');
      });

      it('refuses the settle of a holder whose lease ran out and was taken over', async () => {
        const k = key();
        const expired = await held(requestFor(k, { leaseMs: 60, fingerprint: 'expired' }));
        await sleep(200);
        const taker = await held(requestFor(k, { fingerprint: 'taker' }));
        await store.settle(expired, 'complete');
        await store.settle(expired, 'release');
        expect(await claim(requestFor(k))).toEqual({ state: 'in_flight', held: 'key' });
        await settle(taker, 'complete');
        expect(await claim(requestFor(k))).toEqual({ state: 'done', fingerprint: 'taker' });
      });

      it('forgets a completed key after its ttl', async () => {
        const k = key();
        await settle(await held(requestFor(k, { ttlMs: 60 })), 'complete');
        expect((await claim(requestFor(k))).state).toBe('done');
        await sleep(200);
        expect((await claim(requestFor(k))).state).toBe('claimed');
      });

      it('gives exactly one of 20 concurrent claims of one key', async () => {
        const k = key();
        const results = await Promise.all(Array.from({ length: 20 }, () => claim(requestFor(k))));
        expect(results.filter((r) => r.state === 'claimed')).toHaveLength(1);
        expect(results.filter((r) => r.state === 'in_flight')).toHaveLength(19);
      });

      it('keeps keys with braces, percent signs, colons and non-ASCII apart', async () => {
        const base = key();
        const keys = ['{x}', 'x', '%7Bx%7D', '{x', 'x}', '}{', '', ':x', 'ключ', '{{x}}'].map(
          (suffix) => base + suffix,
        );
        for (const [i, k] of keys.entries()) {
          await settle(await held(requestFor(k, { fingerprint: `fp${i}` })), 'complete');
        }
        for (const [i, k] of keys.entries()) {
          expect(await claim(requestFor(k)), `key ${i}`).toEqual({
            state: 'done',
            fingerprint: `fp${i}`,
          });
        }
      });

      // Valid JSON escapes the platform may send: a lone surrogate has no UTF-8 form (a client
      // that encodes it as U+FFFD makes two keys one), PostgreSQL refuses U+0000 in text, and a
      // btree entry holds about 2.7 kB. Each key must be stored, claimed, completed and done on
      // its own, and never refused.
      it('keeps keys that differ only by a lone surrogate, U+0000 or length apart, each done alone', async () => {
        const base = key();
        const long = base + randomLetters(10_000);
        const keys = [
          base,
          `${base}\ud800`,
          `${base}\udbff`,
          `${base}\udc00`,
          `${base}\ufffd`,
          `${base}\0`,
          `\0${base}`,
          long,
          `${long}\ud800`,
          long + 'x',
          `~sha256:${base}`,
        ];
        for (const [i, k] of keys.entries()) {
          expect((await probe(requestFor(k))).state, `key ${i} free`).toBe('claimed');
          await settle(await held(requestFor(k, { fingerprint: `fp${i}` })), 'complete');
        }
        for (const [i, k] of keys.entries()) {
          expect(await claim(requestFor(k)), `key ${i}`).toEqual({
            state: 'done',
            fingerprint: `fp${i}`,
          });
        }
        expect(await store.peek(keys)).toEqual(
          keys.map((_, i) => ({ state: 'done', fingerprint: `fp${i}` })),
        );
      });

      it('marks a key done again, with the new ttl, when it is completed again after its ttl', async () => {
        const k = key();
        await settle(await held(requestFor(k, { ttlMs: 60, fingerprint: 'first' })), 'complete');
        await sleep(200);
        await settle(await held(requestFor(k, { fingerprint: 'second' })), 'complete');
        expect(await claim(requestFor(k))).toEqual({ state: 'done', fingerprint: 'second' });
      });
    });

    describe("an entity's records, taken with the key", () => {
      it('takes every free record with the key and completes them with the records completion', async () => {
        const [k, a, b] = [key(), record(), record()];
        const recordsAs = { fingerprint: 'webhook', ttlMs: TTL };
        const holder = await held(requestFor(k, { records: [a, b], recordsAs }));
        expect(holder.records).toEqual([{ state: 'held' }, { state: 'held' }]);
        // Held: a claim of the record as a key, or as another delivery's record, waits.
        expect(await claim(requestFor(a))).toEqual({ state: 'in_flight', held: 'key' });
        expect(await claim(requestFor(key(), { records: [b] }))).toEqual({
          state: 'in_flight',
          held: 'record',
        });
        // A store whose claims are transactions sees them free until they commit.
        const flying = { state: current?.transactional ? 'free' : 'in_flight' };
        expect(await store.peek([a, b, k])).toEqual([flying, flying, flying]);
        await settle(holder, 'complete');
        expect(await store.peek([a, b, k])).toEqual([
          { state: 'done', fingerprint: 'webhook' },
          { state: 'done', fingerprint: 'webhook' },
          { state: 'done', fingerprint: 'fp' },
        ]);
      });

      it("completes the records as the key when the completion names no records' own", async () => {
        const [k, r] = [key(), record()];
        await settle(
          await held(requestFor(k, { records: [r], fingerprint: 'reconciled' })),
          'complete',
        );
        expect(await store.peek([r])).toEqual([{ state: 'done', fingerprint: 'reconciled' }]);
      });

      it('answers a record done before with its fingerprint, takes the key, and leaves the record as it was', async () => {
        const [first, second, r] = [key(), key(), record()];
        await settle(
          await held(requestFor(first, { records: [r], fingerprint: 'reconciled' })),
          'complete',
        );
        const holder = await held(
          requestFor(second, { records: [r], recordsAs: { fingerprint: 'webhook', ttlMs: TTL } }),
        );
        expect(holder.records).toEqual([{ state: 'done', fingerprint: 'reconciled' }]);
        await settle(holder, 'complete');
        expect(await store.peek([r, second])).toEqual([
          { state: 'done', fingerprint: 'reconciled' },
          { state: 'done', fingerprint: 'fp' },
        ]);
      });

      it('takes nothing when a record is held: the key stays free', async () => {
        const [k, r] = [key(), record()];
        const holder = await held(requestFor(key(), { records: [r] }));
        expect(await claim(requestFor(k, { records: [r] }))).toEqual({
          state: 'in_flight',
          held: 'record',
        });
        expect(await store.peek([k])).toEqual([{ state: 'free' }]);
        await settle(holder, 'release');
        expect(heldOf(await claim(requestFor(k, { records: [r] }))).records).toEqual([
          { state: 'held' },
        ]);
      });

      it('answers done for the key before anything else, taking nothing', async () => {
        const [k, r] = [key(), record()];
        await settle(await held(requestFor(k)), 'complete');
        expect(await claim(requestFor(k, { records: [r] }))).toEqual({
          state: 'done',
          fingerprint: 'fp',
        });
        expect(await store.peek([r])).toEqual([{ state: 'free' }]);
      });

      it('frees the records it took when it is released', async () => {
        const [k, r] = [key(), record()];
        await settle(await held(requestFor(k, { records: [r] })), 'release');
        expect(await store.peek([k, r])).toEqual([{ state: 'free' }, { state: 'free' }]);
      });

      it('refuses the settle of a holder whose lease ran out, for a record another claim took since', async () => {
        const r = record();
        const expired = await held(
          requestFor(key(), { records: [r], leaseMs: 60, fingerprint: 'late' }),
        );
        await sleep(200);
        const taker = await held(
          requestFor(key(), { records: [r], recordsAs: { fingerprint: 'taker', ttlMs: TTL } }),
        );
        await store.settle(expired, 'release');
        await store.settle(expired, 'complete');
        expect(await claim(requestFor(key(), { records: [r] }))).toEqual({
          state: 'in_flight',
          held: 'record',
        });
        await settle(taker, 'complete');
        expect(await store.peek([r])).toEqual([{ state: 'done', fingerprint: 'taker' }]);
      });

      it('frees the records with the key when the lease runs out', async () => {
        const [k, r] = [key(), record()];
        await held(requestFor(k, { records: [r], leaseMs: 60 }));
        await sleep(200);
        expect(heldOf(await claim(requestFor(key(), { records: [r] }))).records).toEqual([
          { state: 'held' },
        ]);
      });
    });

    describe("the entity's version (the ordering guard)", () => {
      /** A claim of a fresh key for `entity` at `versionMs`. */
      const at = (entity: string, versionMs: number, leaseMs = LONG) =>
        requestFor(key(), { version: { entity, versionMs }, leaseMs });

      it('takes the entity with the key', async () => {
        const e = entity();
        const holder = await held(at(e, 1_000));
        expect(holder.superseded).toBe(false);
      });

      it('answers in_flight naming the entity to a newer or equal version while one holds it', async () => {
        const e = entity();
        await held(at(e, 1_000));
        expect(await claim(at(e, 1_000))).toEqual({ state: 'in_flight', held: 'entity' });
        expect(await claim(at(e, 2_000))).toEqual({ state: 'in_flight', held: 'entity' });
      });

      it('answers superseded to an older version than the newest completed; an equal or newer one takes it', async () => {
        const e = entity();
        await settle(await held(at(e, 1_000)), 'complete');
        expect(heldOf(await probe(at(e, 999))).superseded).toBe(true);
        expect(heldOf(await probe(at(e, 1_000))).superseded).toBe(false);
        expect(heldOf(await probe(at(e, 1_001))).superseded).toBe(false);
      });

      it('answers superseded while a newer one is in flight when it is older than the one applied before', async () => {
        const e = entity();
        await settle(await held(at(e, 1_000)), 'complete');
        await held(at(e, 2_000));
        // Older than 1 000 (applied): superseded at once; between the two: it waits.
        expect(heldOf(await claim(at(e, 999))).superseded).toBe(true);
        expect(await claim(at(e, 1_500))).toEqual({ state: 'in_flight', held: 'entity' });
      });

      it('takes the key but not the entity for a superseded version, and completes the key', async () => {
        const e = entity();
        await settle(await held(at(e, 1_000)), 'complete');
        const request = at(e, 500);
        const superseded = await held(request);
        expect(superseded.superseded).toBe(true);
        // The entity is free for a newer one meanwhile.
        expect(heldOf(await probe(at(e, 1_500))).superseded).toBe(false);
        await settle(superseded, 'complete');
        expect(await claim({ ...request })).toEqual({ state: 'done', fingerprint: 'fp' });
        expect(heldOf(await probe(at(e, 999))).superseded).toBe(true);
      });

      it('keeps the newest version: a newer completion raises it', async () => {
        const e = entity();
        await settle(await held(at(e, 1_000)), 'complete');
        await settle(await held(at(e, 2_000)), 'complete');
        expect(heldOf(await probe(at(e, 1_999))).superseded).toBe(true);
      });

      it('gives the entity back the version it had when a claim is released', async () => {
        const e = entity();
        await settle(await held(at(e, 1_000)), 'complete');
        await settle(await held(at(e, 3_000)), 'release');
        expect(heldOf(await probe(at(e, 2_000))).superseded).toBe(false);
        expect(heldOf(await probe(at(e, 999))).superseded).toBe(true);
      });

      it('records nothing for a released first claim', async () => {
        const e = entity();
        await settle(await held(at(e, 3_000)), 'release');
        expect(heldOf(await probe(at(e, 1))).superseded).toBe(false);
      });

      it('takes nothing when the entity is held: the key stays free', async () => {
        const e = entity();
        await held(at(e, 1_000));
        const request = at(e, 2_000);
        expect(await claim(request)).toEqual({ state: 'in_flight', held: 'entity' });
        expect(await store.peek([request.key])).toEqual([{ state: 'free' }]);
      });

      it('takes a version at claim time: once a claim dies mid-handler, an older state is superseded', async () => {
        const e = entity();
        await settle(await held(at(e, 1_000)), 'complete');
        // A claim at 3 000 whose process dies: its lease runs out, never settled.
        await held(at(e, 3_000, 60));
        await sleep(200);
        const older = heldOf(await probe(at(e, 2_000)));
        if (current?.transactional) {
          // Rolled back with the handlers' writes: nothing of 3 000 was applied.
          expect(older.superseded).toBe(false);
        } else {
          // 3 000 may have been applied: 2 000 must not run after it.
          expect(older.superseded).toBe(true);
        }
        // The same version, or a newer one, runs again.
        expect(heldOf(await probe(at(e, 3_000))).superseded).toBe(false);
        expect(heldOf(await probe(at(e, 999))).superseded).toBe(true);
      });

      it("refuses the settle of a holder whose lease ran out, keeping the taker's version", async () => {
        const e = entity();
        const expired = await held(at(e, 1_000, 60));
        await sleep(200);
        const taker = await held(at(e, 2_000));
        await store.settle(expired, 'release');
        expect(await claim(at(e, 2_500))).toEqual({ state: 'in_flight', held: 'entity' });
        await settle(taker, 'complete');
        expect(heldOf(await probe(at(e, 1_999))).superseded).toBe(true);
      });

      it('forgets a version after its ttl', async () => {
        const e = entity();
        const request = requestFor(key(), { version: { entity: e, versionMs: 1_000, ttlMs: 60 } });
        await settle(await held(request), 'complete');
        await sleep(200);
        expect(heldOf(await probe(at(e, 1))).superseded).toBe(false);
      });

      it('gives exactly one of 10 concurrent deliveries of one entity the claim', async () => {
        const e = entity();
        const answers = await Promise.all(Array.from({ length: 10 }, () => claim(at(e, 1_000))));
        expect(answers.filter((answer) => answer.state === 'claimed')).toHaveLength(1);
        expect(answers.filter((answer) => answer.state === 'in_flight')).toHaveLength(9);
      });

      it('keeps distinct entities independent, and apart from a key of the same name', async () => {
        const [a, b] = [entity(), entity()];
        await settle(await held(at(a, 1_000)), 'complete');
        await held(at(b, 1));
        expect(heldOf(await probe(at(a, 999))).superseded).toBe(true);
        // A delivery key spelt as the entity: its own, unaffected either way.
        await settle(await held(requestFor(a)), 'complete');
        expect(heldOf(await probe(at(a, 999))).superseded).toBe(true);
      });

      it('keeps entities that differ only by a lone surrogate, U+0000, braces or length apart', async () => {
        const base = entity();
        const long = base + randomLetters(10_000);
        const entities = [
          base,
          `${base}\ud800`,
          `${base}\udc00`,
          `${base}\ufffd`,
          `${base}\0`,
          `\0${base}`,
          `${base}{x}`,
          `${base}%7Bx%7D`,
          `${base}|1|2`,
          long,
          `${long}\ud800`,
          long + 'x',
          `~sha256:${base}`,
        ];
        for (const [i, e] of entities.entries()) {
          await settle(await held(at(e, 1_000 + i)), 'complete');
        }
        for (const [i, e] of entities.entries()) {
          expect(heldOf(await probe(at(e, 999 + i))).superseded, `entity ${i}`).toBe(true);
          expect(heldOf(await probe(at(e, 1_000 + i))).superseded, `entity ${i}`).toBe(false);
        }
      });
    });

    describe('everything at once', () => {
      it('takes the key, a record and the entity in one claim, and ends them in one settle', async () => {
        const [k, r, e] = [key(), record(), entity()];
        const request = requestFor(k, {
          records: [r],
          recordsAs: { fingerprint: 'webhook', ttlMs: TTL },
          version: { entity: e, versionMs: 5_000 },
        });
        const holder = await held(request);
        expect(holder.records).toEqual([{ state: 'held' }]);
        expect(holder.superseded).toBe(false);
        await settle(holder, 'complete');
        expect(await store.peek([k, r])).toEqual([
          { state: 'done', fingerprint: 'fp' },
          { state: 'done', fingerprint: 'webhook' },
        ]);
        expect(
          heldOf(await probe(requestFor(key(), { version: { entity: e, versionMs: 4_999 } })))
            .superseded,
        ).toBe(true);
      });

      it('takes nothing at all when the entity is held, though the key and the record are free', async () => {
        const [k, r, e] = [key(), record(), entity()];
        await held(requestFor(key(), { version: { entity: e, versionMs: 1 } }));
        expect(
          await claim(requestFor(k, { records: [r], version: { entity: e, versionMs: 2 } })),
        ).toEqual({ state: 'in_flight', held: 'entity' });
        expect(await store.peek([k, r])).toEqual([{ state: 'free' }, { state: 'free' }]);
      });
    });

    describe('peek', () => {
      it('answers nothing for no key', async () => {
        expect(await store.peek([])).toEqual([]);
      });

      it('tells free, in flight and done apart, in the order asked, taking nothing', async () => {
        const [free, flying, done] = [key(), key(), key()];
        await held(requestFor(flying));
        await settle(await held(requestFor(done, { fingerprint: 'kept' })), 'complete');
        const states = await store.peek([free, done, flying, free]);
        expect(states[0]).toEqual({ state: 'free' });
        expect(states[1]).toEqual({ state: 'done', fingerprint: 'kept' });
        // A store whose claims are transactions sees a key in flight as free.
        expect(states[2]).toEqual({ state: current?.transactional ? 'free' : 'in_flight' });
        expect(states[3]).toEqual({ state: 'free' });
        expect((await claim(requestFor(free))).state).toBe('claimed');
      });

      it('reads a page of a thousand keys', async () => {
        const keys = Array.from({ length: 1000 }, () => key());
        await settle(await held(requestFor(keys[500]!, { fingerprint: 'one' })), 'complete');
        const states = await store.peek(keys);
        expect(states).toHaveLength(1000);
        expect(states.filter((state) => state.state === 'done')).toEqual([
          { state: 'done', fingerprint: 'one' },
        ]);
      });
    });
  });
}

/** The claim, or a failure naming what came instead. */
export function heldOf(answer: Claim): HeldClaim {
  if (answer.state !== 'claimed')
    throw new Error(`expected a claim, got ${JSON.stringify(answer)}`);
  return answer;
}

function key(): string {
  return `contract-${randomUUID()}`;
}

/** A record as the receiver names one (delivery-key.ts' recordKeyOf). */
function record(): string {
  return `~["record",null,"invoice:${randomUUID()}"]`;
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

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
