/**
 * Two receiver processes on one Redis prefix (node:http and the node adapter, each its own child
 * process): the attempts of one failing delivery, sent to each in turn as a load balancer would,
 * are counted together by a watchdog in this process that reads only the store.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisStore } from '../../src/stores/redis.js';
import { createWatchdog, type Health } from '../../src/watchdog/index.js';
import { useTestRedis, type TestRedis, keysMatching } from '../helpers/redis.js';

const SECRET = 'whsec_two_processes_0123456789abcdef0123';
const FIXTURE = fileURLToPath(new URL('./fixtures/watch-receiver-process.ts', import.meta.url));
const PREFIX = `schoolhooks-test:${randomUUID()}:`;
/** The platform counts 200, 201 and 202 as delivered (docs/platform.md). */
const ACCEPTED = new Set([200, 201, 202]);

interface ReceiverProcess {
  readonly port: number;
  readonly child: ChildProcess;
}

let redis: TestRedis;
let client: Redis;
const receivers: ReceiverProcess[] = [];

beforeAll(async () => {
  redis = await useTestRedis();
  client = new Redis(redis.url);
  await Promise.all(['a', 'b'].map(async (name) => receivers.push(await startReceiver(name))));
}, 30_000);

afterAll(async () => {
  for (const { child } of receivers) child.kill('SIGTERM');
  if (client) {
    const keys = await keysMatching(client, `${PREFIX}*`);
    if (keys.length > 0) await client.del(...keys);
    client.disconnect();
  }
  await redis?.close();
});

describe('two receiver processes on one Redis', () => {
  it("one watchdog sees both processes' attempts", async () => {
    const key = `fail-${randomUUID()}`;
    const firstAt = Date.now();
    const statuses: number[] = [];
    // Four attempts of one delivery, to process a, b, a, b: each answered non-2xx.
    for (let attempt = 0; attempt < 4; attempt++) {
      statuses.push(await send(receivers[attempt % 2]!, key));
    }
    expect(statuses.every((status) => !ACCEPTED.has(status))).toBe(true);
    // And one delivered by each, to show both are alive and answering.
    expect(ACCEPTED.has(await send(receivers[0]!, `ok-${randomUUID()}`))).toBe(true);
    expect(ACCEPTED.has(await send(receivers[1]!, `ok-${randomUUID()}`))).toBe(true);
    const lastAt = Date.now();

    const watchdog = createWatchdog({ store: redisStore({ client, prefix: PREFIX }) });
    // Each process writes its answers within a second or so: wait for both.
    const health = await until(watchdog.check, (h) => h.atRisk[0]?.attemptsSeen === 4, 10_000);
    expect(health.status).toBe('at_risk');
    expect(health.atRisk).toHaveLength(1);
    const [atRisk] = health.atRisk;
    expect(atRisk).toMatchObject({ idempotencyKey: key, event: 'UserSignedIn', attemptsSeen: 4 });
    const first = Date.parse(atRisk!.firstAttemptAt);
    expect(first).toBeGreaterThanOrEqual(firstAt);
    expect(first).toBeLessThanOrEqual(lastAt);
    // The platform gives a delivery up 11 + 33 + 77 + 165 minutes after its first attempt.
    expect(Date.parse(atRisk!.givesUpAt) - first).toBe((11 + 33 + 77 + 165) * 60_000);
    expect(health.lastSuccessAt).toBeDefined();
  }, 30_000);
});

/** `check()` again until `done` holds of its health, or the time is up (its last health then). */
async function until(
  check: () => Promise<Health>,
  done: (health: Health) => boolean,
  withinMs: number,
): Promise<Health> {
  const end = Date.now() + withinMs;
  for (;;) {
    const health = await check();
    if (done(health) || Date.now() > end) return health;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One signed delivery of `idempotencyKey` to `to`: the HTTP status it answered. */
async function send(to: ReceiverProcess, idempotencyKey: string): Promise<number> {
  const body = JSON.stringify({
    event: 'UserSignedIn',
    timestamp: new Date().toISOString(),
    idempotencyKey,
    data: {},
  });
  const response = await fetch(`http://127.0.0.1:${to.port}/`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      signature: createHmac('sha256', SECRET).update(body).digest('hex'),
    },
    body,
  });
  await response.arrayBuffer();
  return response.status;
}

async function startReceiver(name: string): Promise<ReceiverProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
    env: { ...process.env, REDIS_URL: redis.url, SECRET, PREFIX },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    let stdout = '';
    const timer = setTimeout(
      () => reject(new Error(`receiver ${name} did not start: ${stderr}`)),
      20_000,
    );
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /listening (\d+)/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`receiver ${name} exited with ${code}: ${stderr}`));
    });
  });
  return { port, child };
}
