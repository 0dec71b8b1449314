import { describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { memoryStore } from '../../src/stores/memory.js';
import { describeStoreContract } from './contract.js';

describeStoreContract('memoryStore', async () => ({
  store: memoryStore(),
  cleanup: async () => {},
}));

describe('memoryStore answers without a promise', () => {
  it('claims, completes and releases in one synchronous step each', () => {
    const store = memoryStore();
    const claim = store.claim('k', 60_000);
    expect(claim).toEqual({ state: 'claimed', token: expect.any(String) });
    // Check and set in one step: a second claim of the same key sees the first at once.
    expect(store.claim('k', 60_000)).toEqual({ state: 'in_flight' });
    const { token } = claim as { token: string };
    expect(store.complete('k', token, 60_000, 'f1')).toBeUndefined();
    expect(store.claim('k', 60_000)).toEqual({ state: 'done', fingerprint: 'f1' });
  });

  it('is used through what a copy or a wrapper overrides', async () => {
    const store = memoryStore();
    const seen: string[] = [];
    const wrapped = {
      ...store,
      claim: (key: string, leaseMs: number) => (seen.push(key), store.claim(key, leaseMs)),
    };
    const receiverStore: typeof store = wrapped;
    await receiverStore.claim('w', 60_000);
    expect(seen).toEqual(['w']);
  });
});

describe('memoryStore keeps at most max keys', () => {
  const claimed = (store: ReturnType<typeof memoryStore>, key: string) =>
    (store.claim(key, 60_000) as { token: string }).token;

  it('drops the older generation whole when the newer one fills, never a key used since', () => {
    // max 4: two generations of two keys.
    const store = memoryStore({ max: 4 });
    const a = claimed(store, 'a');
    claimed(store, 'b');
    // 'c' finds the newer generation full: 'a' and 'b' become the older one.
    claimed(store, 'c');
    // Completing 'a' uses it: it moves back into the newer generation, beside 'c'.
    store.complete('a', a, 60_000, 'fa');
    // 'd' finds it full again: 'c' and 'a' become the older generation and 'b' is dropped.
    claimed(store, 'd');
    expect(store.claim('a', 60_000)).toEqual({ state: 'done', fingerprint: 'fa' });
    expect(store.claim('d', 60_000)).toEqual({ state: 'in_flight' });
    expect(store.claim('b', 60_000)).toMatchObject({ state: 'claimed' });
  });

  it('lets a looked-up key outlive keys claimed before the look-up', () => {
    const store = memoryStore({ max: 2 });
    claimed(store, 'old');
    claimed(store, 'newer');
    // A resend of 'old' finds it in flight in the older generation and moves it to the newer.
    expect(store.claim('old', 60_000)).toEqual({ state: 'in_flight' });
    claimed(store, 'newest');
    expect(store.claim('old', 60_000)).toEqual({ state: 'in_flight' });
    expect(store.claim('newer', 60_000)).toMatchObject({ state: 'claimed' });
  });

  /** A store of `max` keys after claims of k0 to k999, in that order. */
  const thousandClaimed = (max = 100) => {
    const store = memoryStore({ max });
    for (let i = 0; i < 1_000; i++) claimed(store, `k${i}`);
    return store;
  };

  it.each([100, 101, 3])(
    'never holds more than max (%i) keys, and keeps the last max / 2',
    (max) => {
      const store = thousandClaimed(max);
      // The newest half of max is kept (looked up newest first, these look-ups drop nothing).
      for (let i = 999; i >= 1_000 - Math.floor(max / 2); i--) {
        expect(store.claim(`k${i}`, 60_000), `k${i}`).toEqual({ state: 'in_flight' });
      }
      // Every key before the last max is gone: each is claimed afresh.
      for (let i = 0; i < 1_000 - max; i++) {
        expect(store.claim(`k${i}`, 60_000), `k${i}`).toMatchObject({ state: 'claimed' });
      }
    },
  );

  it.each([1, 2, 3, 4, 7, 100, 101])('keeps the first max (%i) keys all', (max) => {
    const firstMax = () => {
      const store = memoryStore({ max });
      for (let i = 0; i < max; i++) claimed(store, `k${i}`);
      return store;
    };
    // One look-up per store: a look-up moves its key, and may drop the rest of the older
    // generation when the newer one is full (the next test).
    for (let i = 0; i < max; i++) {
      expect(firstMax().claim(`k${i}`, 60_000), `k${i}`).toEqual({ state: 'in_flight' });
    }
    expect(firstMax().claim('other', 60_000)).toMatchObject({ state: 'claimed' });
  });

  it('keeps at least the last max / 2 keys, and the older generation until a look-up fills the newer', () => {
    const store = thousandClaimed();
    // k950 to k999 are the newer generation: looking them up moves nothing.
    for (let i = 999; i >= 950; i--) {
      expect(store.claim(`k${i}`, 60_000), `k${i}`).toEqual({ state: 'in_flight' });
    }
    // k900 to k949 are the older one: k949 moves to a full newer generation, which becomes
    // the older one, and the rest of k900 to k948 go with the generation they were in.
    expect(store.claim('k949', 60_000)).toEqual({ state: 'in_flight' });
    expect(store.claim('k999', 60_000)).toEqual({ state: 'in_flight' });
    expect(store.claim('k948', 60_000)).toMatchObject({ state: 'claimed' });
  });

  it('keeps one key with max 1', () => {
    const store = memoryStore({ max: 1 });
    claimed(store, 'a');
    claimed(store, 'b');
    expect(store.claim('b', 60_000)).toEqual({ state: 'in_flight' });
    expect(store.claim('a', 60_000)).toMatchObject({ state: 'claimed' });
    expect(store.claim('b', 60_000)).toMatchObject({ state: 'claimed' });
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses max %s with a ConfigError',
    (max) => {
      expect(() => memoryStore({ max })).toThrow(ConfigError);
      expect(() => memoryStore({ max })).toThrow(/max must be a positive integer/);
    },
  );
});

describe('memoryStore expiry', () => {
  it('drops an expired lease when the key is next claimed, and its old token owns nothing', async () => {
    const store = memoryStore();
    const first = (store.claim('k', 20) as { token: string }).token;
    await new Promise((resolve) => setTimeout(resolve, 40));
    const second = store.claim('k', 60_000) as { state: 'claimed'; token: string };
    expect(second.state).toBe('claimed');
    store.complete('k', first, 60_000, 'stale');
    store.release('k', first);
    expect(store.claim('k', 60_000)).toEqual({ state: 'in_flight' });
    store.complete('k', second.token, 60_000, 'fresh');
    expect(store.claim('k', 60_000)).toEqual({ state: 'done', fingerprint: 'fresh' });
  });

  it('forgets an expired key of the older generation instead of moving it', async () => {
    const store = memoryStore({ max: 2 });
    const token = (store.claim('k', 20) as { token: string }).token;
    const other = (store.claim('other', 60_000) as { token: string }).token;
    store.complete('other', other, 20, 'f');
    await new Promise((resolve) => setTimeout(resolve, 40));
    // 'other' (in the newer generation) and 'k' (in the older one, since 'other' came) expired.
    store.complete('k', token, 60_000, 'late');
    expect(store.claim('k', 60_000)).toMatchObject({ state: 'claimed' });
    expect(store.claim('other', 60_000)).toMatchObject({ state: 'claimed' });
  });

  it('does not complete a key whose lease ran out, even if no one claimed it since', async () => {
    const store = memoryStore();
    const token = (store.claim('k', 20) as { token: string }).token;
    await new Promise((resolve) => setTimeout(resolve, 40));
    store.complete('k', token, 60_000, 'late');
    expect(store.claim('k', 60_000)).toMatchObject({ state: 'claimed' });
  });
});

describe('memoryStore arms no timer', () => {
  it('claims, completes and releases without a timer, so a delivery pays for none', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'setImmediate'] });
    try {
      const store = memoryStore();
      for (let i = 0; i < 3; i++) {
        const { token } = store.claim(`k${i}`, 60_000) as { token: string };
        store.complete(`k${i}`, token, 60_000, 'f');
        store.claim(`k${i}`, 60_000);
        const again = store.claim(`r${i}`, 60_000) as { token: string };
        store.release(`r${i}`, again.token);
      }
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
