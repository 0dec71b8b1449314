/**
 * What the tests of bullmqInbox's scheduled tasks (`reconcile`, `watch`) share: a real Redis,
 * inboxes on one queue standing for processes (each with a connection of its own), the task's
 * queue (`<queueName>.<task>`) read with a connection of its own, and everything removed after
 * each test.
 * @module
 */

import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { Logger } from '../../src/index.js';
import { bullmqInbox, type BullmqInbox } from '../../src/inbox/bullmq.js';
import { useTestRedis, type TestRedis } from '../helpers/redis.js';

/** Registers the file's hooks; call once, at the top of a test file. */
export function useScheduledBullmq(task: 'reconcile' | 'watch') {
  let redis: TestRedis;
  const prefix = `test-bull-${task}-${randomUUID().slice(0, 8)}`;
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    redis = await useTestRedis();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  });
  afterAll(async () => {
    await redis?.close();
  });

  /** The task's queue of an inbox's queue, read with a connection of its own. */
  function taskQueue(queueName: string): Queue {
    const client = new Redis(redis.url);
    const queue = new Queue(`${queueName}.${task}`, { connection: client, prefix });
    cleanups.push(async () => {
      await queue.close();
      client.disconnect();
    });
    return queue;
  }

  /** `count` inboxes on one queue, each with a connection of its own; their keys removed after. */
  function inboxes(count: number, logger?: Logger): BullmqInbox[] {
    const queueName = `${task}-${randomUUID().slice(0, 8)}`;
    const made: BullmqInbox[] = [];
    cleanups.push(async () => {
      await taskQueue(queueName)
        .obliterate({ force: true })
        .catch(() => {});
      await made[0]!.queue.obliterate({ force: true }).catch(() => {});
    });
    for (let i = 0; i < count; i++) {
      const client = new Redis(redis.url);
      const inbox = bullmqInbox({
        connection: client,
        queueName,
        prefix,
        ...(logger ? { logger } : {}),
      });
      made.push(inbox);
      cleanups.push(async () => {
        await inbox.close();
        client.disconnect();
      });
    }
    return made;
  }

  return { inboxes, taskQueue, cleanups };
}
