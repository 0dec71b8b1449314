/**
 * The `watch` contract (test/stores/watch-contract.ts) on a Redis Cluster, where a script touches
 * one hash slot only: a batch of several tenants is one script a tenant, each on its node.
 */

import { randomUUID } from 'node:crypto';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisStore } from '../../src/stores/redis.js';
import { startRedisCluster, type RedisClusterProcess } from '../helpers/redis.js';
import { describeWatchContract } from './watch-contract.js';

let cluster: RedisClusterProcess;
let client: Cluster;

beforeAll(async () => {
  cluster = await startRedisCluster();
  client = new Cluster([...cluster.nodes]);
  client.on('error', () => {});
  await client.ping();
}, 30_000);

afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

describeWatchContract(
  'redisStore on a Redis Cluster',
  async () => {
    const prefix = `watch-${randomUUID()}:`;
    return {
      store: redisStore({ client, prefix }),
      cleanup: async () => {},
      // The PTTL of a tenant's keys (a plain name, escaped as itself), on the node of its slot.
      lifetimes: async (scope) => {
        const base = `${prefix}{watch:${scope}}:`;
        const failing: number[] = [];
        for (const end of ['watch-failing', 'watch-order', 'watch-succeeded']) {
          const ttl = await client.pttl(base + end);
          if (ttl !== -2) failing.push(ttl);
        }
        return { summary: await client.pttl(`${base}watch`), failing };
      },
    };
  },
  { expiresOnServer: true },
);

describe('redisStore watch on a Redis Cluster', () => {
  it('writes the tenants of one batch on the nodes of their slots, and reads one back', async () => {
    const store = redisStore({ client, prefix: `watch-${randomUUID()}:` });
    const T = Date.parse('2026-11-20T09:00:00.000Z');
    // Sixty tenants: their hash tags fall on all three nodes.
    const tenants = Array.from({ length: 60 }, (_, i) => `school-${i}`);
    const notes = tenants.map((scope, i) => ({
      scope,
      at: T + i,
      ok: false,
      key: `k${i}`,
      event: 'E',
    }));
    await store.watch!({
      notes,
      keepMs: 60_000,
      keepSummaryMs: 60_000,
      maxFailing: 5,
      now: T + 60,
    });
    for (const [i, scope] of tenants.entries()) {
      const state = await store.watch!({
        notes: [],
        keepMs: 60_000,
        keepSummaryMs: 60_000,
        maxFailing: 5,
        now: T + 60,
        read: scope,
      });
      expect(state?.failing.map((one) => one.key)).toEqual([`k${i}`]);
    }
  });
});
