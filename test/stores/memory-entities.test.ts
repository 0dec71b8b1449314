/**
 * memoryStore's entity versions (the ordering guard's `claimEntity`, `completeEntity`,
 * `releaseEntity`) as time passes: a version is remembered for its ttl and no longer, a lease
 * holds for its leaseMs and no longer, a delivery whose lease ran out cannot record anything, a
 * version recorded again is remembered from then, and a released entity keeps the version it had;
 * and the bound of its generations on an odd `max`.
 */

import { describe, expect, it } from 'vitest';
import { memoryStore } from '../../src/stores/memory.js';
import type { ClaimResult, EntityClaimResult, IdempotencyStore } from '../../src/stores/types.js';

const HELD = { key: 'k', token: 't' };
const ENTITY = '~["entity",null,"progress:1:2:3"]';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The store's entity methods (memoryStore has them). */
function entities(store: IdempotencyStore) {
  return {
    claim: (versionMs: number, leaseMs = 60_000) =>
      store.claimEntity!(ENTITY, versionMs, leaseMs, HELD) as EntityClaimResult,
    complete: (token: string, versionMs: number, ttlMs = 60_000) =>
      store.completeEntity!(ENTITY, token, versionMs, ttlMs),
    release: (token: string) => store.releaseEntity!(ENTITY, token),
  };
}

function tokenOf(answer: EntityClaimResult): string {
  if (answer.state !== 'claimed') throw new Error(`expected a claim, got ${answer.state}`);
  return answer.token;
}

describe('memoryStore entity versions over time', () => {
  it('remembers a version for its ttl only: an older state after it is no longer superseded', async () => {
    const entity = entities(memoryStore());
    entity.complete(tokenOf(entity.claim(200)), 200, 20);
    expect(entity.claim(100)).toEqual({ state: 'superseded' });
    await sleep(40);
    expect(entity.claim(100)).toMatchObject({ state: 'claimed' });
  });

  it('holds a lease for its leaseMs only: then another delivery takes the entity', async () => {
    const entity = entities(memoryStore());
    tokenOf(entity.claim(100, 20));
    expect(entity.claim(150)).toEqual({ state: 'in_flight' });
    await sleep(40);
    expect(entity.claim(150)).toMatchObject({ state: 'claimed' });
  });

  it('records nothing for a delivery whose lease ran out', async () => {
    const entity = entities(memoryStore());
    const late = tokenOf(entity.claim(300, 20));
    await sleep(40);
    entity.complete(late, 300);
    // 300 was never recorded: an older state still runs.
    expect(entity.claim(100)).toMatchObject({ state: 'claimed' });
  });

  it('keeps the entity held while a lease holds, even past the version it had', async () => {
    const entity = entities(memoryStore());
    entity.complete(tokenOf(entity.claim(100)), 100, 20);
    tokenOf(entity.claim(200, 60_000));
    await sleep(40);
    // The version's ttl passed, the lease did not: the entity is still held.
    expect(entity.claim(250)).toEqual({ state: 'in_flight' });
  });

  it('remembers a version recorded again from then on', async () => {
    const entity = entities(memoryStore());
    entity.complete(tokenOf(entity.claim(100)), 100, 30);
    await sleep(15);
    // The same state again (not superseded), recorded for longer.
    entity.complete(tokenOf(entity.claim(100)), 100, 60_000);
    await sleep(30);
    expect(entity.claim(50)).toEqual({ state: 'superseded' });
  });

  it('records an older version once the newer one was forgotten', async () => {
    const entity = entities(memoryStore());
    entity.complete(tokenOf(entity.claim(200)), 200, 20);
    await sleep(40);
    entity.complete(tokenOf(entity.claim(100)), 100, 60_000);
    expect(entity.claim(50)).toEqual({ state: 'superseded' });
  });

  it('supersedes nothing by a forgotten version while a lease keeps the entity', async () => {
    const entity = entities(memoryStore());
    entity.complete(tokenOf(entity.claim(200)), 200, 20);
    tokenOf(entity.claim(300, 60_000));
    await sleep(40);
    // 200 is forgotten; the entity is held by 300's delivery: in flight, not superseded.
    expect(entity.claim(100)).toEqual({ state: 'in_flight' });
  });

  it('records nothing for a late completion while the entity lives on by its version', async () => {
    const entity = entities(memoryStore());
    entity.complete(tokenOf(entity.claim(100)), 100, 60_000);
    const late = tokenOf(entity.claim(200, 20));
    await sleep(40);
    entity.complete(late, 200);
    // Only 100 is recorded: 150 is newer and runs.
    expect(entity.claim(150)).toMatchObject({ state: 'claimed' });
  });

  it('frees a lease that ran out while the entity lives on by its version', async () => {
    const entity = entities(memoryStore());
    entity.complete(tokenOf(entity.claim(100)), 100, 60_000);
    tokenOf(entity.claim(200, 20));
    await sleep(40);
    expect(entity.claim(250)).toMatchObject({ state: 'claimed' });
  });

  it('keeps the version it had when a later delivery is released', () => {
    const entity = entities(memoryStore());
    entity.complete(tokenOf(entity.claim(200)), 200);
    entity.release(tokenOf(entity.claim(300)));
    expect(entity.claim(100)).toEqual({ state: 'superseded' });
    expect(entity.claim(300)).toMatchObject({ state: 'claimed' });
  });
});

describe('memoryStore never holds more than max keys', () => {
  it('holds at most 3 of a thousand keys with max 3 (an odd max: the two generations together)', () => {
    const held = (probe: string) => {
      const store = memoryStore({ max: 3 });
      for (let i = 0; i < 1_000; i++) store.claim(`k${i}`, 60_000);
      // One look-up per store: a look-up may move keys between generations.
      return (store.claim(probe, 60_000) as ClaimResult).state === 'in_flight';
    };
    const kept = Array.from({ length: 10 }, (_, n) => `k${999 - n}`).filter(held);
    expect(kept.length).toBeGreaterThanOrEqual(1);
    expect(kept.length).toBeLessThanOrEqual(3);
    expect(kept).toContain('k999');
  });
});
