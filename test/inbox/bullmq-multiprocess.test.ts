/**
 * 1 000 deliveries acknowledged over HTTP into a BullMQ inbox, then run by two worker processes,
 * one of them killed (SIGKILL) while it is provably inside a handler, before that handler's
 * effect: every event's effect happens exactly once, injected handler failures included. The
 * effects are counted in Redis by the handlers (HINCRBY), outside the inbox's own bookkeeping.
 */

import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { nodeListener } from '../../src/adapters/node.js';
import { createReceiver } from '../../src/index.js';
import { bullmqInbox, type BullmqInbox } from '../../src/inbox/bullmq.js';
import { redisStore } from '../../src/stores/redis.js';
import { createTestDelivery, SECRET, type Delivery } from '../helpers/deliveries.js';
import { useTestRedis, type TestRedis } from '../helpers/redis.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/bullmq-worker.ts', import.meta.url));
const EVENTS = 1000;
const run = randomUUID();
const names = {
  QUEUE: `multiprocess-${run}`,
  BULL_PREFIX: `test-bull-mp-${run.slice(0, 8)}`,
  STORE_PREFIX: `test-inbox-mp-${run}:`,
  EFFECTS_KEY: `test-inbox-mp-${run}:effects`,
  FAILURES_KEY: `test-inbox-mp-${run}:failures`,
};

interface WorkerProcess {
  readonly child: ChildProcess;
  readonly messages: Record<string, unknown>[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

let redis: TestRedis;
let client: Redis;
let inbox: BullmqInbox;
let server: Server;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  redis = await useTestRedis();
  client = new Redis(redis.url);
  // attempts and backoff go with each job as it is stored: the web process's inbox sets them.
  inbox = bullmqInbox({
    connection: client,
    queueName: names.QUEUE,
    prefix: names.BULL_PREFIX,
    attempts: 20,
    backoffMs: 20,
  });
  // The web process: it only stores deliveries; the workers run the handlers.
  const receiver = createReceiver({
    secret: SECRET,
    store: redisStore({ client, prefix: names.STORE_PREFIX }),
    inbox,
  });
  server = createServer(nodeListener(receiver));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  for (const { child } of workers) if (child.exitCode === null) child.kill('SIGKILL');
  await new Promise((resolve) => server?.close(resolve));
  await inbox?.queue.obliterate({ force: true });
  await inbox?.close();
  await client?.del(names.EFFECTS_KEY, names.FAILURES_KEY);
  client?.disconnect();
  await redis?.close();
});

function startWorker(env: Record<string, string>): WorkerProcess {
  const child = fork(FIXTURE, {
    execArgv: ['--import', 'tsx'],
    env: {
      ...process.env,
      ...names,
      REDIS_URL: redis.url,
      SECRET,
      LEASE_MS: '1000',
      LOCK_MS: '1000',
      STALLED_MS: '500',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const messages: Record<string, unknown>[] = [];
  child.on('message', (message) => messages.push(message as Record<string, unknown>));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const worker = { child, messages, exited };
  workers.push(worker);
  return worker;
}

function message(worker: WorkerProcess, type: string, timeout = 20_000) {
  return vi.waitFor(
    () => {
      const found = worker.messages.find((m) => m['type'] === type);
      if (found === undefined) throw new Error(`no '${type}' message yet`);
      return found;
    },
    { timeout, interval: 20 },
  );
}

/** How many times event `i` fails before it succeeds: 1 in 10 once, 1 in 50 twice. */
function failTimesOf(i: number): number {
  if (i % 50 === 7) return 2;
  return i % 10 === 3 ? 1 : 0;
}

async function post(delivery: Delivery): Promise<number> {
  const { port } = server.address() as AddressInfo;
  const response = await fetch(`http://127.0.0.1:${port}/`, {
    method: 'POST',
    headers: delivery.headers,
    body: delivery.body,
  });
  await response.arrayBuffer();
  return response.status;
}

describe('bullmqInbox with two worker processes, one killed mid-job', () => {
  it(`runs each of ${EVENTS} events' effect exactly once, with injected failures and a SIGKILL`, async () => {
    const deliveries = Array.from({ length: EVENTS }, (_, i) =>
      createTestDelivery('UserSignedIn', { user: { id: i }, failTimes: failTimesOf(i) }),
    );
    const statuses: number[] = [];
    for (let i = 0; i < deliveries.length; i += 50) {
      statuses.push(...(await Promise.all(deliveries.slice(i, i + 50).map(post))));
    }
    expect(statuses.every((status) => status === 202)).toBe(true);
    expect((await inbox.queue.getJobCounts('wait')).wait).toBe(EVENTS);

    // A: one job at a time, so when it hangs inside its 25th handler run, no other job of it
    // sits between an effect and its completion.
    const a = startWorker({ CONCURRENCY: '1', TRAP_AT: '25' });
    const trapped = await message(a, 'in-job');
    const trappedId = String(trapped['key']);
    expect(await inbox.getJob(trappedId)).toMatchObject({ state: 'active' });

    // B works beside A, which still holds its job (its lock is renewed while it lives).
    const b = startWorker({ CONCURRENCY: '8' });
    await vi.waitFor(
      async () =>
        expect((await inbox.queue.getJobCounts('completed')).completed).toBeGreaterThan(200),
      { timeout: 20_000, interval: 20 },
    );
    expect(await inbox.getJob(trappedId)).toMatchObject({ state: 'active' });
    expect(await client.hget(names.EFFECTS_KEY, trappedId)).toBeNull();

    a.child.kill('SIGKILL');
    expect(await a.exited).toEqual({ code: null, signal: 'SIGKILL' });

    // B finds A's job stalled once its lock runs out, and runs it; then everything is done.
    await vi.waitFor(
      async () => expect((await inbox.queue.getJobCounts('completed')).completed).toBe(EVENTS),
      { timeout: 40_000, interval: 100 },
    );
    const effects = await client.hgetall(names.EFFECTS_KEY);
    expect(Object.keys(effects)).toHaveLength(EVENTS);
    expect(Object.entries(effects).filter(([, count]) => count !== '1')).toEqual([]);
    for (const delivery of deliveries) expect(effects[delivery.idempotencyKey]).toBe('1');
    expect(await inbox.jobs({ state: 'failed' })).toEqual([]);

    // The injected failures did happen, and never more often than injected.
    const failures = await client.hgetall(names.FAILURES_KEY);
    const injected = deliveries.map((delivery, i) => [delivery.idempotencyKey, failTimesOf(i)]);
    for (const [key, times] of injected) {
      expect(Number(failures[key as string] ?? 0)).toBeLessThanOrEqual(times as number);
    }
    // Every key with an injected failure failed, but perhaps the trapped one: its run after the
    // kill may have met A's lease (in_flight), which counts as an attempt.
    expect(Object.keys(failures).length).toBeGreaterThanOrEqual(119);

    // worker.close() and inbox.close() leave nothing open: B's process ends by itself.
    b.child.send('close');
    await message(b, 'closed');
    expect(await b.exited).toEqual({ code: 0, signal: null });
  }, 60_000);
});
