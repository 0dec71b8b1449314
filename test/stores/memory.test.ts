import { describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { memoryStore } from '../../src/stores/memory.js';
import type { IdempotencyStore } from '../../src/stores/types.js';
import { describeStoreContract, heldOf, requestFor } from './contract.js';

/** `key` claimed in `store`: its claim. */
const claimed = async (store: IdempotencyStore, key: string, leaseMs = 60_000) =>
  heldOf(await store.claim(requestFor(key, { leaseMs })));
/** What a claim of `key` answers now. */
const claimOf = (store: IdempotencyStore, key: string) =>
  store.claim(requestFor(key, { leaseMs: 60_000 }));
const IN_FLIGHT = { state: 'in_flight', held: 'key' };

describeStoreContract('memoryStore', async () => ({
  store: memoryStore(),
  cleanup: async () => {},
}));

describe('memoryStore checks and sets in one synchronous step', () => {
  it('answers a second claim made in the same tick as the first: in flight', async () => {
    const store = memoryStore();
    const first = store.claim(requestFor('k'));
    const second = store.claim(requestFor('k'));
    expect((await first).state).toBe('claimed');
    expect(await second).toEqual(IN_FLIGHT);
    await store.settle(heldOf(await first), 'complete');
    expect(await claimOf(store, 'k')).toEqual({ state: 'done', fingerprint: 'fp' });
  });

  it('is used through what a copy or a wrapper overrides', async () => {
    const store = memoryStore();
    const seen: string[] = [];
    const wrapped: IdempotencyStore = {
      ...store,
      claim: (request) => (seen.push(request.key), store.claim(request)),
    };
    await wrapped.claim(requestFor('w'));
    expect(seen).toEqual(['w']);
  });
});

describe('memoryStore keeps at most max keys', () => {
  it('drops the older generation whole when the newer one fills, never a key used since', async () => {
    // max 4: two generations of two keys.
    const store = memoryStore({ max: 4 });
    const a = await claimed(store, 'a');
    await claimed(store, 'b');
    // 'c' finds the newer generation full: 'a' and 'b' become the older one.
    await claimed(store, 'c');
    // Completing 'a' uses it: it moves back into the newer generation, beside 'c'.
    await store.settle(a, 'complete');
    // 'd' finds it full again: 'c' and 'a' become the older generation and 'b' is dropped.
    await claimed(store, 'd');
    expect(await claimOf(store, 'a')).toEqual({ state: 'done', fingerprint: 'fp' });
    expect(await claimOf(store, 'd')).toEqual(IN_FLIGHT);
    expect(await claimOf(store, 'b')).toMatchObject({ state: 'claimed' });
  });

  it('lets a looked-up key outlive keys claimed before the look-up', async () => {
    const store = memoryStore({ max: 2 });
    await claimed(store, 'old');
    await claimed(store, 'newer');
    // A resend of 'old' finds it in flight in the older generation and moves it to the newer.
    expect(await claimOf(store, 'old')).toEqual(IN_FLIGHT);
    await claimed(store, 'newest');
    expect(await claimOf(store, 'old')).toEqual(IN_FLIGHT);
    expect(await claimOf(store, 'newer')).toMatchObject({ state: 'claimed' });
  });

  /** A store of `max` keys after claims of k0 to k999, in that order. */
  const thousandClaimed = async (max = 100) => {
    const store = memoryStore({ max });
    for (let i = 0; i < 1_000; i++) await claimed(store, `k${i}`);
    return store;
  };

  it.each([100, 101, 3])(
    'never holds more than max (%i) keys, and keeps the last max / 2',
    async (max) => {
      const store = await thousandClaimed(max);
      // The newest half of max is kept (looked up newest first, these look-ups drop nothing).
      for (let i = 999; i >= 1_000 - Math.floor(max / 2); i--) {
        expect(await claimOf(store, `k${i}`), `k${i}`).toEqual(IN_FLIGHT);
      }
      // Every key before the last max is gone: each is claimed afresh.
      for (let i = 0; i < 1_000 - max; i++) {
        expect(await claimOf(store, `k${i}`), `k${i}`).toMatchObject({ state: 'claimed' });
      }
    },
  );

  it.each([1, 2, 3, 4, 7, 100, 101])('keeps the first max (%i) keys all', async (max) => {
    const firstMax = async () => {
      const store = memoryStore({ max });
      for (let i = 0; i < max; i++) await claimed(store, `k${i}`);
      return store;
    };
    // One look-up per store: a look-up moves its key, and may drop the rest of the older
    // generation when the newer one is full (the next test).
    for (let i = 0; i < max; i++) {
      expect(await claimOf(await firstMax(), `k${i}`), `k${i}`).toEqual(IN_FLIGHT);
    }
    expect(await claimOf(await firstMax(), 'other')).toMatchObject({ state: 'claimed' });
  });

  it('keeps at least the last max / 2 keys, and the older generation until a look-up fills the newer', async () => {
    const store = await thousandClaimed();
    // k950 to k999 are the newer generation: looking them up moves nothing.
    for (let i = 999; i >= 950; i--) {
      expect(await claimOf(store, `k${i}`), `k${i}`).toEqual(IN_FLIGHT);
    }
    // k900 to k949 are the older one: k949 moves to a full newer generation, which becomes
    // the older one, and the rest of k900 to k948 go with the generation they were in.
    expect(await claimOf(store, 'k949')).toEqual(IN_FLIGHT);
    expect(await claimOf(store, 'k999')).toEqual(IN_FLIGHT);
    expect(await claimOf(store, 'k948')).toMatchObject({ state: 'claimed' });
  });

  it('keeps one key with max 1', async () => {
    const store = memoryStore({ max: 1 });
    await claimed(store, 'a');
    await claimed(store, 'b');
    expect(await claimOf(store, 'b')).toEqual(IN_FLIGHT);
    expect(await claimOf(store, 'a')).toMatchObject({ state: 'claimed' });
    expect(await claimOf(store, 'b')).toMatchObject({ state: 'claimed' });
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses max %s with a ConfigError',
    async (max) => {
      expect(() => memoryStore({ max })).toThrow(ConfigError);
      expect(() => memoryStore({ max })).toThrow(/max must be a positive integer/);
    },
  );
});

describe('memoryStore expiry', () => {
  it('drops an expired lease when the key is next claimed, and its old claim owns nothing', async () => {
    const store = memoryStore();
    const first = await claimed(store, 'k', 20);
    await new Promise((resolve) => setTimeout(resolve, 40));
    const second = await claimed(store, 'k');
    await store.settle(first, 'complete');
    await store.settle(first, 'release');
    expect(await claimOf(store, 'k')).toEqual(IN_FLIGHT);
    await store.settle(second, 'complete');
    expect(await claimOf(store, 'k')).toEqual({ state: 'done', fingerprint: 'fp' });
  });

  it('forgets an expired key of the older generation instead of moving it', async () => {
    const store = memoryStore({ max: 2 });
    const k = await claimed(store, 'k', 20);
    const other = heldOf(await store.claim(requestFor('other', { ttlMs: 20 })));
    await store.settle(other, 'complete');
    await new Promise((resolve) => setTimeout(resolve, 40));
    // 'other' (in the newer generation) and 'k' (in the older one, since 'other' came) expired.
    await store.settle(k, 'complete');
    expect(await claimOf(store, 'k')).toMatchObject({ state: 'claimed' });
    expect(await claimOf(store, 'other')).toMatchObject({ state: 'claimed' });
  });

  it('does not complete a key whose lease ran out, even if no one claimed it since', async () => {
    const store = memoryStore();
    const late = await claimed(store, 'k', 20);
    await new Promise((resolve) => setTimeout(resolve, 40));
    await store.settle(late, 'complete');
    expect(await claimOf(store, 'k')).toMatchObject({ state: 'claimed' });
  });
});

describe('memoryStore arms no timer', () => {
  it('claims, settles and peeks without a timer, so a delivery pays for none', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'setImmediate'] });
    try {
      const store = memoryStore();
      for (let i = 0; i < 3; i++) {
        const claim = await store.claim(
          requestFor(`k${i}`, { records: [`r${i}`], version: { entity: `e${i}`, versionMs: i } }),
        );
        await store.settle(heldOf(claim), 'complete');
        await store.claim(requestFor(`k${i}`));
        await store.settle(heldOf(await store.claim(requestFor(`x${i}`))), 'release');
        await store.peek([`k${i}`, `r${i}`]);
      }
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
