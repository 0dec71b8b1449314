/**
 * The behaviour of every store's `watch` (src/watchdog/types.ts), as one suite each store runs:
 * notes out of order, a success clearing its delivery and the failing time, a late failure of a
 * delivery that succeeded since ignored, a late success clearing neither a delivery nor the
 * failing time of a failure after it, failing deliveries
 * forgotten past keepMs and past maxFailing, a tenant's summary kept past the platform's disable
 * span (docs/platform.md) while its failing deliveries expire, tenants kept apart whatever their
 * code units; and, for any notes in any batches, what the reference steps of
 * src/stores/memory-watch.ts keep.
 * @module
 */

import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryWatch } from '../../src/stores/memory-watch.js';
import type { IdempotencyStore } from '../../src/stores/types.js';
import { WATCHDOG_DEFAULTS } from '../../src/defaults.js';
import type { AnswerNote, WatchBatch, WatchState } from '../../src/watchdog/types.js';

/** A store under test with a `watch`, and how to dispose of it. */
export interface WatchedStore {
  store: IdempotencyStore;
  cleanup(): Promise<void>;
  /**
   * For a store whose server expires what it keeps: how many ms the server still keeps tenant
   * `scope`'s summary, and each of its records of failing deliveries, as it says (Redis's PTTL,
   * Postgres's expires_at).
   */
  lifetimes?(scope: string): Promise<{ summary: number; failing: readonly number[] }>;
}

const T = Date.parse('2026-11-20T09:00:00.000Z');
const MINUTE = 60_000;
/** The platform's retries end 11 + 33 + 77 + 165 minutes after the first attempt (docs/platform.md). */
const RETRY_SPAN = (11 + 33 + 77 + 165) * MINUTE;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** The platform disables an endpoint with no successful delivery for 14 days (docs/platform.md). */
const DISABLE_SPAN = 14 * DAY;
/** What a receiver's batches give (src/watchdog/answer-notes.ts): the summary's keeping. */
const { keepSummaryMs } = WATCHDOG_DEFAULTS;

/** A failed answer of `key` in tenant `scope` at `at`. */
const failed = (key: string, at: number, scope = ''): AnswerNote => ({
  scope,
  at,
  ok: false,
  key,
  event: 'PaymentCompleted',
});
/** A 2xx answer. */
const succeeded = (key: string, at: number, scope = ''): AnswerNote => ({
  scope,
  at,
  ok: true,
  key,
  event: 'PaymentCompleted',
});

/**
 * Runs the `watch` contract against fresh stores from `makeStore` (one per test).
 *
 * @example
 * ```ts
 * describeWatchContract('memoryStore', async () => ({ store: memoryStore(), cleanup: async () => {} }));
 * ```
 */
export function describeWatchContract(
  name: string,
  makeStore: () => Promise<WatchedStore>,
  {
    expiresOnServer = false,
    reference = false,
  }: {
    expiresOnServer?: boolean;
    /** The store is the reference itself (memoryStore): no test compares it with itself. */
    reference?: boolean;
  } = {},
): void {
  describe(`${name}: the watch contract`, () => {
    let current: WatchedStore | undefined;
    let watch: (batch: WatchBatch) => Promise<WatchState | undefined>;

    beforeEach(async () => {
      current = await makeStore();
      const store = current.store;
      if (store.watch === undefined) throw new Error(`${name} has no watch`);
      watch = (batch) => store.watch!(batch);
    });
    afterEach(async () => {
      await current?.cleanup();
      current = undefined;
    });

    /** Writes `notes` (no read), with the retry span as keepMs. */
    const write = async (notes: AnswerNote[], now = T, maxFailing = 1000) =>
      watch({ notes, keepMs: RETRY_SPAN, keepSummaryMs, maxFailing, now });
    /** Reads tenant `scope`. */
    const read = async (scope = '', now = T, notes: AnswerNote[] = [], maxFailing = 1000) =>
      (await watch({ notes, keepMs: RETRY_SPAN, keepSummaryMs, maxFailing, now, read: scope }))!;

    it('gives back undefined for a batch that reads nothing, and keeps its notes', async () => {
      expect(await write([failed('k1', T)])).toBeUndefined();
      expect((await read()).failing.map((one) => one.key)).toEqual(['k1']);
    });

    it('gives { failing: [] } for a tenant it never heard of', async () => {
      await write([failed('k1', T, 'school-1')]);
      const state = await read('school-2');
      expect(state).toEqual({ failing: [] });
      // Also when the read comes with another tenant's notes.
      expect(await read('school-3', T, [failed('k2', T, 'school-1')])).toEqual({ failing: [] });
      expect(state.lastAttemptAt).toBeUndefined();
      expect(state.lastSuccessAt).toBeUndefined();
      expect(state.failingSince).toBeUndefined();
    });

    it('counts every attempt of a key, notes out of order: the earliest first, the latest last', async () => {
      // Two processes' batches: each attempt is noted once, whatever order they reach the store.
      await write([failed('k1', T + 11 * MINUTE), failed('k1', T + 44 * MINUTE)]);
      await write([failed('k1', T)]);
      const state = await read('', T + 44 * MINUTE);
      expect(state.failing).toEqual([
        {
          key: 'k1',
          event: 'PaymentCompleted',
          firstAttemptAt: T,
          attemptsSeen: 3,
          lastAttemptAt: T + 44 * MINUTE,
        },
      ]);
      expect(state.lastAttemptAt).toBe(T + 44 * MINUTE);
      expect(state.failingSince).toBe(T);
      expect(state.lastSuccessAt).toBeUndefined();
    });

    it('reads and writes in one call: the notes of the batch are in what it gives back', async () => {
      const state = await read('', T, [failed('k1', T), failed('k2', T + 1)]);
      expect(state.failing.map((one) => [one.key, one.attemptsSeen])).toEqual([
        ['k1', 1],
        ['k2', 1],
      ]);
    });

    it('clears a key and the failing time with a later success of it', async () => {
      await write([failed('k1', T), failed('k2', T + MINUTE)]);
      await write([succeeded('k1', T + 11 * MINUTE)]);
      const state = await read('', T + 11 * MINUTE);
      expect(state.failing.map((one) => one.key)).toEqual(['k2']);
      expect(state.lastSuccessAt).toBe(T + 11 * MINUTE);
      expect(state.failingSince).toBeUndefined();
      // A failure after the success: failing since then, the key counted afresh.
      await write([failed('k1', T + 12 * MINUTE)]);
      const again = await read('', T + 12 * MINUTE);
      expect(again.failingSince).toBe(T + 12 * MINUTE);
      expect(again.failing.find((one) => one.key === 'k1')?.attemptsSeen).toBe(1);
    });

    it('ignores a late failure of a key that succeeded at or after it, not a failure after its success', async () => {
      // Each process writes its batch at most once a second, and after an outage the notes it
      // kept: a failure answered before a delivery's success may reach the store after it.
      await write([succeeded('late', T + 2000, 'a')]);
      await write([failed('late', T + 1000, 'a'), failed('late', T + 2000, 'a')]);
      const late = await read('a', T + 2000);
      expect(late.failing).toEqual([]);
      expect(late.lastSuccessAt).toBe(T + 2000);
      expect(late.lastAttemptAt).toBe(T + 2000);
      expect(late.failingSince).toBeUndefined();
      // In one batch too, whatever the order of its notes.
      await write([succeeded('same', T + 2000, 'b'), failed('same', T + 1000, 'b')]);
      expect((await read('b', T + 2000)).failing).toEqual([]);
      // In order: the success clears the failure before it.
      await write([failed('cleared', T + 1000, 'c')]);
      await write([succeeded('cleared', T + 2000, 'c')]);
      const cleared = await read('c', T + 2000);
      expect(cleared.failing).toEqual([]);
      expect(cleared.failingSince).toBeUndefined();
      // A failure after the success is a new one: failing again, from it.
      await write([succeeded('again', T + 2000, 'd')]);
      await write([failed('again', T + 3000, 'd')]);
      const again = await read('d', T + 3000);
      expect(again.failing).toEqual([
        {
          key: 'again',
          event: 'PaymentCompleted',
          firstAttemptAt: T + 3000,
          attemptsSeen: 1,
          lastAttemptAt: T + 3000,
        },
      ]);
      expect(again.failingSince).toBe(T + 3000);
      // And a late failure between the success and the new one is still ignored.
      await write([failed('again', T + 1500, 'd')]);
      expect((await read('d', T + 3000)).failing.map((one) => one.attemptsSeen)).toEqual([1]);
    });

    /** Key k1 answered non-2xx at T + 2000, as kept. */
    const failureAt2000 = {
      key: 'k1',
      event: 'PaymentCompleted',
      firstAttemptAt: T + 2000,
      attemptsSeen: 1,
      lastAttemptAt: T + 2000,
    };

    it('clears a key whose failure and later success come in one batch', async () => {
      // A retry answered 2xx within the same second (or the same 1 000 answers) as its failure.
      await write([failed('k1', T), succeeded('k1', T + 1)]);
      const state = await read('', T + 1);
      expect(state.failing).toEqual([]);
      expect(state.failingSince).toBeUndefined();
    });

    it('remembers a late success of a key still failing: a failure before it is ignored', async () => {
      await write([failed('k1', T + 10 * MINUTE)]);
      // A success of an earlier attempt, noted late: k1 fails still (its last attempt came after).
      await write([succeeded('k1', T + 5 * MINUTE)]);
      await write([failed('k1', T + 3 * MINUTE)]);
      const [k1] = (await read('', T + 10 * MINUTE)).failing;
      expect(k1).toMatchObject({ key: 'k1', firstAttemptAt: T + 10 * MINUTE, attemptsSeen: 1 });
    });

    it("reads a tenant in a batch of another tenant's notes", async () => {
      // A watchdog of school-1 reading in the call that writes a process's notes of school-2.
      await write([failed('k1', T, 'school-1')]);
      const state = await read('school-1', T + 1, [failed('k2', T + 1, 'school-2')]);
      expect(state.failing.map((one) => one.key)).toEqual(['k1']);
      expect((await read('school-2', T + 1)).failing.map((one) => one.key)).toEqual(['k2']);
    });

    it('remembers the latest of two successes of a key, whichever came first', async () => {
      // A late failure between them is ignored for its delivery: the key succeeded after it.
      for (const [key, order] of [
        ['k1', [T + 10 * MINUTE, T + MINUTE]],
        ['k2', [T + MINUTE, T + 10 * MINUTE]],
      ] as const) {
        for (const at of order) await write([succeeded(key, at)]);
        await write([failed(key, T + 5 * MINUTE)]);
      }
      expect((await read('', T + 10 * MINUTE)).failing).toEqual([]);
    });

    it('keeps a key failing when a late success of it comes in a batch after a later failure', async () => {
      // A 409 `conflict` at T + 2000 for another body under a key that succeeded at T + 1000,
      // whose success note reaches the store in a later batch: the failure still stands.
      await write([failed('k1', T + 2000)]);
      await write([succeeded('k1', T + 1000)]);
      const late = await read('', T + 2000);
      expect(late.failing).toEqual([failureAt2000]);
      expect(late.failingSince).toBe(T + 2000);
      expect(late.lastSuccessAt).toBe(T + 1000);
      expect(late.lastAttemptAt).toBe(T + 2000);
    });

    it('keeps a key failing when one batch has its failure before an earlier success', async () => {
      await write([failed('k1', T + 2000), succeeded('k1', T + 1000)]);
      const late = await read('', T + 2000);
      expect(late.failing).toEqual([failureAt2000]);
      expect(late.failingSince).toBe(T + 2000);
    });

    it('clears a key with a success at or after its last failure, also after a late success', async () => {
      await write([failed('k1', T + 2000, 'a')]);
      await write([succeeded('k1', T + 1000, 'a')]);
      await write([succeeded('k1', T + 3000, 'a')]);
      const cleared = await read('a', T + 3000);
      expect(cleared.failing).toEqual([]);
      expect(cleared.failingSince).toBeUndefined();
      expect(cleared.lastSuccessAt).toBe(T + 3000);
      // A failure at the success's own time is before it: the success clears it.
      await write([failed('k1', T + 1000, 'b')]);
      await write([succeeded('k1', T + 1000, 'b')]);
      const same = await read('b', T + 1000);
      expect(same.failing).toEqual([]);
      expect(same.failingSince).toBeUndefined();
    });

    it('keeps the failing time after a late success when a failure came after it', async () => {
      // Failures at T and T + 2000 (of other keys), then the note of a success at T + 1000: the
      // tenant fails from T + 2000 on, not since T (before its last success) nor not at all.
      await write([failed('k0', T), failed('k2', T + 2000)]);
      await write([succeeded('k1', T + 1000)]);
      const late = await read('', T + 2000);
      expect(late.failingSince).toBe(T + 2000);
      expect(late.lastSuccessAt).toBe(T + 1000);
      expect(late.lastAttemptAt).toBe(T + 2000);
      // A failure between the success and that one, noted later, is the first after the success.
      await write([failed('k3', T + 1500)]);
      expect((await read('', T + 2000)).failingSince).toBe(T + 1500);
      // An answer without a key counts the same way; and a success after the last failure clears.
      await write([
        { scope: 'b', at: T, ok: false },
        { scope: 'b', at: T + 2000, ok: false },
      ]);
      await write([succeeded('k1', T + 1000, 'b')]);
      expect((await read('b', T + 2000)).failingSince).toBe(T + 2000);
      await write([succeeded('k1', T + 2000, 'b')]);
      expect((await read('b', T + 2000)).failingSince).toBeUndefined();
    });

    it('remembers at most maxFailing successes a tenant, the latest ones', async () => {
      await write([succeeded('k1', T + 1), succeeded('k2', T + 2)], T + 2, 1);
      // k2's success is remembered, k1's (the earlier) is not: k1's late failure counts.
      await write([failed('k1', T), failed('k2', T)], T + 2, 1);
      expect((await read('', T + 2, [], 1)).failing.map((one) => one.key)).toEqual(['k1']);
    });

    it('forgets the earliest successes past maxFailing also when they came in out of order', async () => {
      await write([succeeded('k2', T + 2), succeeded('k1', T + 1)], T + 2, 1);
      // k2's success is the latest, kept though written first: k1's late failure counts, k2's not.
      await write([failed('k1', T), failed('k2', T)], T + 2, 1);
      expect((await read('', T + 2, [], 1)).failing.map((one) => one.key)).toEqual(['k1']);
    });

    it('keeps the last success when an older success arrives later, and a failure before it changes no failing time', async () => {
      await write([succeeded('k1', T + 10 * MINUTE)]);
      await write([succeeded('k0', T), failed('k2', T + 5 * MINUTE)]);
      const state = await read('', T + 10 * MINUTE);
      expect(state.lastSuccessAt).toBe(T + 10 * MINUTE);
      expect(state.lastAttemptAt).toBe(T + 10 * MINUTE);
      expect(state.failingSince).toBeUndefined();
      expect(state.failing.map((one) => one.key)).toEqual(['k2']);
    });

    it('counts an answer without a key (a bad signature) in the failing time, not among the deliveries', async () => {
      await write([{ scope: '', at: T, ok: false }]);
      const state = await read();
      expect(state.failingSince).toBe(T);
      expect(state.lastAttemptAt).toBe(T);
      expect(state.failing).toEqual([]);
    });

    it('forgets a delivery whose first attempt is older than keepMs, on a write and on a read', async () => {
      await write([failed('old', T), failed('young', T + 1)]);
      // now - keepMs is T + 1: `old` (first at T) is past it, `young` (first at T + 1) is not.
      expect((await read('', T + 1 + RETRY_SPAN)).failing.map((one) => one.key)).toEqual(['young']);
      await write([failed('other', T + 2 + RETRY_SPAN)], T + 2 + RETRY_SPAN);
      expect((await read('', T + 2 + RETRY_SPAN)).failing.map((one) => one.key)).toEqual(['other']);
    });

    it("keeps a quiet tenant's last success and failing time past keepMs and the disable span, not its failing deliveries", async () => {
      // An endpoint that hears nothing more: the watchdog must still tell when the platform
      // disables it (14 days after its last success) and since when it fails.
      await write([succeeded('k0', T, 'quiet'), failed('k1', T + MINUTE, 'quiet')]);
      if (expiresOnServer) {
        const lifetimes = await current!.lifetimes!('quiet');
        expect(lifetimes.summary).toBeGreaterThan(DISABLE_SPAN);
        expect(lifetimes.failing.length).toBeGreaterThan(0);
        for (const ms of lifetimes.failing) expect(ms).toBeLessThanOrEqual(RETRY_SPAN);
      }
      const state = await read('quiet', T + MINUTE + RETRY_SPAN + HOUR);
      expect(state).toEqual({
        lastSuccessAt: T,
        lastAttemptAt: T + MINUTE,
        failingSince: T + MINUTE,
        failing: [],
      });
    });

    if (expiresOnServer) {
      it("drops a tenant's failing deliveries on the server keepMs after its last write, and keeps its summary", async () => {
        // Real expiry on the server: keepMs of 300 ms, read after 800 ms at the same `now`, so
        // only the server's expiry (not a prune by `now`) can forget the failing delivery.
        const keepMs = 300;
        const notes = [succeeded('k0', T, 'quiet'), failed('k1', T + 1, 'quiet')];
        await watch({ notes, keepMs, keepSummaryMs, maxFailing: 10, now: T + 1 });
        await new Promise((resolve) => setTimeout(resolve, 800));
        const lifetimes = await current!.lifetimes!('quiet');
        expect(lifetimes.failing).toEqual([]);
        expect(lifetimes.summary).toBeGreaterThan(DISABLE_SPAN);
        const state = await watch({
          notes: [],
          keepMs,
          keepSummaryMs,
          maxFailing: 10,
          now: T + 1,
          read: 'quiet',
        });
        expect(state).toEqual({
          lastSuccessAt: T,
          lastAttemptAt: T + 1,
          failingSince: T + 1,
          failing: [],
        });
      });
    }

    it('keeps at most maxFailing deliveries a tenant, dropping the oldest first attempts', async () => {
      const notes = [4, 0, 3, 1, 2].map((n) => failed(`k${n}`, T + n * MINUTE));
      await write(notes, T + 4 * MINUTE, 3);
      // Retried later: a retry does not make a delivery younger.
      await write([failed('k2', T + 20 * MINUTE)], T + 20 * MINUTE, 3);
      const state = await read('', T + 20 * MINUTE, [], 3);
      expect(state.failing.map((one) => one.key)).toEqual(['k2', 'k3', 'k4']);
      expect(state.failing.map((one) => one.firstAttemptAt)).toEqual([
        T + 2 * MINUTE,
        T + 3 * MINUTE,
        T + 4 * MINUTE,
      ]);
    });

    it('keeps a delivery forgotten past maxFailing forgotten, when a younger one succeeds', async () => {
      await write([failed('k0', T), failed('k1', T + MINUTE)], T + MINUTE, 2);
      // k0 and k1 are forgotten here: two younger ones take their places.
      await write([failed('k2', T + 2 * MINUTE), failed('k3', T + 3 * MINUTE)], T + 3 * MINUTE, 2);
      await write([succeeded('k3', T + 4 * MINUTE)], T + 4 * MINUTE, 2);
      const state = await read('', T + 4 * MINUTE, [], 2);
      expect(state.failing.map((one) => one.key)).toEqual(['k2']);
    });

    it('keeps tenants apart, including tenants that differ only in a lone surrogate or U+0000', async () => {
      const long = 'school-'.repeat(800);
      const tenants = [
        '',
        'a',
        'a\ud800',
        'a\udc00',
        'a\u0000',
        'a\u0000b',
        `${long}1`,
        `${long}2`,
      ];
      await write(tenants.map((tenant, i) => failed(`key-${i}`, T + i, tenant)));
      await write([succeeded('x', T + 100, 'a')]);
      for (const [i, tenant] of tenants.entries()) {
        const state = await read(tenant, T + 100);
        expect(state.failing.map((one) => one.key)).toEqual([`key-${i}`]);
        expect(state.failingSince).toBe(tenant === 'a' ? undefined : T + i);
        expect(state.lastSuccessAt).toBe(tenant === 'a' ? T + 100 : undefined);
      }
    });

    it('gives back each key and event as they came: lone surrogates, U+0000, "|", very long', async () => {
      const keys = ['k\ud800', 'k\udc00', 'k\u0000', 'k|1|2|', `k${'é'.repeat(3000)}`];
      await write(
        keys.map((key, i) => ({ scope: '', at: T + i, ok: false, key, event: `Ev\ud800|${i}` })),
      );
      const state = await read('', T + keys.length);
      expect(state.failing.map((one) => [one.key, one.event])).toEqual(
        keys.map((key, i) => [key, `Ev\ud800|${i}`]),
      );
      // One success clears its key only, not one of the same UTF-8 (U+FFFD) form.
      await write([succeeded('k\ud800', T + 10)]);
      const after = await read('', T + 10);
      expect(after.failing.map((one) => one.key)).toEqual(keys.slice(1));
    });

    // Declared only for a store that is not the reference: memoryStore would be compared with itself.
    if (!reference) {
      it('keeps, for any notes in any batches, what the reference steps keep', async () => {
        await fc.assert(
          fc.asyncProperty(batchesOfNotes, async ({ batches, maxFailing }) => {
            const reference = new MemoryWatch();
            const under = await makeStore();
            try {
              for (const { notes, now } of batches) {
                const batch = { notes, keepMs: HOUR, keepSummaryMs, maxFailing, now };
                reference.watch(batch);
                await under.store.watch!(batch);
                for (const scope of SCOPES) {
                  const reading = { ...batch, notes: [], read: scope };
                  expect(await under.store.watch!(reading)).toEqual(reference.watch(reading));
                }
              }
            } finally {
              await under.cleanup();
            }
          }),
          { numRuns: 40 },
        );
      });
    }
  });
}

/** The tenants of {@link batchesOfNotes}. */
const SCOPES = ['', 'school-2'];

/**
 * Batches of notes of a few keys in two tenants, each note at a time of its own (so no order
 * between two of one time is left to a store), out of order within and across batches, over
 * more than keepMs; and a maxFailing some batches exceed.
 */
const batchesOfNotes = fc
  .record({
    times: fc.uniqueArray(fc.integer({ min: 0, max: 2 * HOUR }), { minLength: 1, maxLength: 40 }),
    maxFailing: fc.integer({ min: 1, max: 6 }),
  })
  .chain(({ times, maxFailing }) =>
    fc.record({
      maxFailing: fc.constant(maxFailing),
      notes: fc.tuple(
        ...times.map((offset) =>
          fc.record({
            scope: fc.constantFrom(...SCOPES),
            at: fc.constant(T + offset),
            ok: fc.boolean(),
            key: fc.option(fc.constantFrom('k1', 'k2', 'k3', 'k4', 'k5'), { nil: undefined }),
            event: fc.constant('PaymentCompleted'),
          }),
        ),
      ),
      cuts: fc.array(fc.integer({ min: 1, max: times.length }), { maxLength: 5 }),
    }),
  )
  .map(({ maxFailing, notes, cuts }) => {
    const ends = [...new Set([...cuts, notes.length])].sort((a, b) => a - b);
    let from = 0;
    let now = T;
    const batches = ends.map((to) => {
      const slice: AnswerNote[] = notes.slice(from, to);
      from = to;
      now = Math.max(now, ...slice.map((note) => note.at));
      return { notes: slice, now };
    });
    return { batches, maxFailing };
  });
