/**
 * memoryStore's entity versions (the ordering guard) as time passes: a version is remembered for
 * its ttl and no longer, a lease holds for its leaseMs and no longer, a claim whose lease ran out
 * leaves its version standing (it may have been applied) and settles nothing more, a version
 * taken again is remembered from then, and a released claim gives the entity the version it had;
 * and the bound of its generations on an odd `max`.
 */

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { memoryStore } from '../../src/stores/memory.js';
import type { Claim, HeldClaim, IdempotencyStore } from '../../src/stores/types.js';
import { heldOf, requestFor } from './contract.js';

const ENTITY = '~["entity",null,"progress:1:2:3"]';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Claims of fresh keys for one entity of `store`. */
function entities(store: IdempotencyStore) {
  const request = (versionMs: number, leaseMs = 60_000, ttlMs = 60_000) =>
    requestFor(randomUUID(), { leaseMs, version: { entity: ENTITY, versionMs, ttlMs } });
  return {
    claim: (versionMs: number, leaseMs?: number, ttlMs?: number): Promise<Claim> =>
      store.claim(request(versionMs, leaseMs, ttlMs)),
    /** What a claim at `versionMs` answers now: taken (and given back), superseded, or in flight. */
    async probe(versionMs: number): Promise<'taken' | 'superseded' | 'in_flight'> {
      const answer = await store.claim(request(versionMs));
      if (answer.state !== 'claimed') return 'in_flight';
      await store.settle(answer, 'release');
      return answer.superseded ? 'superseded' : 'taken';
    },
    complete: (claim: Claim) => store.settle(heldOf(claim), 'complete'),
    release: (claim: Claim) => store.settle(heldOf(claim), 'release'),
  };
}

describe('memoryStore entity versions over time', () => {
  it('remembers a version for its ttl only: an older state after it is no longer superseded', async () => {
    const entity = entities(memoryStore());
    await entity.complete(await entity.claim(200, 60_000, 20));
    expect(await entity.probe(100)).toBe('superseded');
    await sleep(40);
    expect(await entity.probe(100)).toBe('taken');
  });

  it('holds a lease for its leaseMs only: then another delivery takes the entity', async () => {
    const entity = entities(memoryStore());
    heldOf(await entity.claim(100, 20));
    expect(await entity.probe(150)).toBe('in_flight');
    await sleep(40);
    expect(await entity.probe(150)).toBe('taken');
  });

  it('keeps the version of a claim whose lease ran out, and lets its late completion change nothing', async () => {
    const entity = entities(memoryStore());
    const late = heldOf(await entity.claim(300, 20));
    await sleep(40);
    // 300 may have been applied: an older state no longer runs.
    expect(await entity.probe(100)).toBe('superseded');
    const taker = await entity.claim(400);
    await entity.release(late);
    await entity.complete(late);
    // The taker still holds the entity.
    expect(await entity.probe(500)).toBe('in_flight');
    await entity.release(taker);
    // Released: back to 300, not before it.
    expect(await entity.probe(299)).toBe('superseded');
    expect(await entity.probe(300)).toBe('taken');
  });

  it('keeps the entity held while a lease holds, even past the version it had', async () => {
    const entity = entities(memoryStore());
    await entity.complete(await entity.claim(100, 60_000, 20));
    heldOf(await entity.claim(200, 60_000));
    await sleep(40);
    // 100 is forgotten, the lease is not: 150 waits (it is newer than what was applied).
    expect(await entity.probe(150)).toBe('in_flight');
  });

  it('remembers a version taken again from then on', async () => {
    const entity = entities(memoryStore());
    await entity.complete(await entity.claim(100, 60_000, 30));
    await sleep(15);
    // The same state again (not superseded), recorded for longer.
    await entity.complete(await entity.claim(100, 60_000, 60_000));
    await sleep(30);
    expect(await entity.probe(50)).toBe('superseded');
  });

  it('records an older version once the newer one was forgotten', async () => {
    const entity = entities(memoryStore());
    await entity.complete(await entity.claim(200, 60_000, 20));
    await sleep(40);
    await entity.complete(await entity.claim(100));
    expect(await entity.probe(50)).toBe('superseded');
    expect(await entity.probe(150)).toBe('taken');
  });

  it('gives back no forgotten version when a claim taken after it is released', async () => {
    const entity = entities(memoryStore());
    await entity.complete(await entity.claim(200, 60_000, 20));
    await sleep(40);
    await entity.release(await entity.claim(300));
    // 200 was forgotten before the claim: nothing is given back.
    expect(await entity.probe(100)).toBe('taken');
  });

  it('keeps the version it had when a later delivery is released', async () => {
    const entity = entities(memoryStore());
    await entity.complete(await entity.claim(200));
    await entity.release(await entity.claim(300));
    expect(await entity.probe(100)).toBe('superseded');
    expect(await entity.probe(300)).toBe('taken');
  });

  it('settles a superseded claim without touching the entity', async () => {
    const entity = entities(memoryStore());
    await entity.complete(await entity.claim(200));
    const held = heldOf(await entity.claim(500));
    const superseded: HeldClaim = heldOf(await entity.claim(100));
    expect(superseded.superseded).toBe(true);
    await entity.release(superseded);
    await entity.complete(superseded);
    expect(await entity.probe(600)).toBe('in_flight');
    await entity.release(held);
    expect(await entity.probe(199)).toBe('superseded');
  });
});

describe('memoryStore never holds more than max keys', () => {
  it('holds at most 3 of a thousand keys with max 3 (an odd max: the two generations together)', async () => {
    const held = async (probe: string) => {
      const store = memoryStore({ max: 3 });
      for (let i = 0; i < 1_000; i++) await store.claim(requestFor(`k${i}`));
      // One look-up per store: a look-up may move keys between generations.
      return (await store.claim(requestFor(probe))).state === 'in_flight';
    };
    const probes = Array.from({ length: 10 }, (_, n) => `k${999 - n}`);
    const kept: string[] = [];
    for (const probe of probes) if (await held(probe)) kept.push(probe);
    expect(kept.length).toBeGreaterThanOrEqual(1);
    expect(kept.length).toBeLessThanOrEqual(3);
    expect(kept).toContain('k999');
  });
});
