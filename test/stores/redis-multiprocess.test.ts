/**
 * Two receivers in separate processes share one Redis; a "platform" here sends them signed
 * deliveries concurrently and retries every answer but 200/201/202, as the real one does. Each
 * receiver's handler records its effect in a file, so "exactly once" is checked outside Redis.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, startRedisServer, type RedisServerProcess } from '../helpers/redis.js';
import { inParallel } from '../helpers/in-parallel.js';

const SECRET = 'f3b2a1c4d5e6f708f3b2a1c4d5e6f708f3b2a1c4d5e6f708f3b2a1c4d5e6f708';
const LEASE_MS = 500;
const FIXTURE = fileURLToPath(new URL('./fixtures/receiver-process.ts', import.meta.url));
const ACCEPTED = new Set([200, 201, 202]);

interface ReceiverProcess {
  readonly name: string;
  readonly port: number;
  readonly pid: number;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  alive: boolean;
}

interface Delivery {
  readonly idempotencyKey: string;
  readonly body: string;
}

/** One answer the platform got: an HTTP status and outcome, or a network failure. */
interface Attempt {
  readonly idempotencyKey: string;
  readonly to: string;
  readonly status: number | 'network';
  readonly outcome: string | undefined;
  /** When it was sent and when its answer (or failure) came. */
  readonly sentAt: number;
  readonly at: number;
}

let redis: RedisServerProcess;
let dir: string;
let effectsFile: string;
const prefix = `multiprocess-${randomUUID()}:`;
const receivers: ReceiverProcess[] = [];
const crashKey = `crash-${randomUUID()}`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'schoolhooks-multiprocess-'));
  // Persistent (AOF, fsync always) so that a stop and restart keeps what was recorded, as a
  // production Redis would.
  redis = await startRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
  effectsFile = join(dir, 'effects.txt');
  await writeFile(effectsFile, '');
  // Pushed one by one, so afterAll stops whichever started even if the other failed.
  await Promise.all(['a', 'b'].map(async (name) => receivers.push(await startReceiver(name))));
}, 30_000);

afterAll(async () => {
  await Promise.all(receivers.map(stopReceiver));
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('redisStore shared by two receiver processes', () => {
  it('processes each of 100 keys exactly once from 500 concurrent deliveries sent to both', async () => {
    const keys = Array.from({ length: 100 }, () => `many-${randomUUID()}`);
    // Five identical deliveries per key (retries, or fan-out to endpoints on one receiver).
    const deliveries = shuffle(keys.map(delivery).flatMap((d) => [d, d, d, d, d]));
    const attempts: Attempt[] = [];
    await inParallel(deliveries, 50, (d) => deliverUntilAccepted(d, attempts));

    const effects = await readEffects();
    for (const key of keys) expect(effects.get(key)?.length, key).toBe(1);
    const accepted = attempts.filter((a) => a.status !== 'network' && ACCEPTED.has(a.status));
    expect(accepted).toHaveLength(500);
    expect(accepted.filter((a) => a.outcome === 'processed')).toHaveLength(100);
    expect(accepted.filter((a) => a.outcome === 'duplicate')).toHaveLength(400);
    expect(attempts.filter((a) => a.outcome === 'conflict')).toHaveLength(0);
    // Both processes did part of the work.
    const pids = new Set(keys.map((key) => effects.get(key)?.[0]));
    expect(pids).toEqual(new Set(receivers.map((r) => String(r.pid))));
  });

  it('lets the surviving process take over a key after leaseMs when a handler dies mid-way', async () => {
    const [victim, survivor] = receivers;
    if (!victim || !survivor) throw new Error('two receivers expected');
    const attempts: Attempt[] = [];
    const d = delivery(crashKey);
    const sentAt = Date.now();
    // The first attempt goes to the process whose handler dies; retries go to whoever is alive.
    expect((await send(victim, d, attempts)).status).toBe('network');
    expect(await victim.exited).toBe(70);
    await deliverUntilAccepted(d, attempts);

    const last = attempts.at(-1);
    expect(last).toMatchObject({ to: survivor.name, status: 200, outcome: 'processed' });
    // The dead process's lease held the key until it ran out.
    expect(attempts.some((a) => a.outcome === 'in_flight')).toBe(true);
    expect((last?.at ?? 0) - sentAt).toBeGreaterThanOrEqual(LEASE_MS - 50);
    expect((await readEffects()).get(crashKey)).toEqual([String(survivor.pid)]);

    // Bring the pair back for the next test.
    receivers.splice(receivers.indexOf(victim), 1, await startReceiver(victim.name));
  });

  it('answers 503 while Redis is down, then processes every event exactly once', async () => {
    const keys = Array.from({ length: 100 }, () => `outage-${randomUUID()}`);
    const attempts: Attempt[] = [];
    const before = Array.from({ length: 20 }, () => delivery(`before-${randomUUID()}`));
    await Promise.all(before.map((d) => deliverUntilAccepted(d, attempts)));
    // Events arrive over 1.5 s; Redis stops after about 30 of them and stays down 1 s.
    const sending = Promise.all(
      keys.map(async (key, i) => {
        await sleep(i * 15);
        await deliverUntilAccepted(delivery(key), attempts);
      }),
    );
    await sleep(450);
    await redis.stop();
    const downAt = Date.now();
    await sleep(1000);
    const restartAt = Date.now();
    await redis.start();
    await sending;

    const effects = await readEffects();
    for (const key of keys) expect(effects.get(key)?.length, key).toBe(1);
    // Sent after Redis went down and answered before it was restarted: nothing but 503. (A
    // delivery claimed just before the stop may still answer 200 processed: its handlers ran.)
    const whileDown = attempts.filter((a) => a.sentAt > downAt && a.at < restartAt);
    expect(whileDown.length).toBeGreaterThan(10);
    for (const a of whileDown) {
      expect(a).toMatchObject({ status: 503, outcome: 'store_unavailable' });
    }
    expect(attempts.filter((a) => a.status === 'network')).toHaveLength(0);
    expect(attempts.filter((a) => a.outcome === 'processed')).toHaveLength(120);

    // What was recorded before the outage survived the restart: the same deliveries again are
    // duplicates (a Redis without persistence would forget them and process them twice).
    const again: Attempt[] = [];
    await Promise.all(before.map((d) => deliverUntilAccepted(d, again)));
    expect(again.map((a) => a.outcome)).toEqual(before.map(() => 'duplicate'));
  });
});

async function startReceiver(name: string): Promise<ReceiverProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
    env: {
      ...process.env,
      REDIS_URL: redis.url,
      SECRET,
      PREFIX: prefix,
      LEASE_MS: String(LEASE_MS),
      EFFECTS_FILE: effectsFile,
      CRASH_DIR: dir,
      CRASH_KEYS: crashKey,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
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
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`receiver ${name} exited with ${code}: ${stderr}`));
    });
  });
  const started: ReceiverProcess = { name, port, pid: child.pid ?? 0, child, exited, alive: true };
  void exited.then(() => (started.alive = false));
  return started;
}

async function stopReceiver(receiver: ReceiverProcess): Promise<void> {
  if (!receiver.alive) return;
  receiver.child.kill('SIGTERM');
  const timer = setTimeout(() => receiver.child.kill('SIGKILL'), 3000);
  await receiver.exited;
  clearTimeout(timer);
}

function delivery(idempotencyKey: string): Delivery {
  const body = JSON.stringify({
    event: 'UserSignedIn',
    timestamp: new Date().toISOString(),
    idempotencyKey,
    data: {},
  });
  return { idempotencyKey, body };
}

async function send(to: ReceiverProcess, d: Delivery, log: Attempt[]): Promise<Attempt> {
  const base = { idempotencyKey: d.idempotencyKey, to: to.name, sentAt: Date.now() };
  let attempt: Attempt;
  try {
    const response = await fetch(`http://127.0.0.1:${to.port}/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        signature: createHmac('sha256', SECRET).update(d.body).digest('hex'),
      },
      body: d.body,
    });
    const { outcome } = (await response.json()) as { outcome?: string };
    attempt = { ...base, status: response.status, outcome, at: Date.now() };
  } catch {
    attempt = { ...base, status: 'network', outcome: undefined, at: Date.now() };
  }
  log.push(attempt);
  return attempt;
}

/** Sends `d` to a random live receiver until one answers 200, 201 or 202 (at most 20 s). */
async function deliverUntilAccepted(d: Delivery, log: Attempt[]): Promise<void> {
  const giveUpAt = Date.now() + 20_000;
  for (;;) {
    const alive = receivers.filter((r) => r.alive);
    const to = alive[Math.floor(Math.random() * alive.length)];
    if (to) {
      const { status } = await send(to, d, log);
      if (status !== 'network' && ACCEPTED.has(status)) return;
    }
    if (Date.now() > giveUpAt) throw new Error(`${d.idempotencyKey} was never accepted`);
    // The platform waits 11 min and more; 50–100 ms keeps the test short.
    await sleep(50 + Math.random() * 50);
  }
}

/** Effects recorded so far: key -> pids of the processes whose handler ran it. */
async function readEffects(): Promise<Map<string, string[]>> {
  const effects = new Map<string, string[]>();
  for (const line of (await readFile(effectsFile, 'utf8')).split('\n')) {
    const [key, pid] = line.split(' ');
    if (key && pid) effects.set(key, [...(effects.get(key) ?? []), pid]);
  }
  return effects;
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}
