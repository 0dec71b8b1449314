import { describe, expect, it } from 'vitest';
import { memoryStore, syncFaceOf } from '../../src/stores/memory.js';
import { describeStoreContract } from './contract.js';

describeStoreContract('memoryStore', async () => ({
  store: memoryStore(),
  cleanup: async () => {},
}));

describe('memoryStore’s synchronous face', () => {
  it('is found for the store itself and acts on the same keys', async () => {
    const store = memoryStore();
    const sync = syncFaceOf(store);
    expect(sync).toBeDefined();
    const claim = sync!.claim('k', 60_000);
    expect(claim.state).toBe('claimed');
    expect(await store.claim('k', 60_000)).toEqual({ state: 'in_flight' });
  });

  it('is not found for a copy or a wrapper, so what they override is used', () => {
    const store = memoryStore();
    expect(syncFaceOf({ ...store })).toBeUndefined();
    expect(syncFaceOf({ ...store, claim: store.claim })).toBeUndefined();
  });
});
