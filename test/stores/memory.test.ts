import { describe, expect, it } from 'vitest';
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
