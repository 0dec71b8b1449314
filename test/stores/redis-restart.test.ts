/**
 * A receiver on `redisStore`, in a child process, over an ioredis client made without an
 * `'error'` listener: a restart of its Redis (a `redis-server` of this test's own) must not end
 * the process. Its `onError` is told of the dropped connection and of each failed reconnection
 * (the store listens to the client), it answers 503 while Redis is down (the platform retries)
 * and 200 again once Redis is back.
 */

import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleScript, type BundledScript } from '../helpers/bundle.js';
import {
  deliver,
  expectStoreComesBack,
  startReceiverProcess,
  type ReceiverProcess,
} from '../helpers/receiver-process.js';
import { startRedisServer, type RedisServerProcess } from '../helpers/redis.js';

const FIXTURE = fileURLToPath(
  new URL('./fixtures/store-restart-receiver-process.ts', import.meta.url),
);

let redis: RedisServerProcess;
let script: BundledScript;
let receiver: ReceiverProcess;

beforeAll(async () => {
  [redis, script] = await Promise.all([startRedisServer(), bundleScript(FIXTURE)]);
  receiver = await startReceiverProcess(script.file, {
    STORE: 'redis',
    URL: redis.url,
    PREFIX: 'sh-restart:',
  });
}, 60_000);

afterAll(async () => {
  await receiver?.stop();
  await script?.remove();
  await redis?.close();
});

describe('redisStore when Redis restarts', () => {
  it('lives through a stop and a start of Redis: onError told, 503 while down, 200 after', async () => {
    expect(await deliver(receiver)).toBe(200);
    // Nothing is sent while it stops: what onError is told is the client's own 'error' event.
    await expectStoreComesBack(receiver, { stop: () => redis.stop(), start: () => redis.start() });
  }, 60_000);

  it('lives through a kill of Redis (connections dropped without a goodbye)', async () => {
    expect(await deliver(receiver)).toBe(200);
    await expectStoreComesBack(receiver, {
      stop: () => redis.kill(),
      start: () => redis.start(),
      whileDown: false,
    });
  }, 60_000);
});
