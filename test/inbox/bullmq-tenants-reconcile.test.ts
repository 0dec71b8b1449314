/**
 * A reconciler of 50 schools on one bullmqInbox (real Redis and BullMQ, a redisStore), scheduled
 * by two worker processes: one job per tick, runs that never overlap, one school at a time across
 * both processes, each school's missing invoices recovered once (test/inbox/tenants-reconcile.ts),
 * and each run's job keeps the summed counts and how many schools it read.
 */

import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { redisStore } from '../../src/stores/redis.js';
import { useTestRedis, type TestRedis } from '../helpers/redis.js';
import { EVERY_MS, runTenantsScenario, SCHOOLS } from './tenants-reconcile.js';

const run = randomUUID().slice(0, 8);
const names = {
  QUEUE: `tenants-${run}`,
  BULL_PREFIX: `test-bull-tenants-${run}`,
  STORE_PREFIX: `test-tenants-${run}:`,
};
let redis: TestRedis;
let client: Redis;

beforeAll(async () => {
  redis = await useTestRedis();
  client = new Redis(redis.url);
});

afterAll(async () => {
  if (client) {
    for (const queueName of [names.QUEUE, `${names.QUEUE}.reconcile`]) {
      const queue = new Queue(queueName, { connection: client, prefix: names.BULL_PREFIX });
      await queue.obliterate({ force: true }).catch(() => {});
      await queue.close();
    }
    for await (const keys of client.scanStream({ match: `${names.STORE_PREFIX}*`, count: 1000 })) {
      if ((keys as string[]).length > 0) await client.unlink(...(keys as string[]));
    }
    client.disconnect();
  }
  await redis?.close();
});

it(`runs a reconciler of ${SCHOOLS} schools on one bullmqInbox in two processes: one job a tick, one school at a time`, async () => {
  const store = redisStore({ client, prefix: names.STORE_PREFIX });
  const scenario = await runTenantsScenario(store, {
    ...names,
    INBOX: 'bullmq',
    REDIS_URL: redis.url,
  });

  // Each run is one job of the reconcile queue, completed with the counts over every school.
  const queue = new Queue(`${names.QUEUE}.reconcile`, {
    connection: client,
    prefix: names.BULL_PREFIX,
  });
  try {
    const done = await queue.getJobs(['completed'], 0, -1, true);
    const ended = scenario.runs.filter((r) => r.summary !== undefined);
    expect(done).toHaveLength(ended.length);
    // One job a tick: each job's id names its tick (`repeat:<scheduler>:<tick in ms>`), the
    // scheduler's and a start-up run's alike, and no tick has two.
    const ticks = done.map((job) => Number(/^repeat:[^:]+:(\d+)$/.exec(job.id ?? '')?.[1]));
    for (const tick of ticks) expect(tick % EVERY_MS).toBe(0);
    expect(new Set(ticks).size).toBe(ticks.length);
    const summaries = done.map((job) => job.returnvalue as Record<string, unknown>);
    for (const summary of summaries) {
      expect(summary).toMatchObject({
        checked: { invoice: 4 * SCHOOLS, access: 0, certificate: 0, user: 0 },
        missing: 0,
        failed: 0,
        complete: true,
        tenants: SCHOOLS,
        tenantsFailed: 0,
      });
    }
    expect(summaries.map((summary) => summary['recovered']).sort()).toEqual(
      ended.map((r) => r.summary!['recovered']).sort(),
    );
  } finally {
    await queue.close();
  }
}, 120_000);
