/**
 * The crash test: receivers in child processes on one Postgres, killed with SIGKILL at random
 * moments while a "platform" sends events and retries every answer but 200/201/202 (and every
 * dropped connection), as the real one does. Each handler writes its effect through
 * `ctx.transaction`, so "exactly once" is checked in the effects table itself.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dropTables,
  uniqueTable,
  useTestPostgres,
  type TestPostgres,
} from '../helpers/postgres.js';
import { sleep } from '../helpers/redis.js';

const SECRET = '5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592';
const FIXTURE = fileURLToPath(new URL('./fixtures/postgres-receiver-process.ts', import.meta.url));
const ACCEPTED = new Set([200, 201, 202]);
/** Events sent; every one must end with exactly one effect. */
const EVENTS = 300;
const RECEIVERS = 5;
/** One receiver, picked at random, is killed (and a new one started) every this many events. */
const KILL_EVERY = 30;

interface ReceiverProcess {
  readonly port: number;
  readonly child: ChildProcess;
  readonly exited: Promise<unknown>;
  alive: boolean;
}

/** One answer the platform got, or a connection the kill dropped. */
interface Attempt {
  readonly key: string;
  readonly status: number | 'network';
  readonly outcome: string | undefined;
  readonly at: number;
}

let database: TestPostgres;
let pool: pg.Pool;
const table = uniqueTable('sh_crash');
const effects = uniqueTable('sh_crash_effects');
const receivers: ReceiverProcess[] = [];
/** Receivers still starting (after a kill): afterAll waits for them, so none is left running. */
const starting = new Set<Promise<unknown>>();

beforeAll(async () => {
  database = await useTestPostgres();
  pool = new pg.Pool({ connectionString: database.url });
  pool.on('error', () => {});
  // No unique constraint: an event processed twice would show as two rows.
  await pool.query(`CREATE TABLE "${effects}" (key text NOT NULL, pid int NOT NULL)`);
  await Promise.all(
    Array.from({ length: RECEIVERS }, async () => receivers.push(await startReceiver())),
  );
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([...starting]);
  await Promise.all(receivers.map(stopReceiver));
  if (pool) {
    await dropTables(pool, [table, effects]);
    await pool.end();
  }
  await database?.close();
});

describe('postgresStore under SIGKILL', () => {
  it(`keeps exactly one effect per event for ${EVENTS} events while receivers are killed at random`, async () => {
    const keys = Array.from({ length: EVENTS }, () => `crash-${randomUUID()}`);
    const attempts: Attempt[] = [];
    let sending = true;
    let kills = 0;
    const accepted = (): number =>
      attempts.filter((a) => a.status !== 'network' && ACCEPTED.has(a.status)).length;
    // A kill after every KILL_EVERY accepted events (so the count does not depend on the
    // machine's speed), at a random moment within the stream of deliveries.
    let nextKillAt = KILL_EVERY;
    const killer = (async () => {
      while (sending) {
        await sleep(5 + Math.random() * 20);
        const alive = receivers.filter((r) => r.alive);
        // Always leave one running, so the platform's retries have somewhere to go.
        if (!sending || accepted() < nextKillAt || alive.length < 2) continue;
        nextKillAt += KILL_EVERY;
        const victim = alive[Math.floor(Math.random() * alive.length)]!;
        victim.alive = false;
        victim.child.kill('SIGKILL');
        kills++;
        // A restart that fails leaves fewer receivers, which the retries survive.
        const started = startReceiver().then(
          (receiver) => receivers.push(receiver),
          () => undefined,
        );
        starting.add(started);
        void started.finally(() => starting.delete(started));
      }
    })();
    await inParallel(keys, 40, (key) => deliverUntilAccepted(body(key), attempts));
    sending = false;
    await killer;

    const { rows } = await pool.query<{ key: string; runs: number }>(
      `SELECT key, count(*)::int AS runs FROM "${effects}" GROUP BY key`,
    );
    const runs = new Map(rows.map((row) => [row.key, row.runs]));
    expect(keys.filter((key) => runs.get(key) !== 1)).toEqual([]);
    expect(rows).toHaveLength(EVENTS);
    // The kills really landed mid-delivery: the platform saw dropped connections.
    expect(kills).toBeGreaterThanOrEqual(3);
    const dropped = attempts.filter((a) => a.status === 'network');
    expect(dropped.length).toBeGreaterThan(0);
    console.info(`${kills} receivers killed, ${dropped.length} deliveries cut off`);
    // No retry waited for a lease (leaseMs is 10 min): every key whose delivery was cut off was
    // accepted within seconds of the cut.
    for (const cut of dropped) {
      const accepted = attempts.find(
        (a) => a.key === cut.key && a.status !== 'network' && ACCEPTED.has(a.status),
      );
      const story = JSON.stringify(attempts.filter((a) => a.key === cut.key));
      expect(accepted, story).toBeDefined();
      expect(accepted!.at - cut.at, story).toBeLessThan(15_000);
    }
    // Every event is done: the same deliveries again are all duplicates.
    const again: Attempt[] = [];
    await inParallel(keys.slice(0, 100), 20, (key) => deliverUntilAccepted(body(key), again));
    expect(new Set(again.map((a) => a.outcome))).toEqual(new Set(['duplicate']));
  }, 120_000);
});

async function startReceiver(): Promise<ReceiverProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
    env: {
      ...process.env,
      DATABASE_URL: database.url,
      SECRET,
      TABLE: table,
      EFFECTS_TABLE: effects,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    let stdout = '';
    const timer = setTimeout(() => reject(new Error(`receiver did not start: ${stderr}`)), 30_000);
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
      reject(new Error(`receiver exited with ${String(code)}: ${stderr}`));
    });
  });
  const started: ReceiverProcess = { port, child, exited, alive: true };
  void exited.then(() => (started.alive = false));
  return started;
}

async function stopReceiver(receiver: ReceiverProcess): Promise<void> {
  if (receiver.child.exitCode !== null || receiver.child.signalCode !== null) return;
  receiver.child.kill('SIGTERM');
  const timer = setTimeout(() => receiver.child.kill('SIGKILL'), 3000);
  await receiver.exited;
  clearTimeout(timer);
}

/** The platform's delivery of one event: the same bytes on every retry. */
const bodies = new Map<string, string>();
function body(key: string): { key: string; body: string } {
  let text = bodies.get(key);
  if (text === undefined) {
    text = JSON.stringify({
      event: 'UserSignedIn',
      timestamp: new Date().toISOString(),
      idempotencyKey: key,
      data: {},
    });
    bodies.set(key, text);
  }
  return { key, body: text };
}

async function send(
  { key, body }: { key: string; body: string },
  log: Attempt[],
): Promise<Attempt> {
  const alive = receivers.filter((r) => r.alive);
  const to = alive[Math.floor(Math.random() * alive.length)];
  let attempt: Attempt;
  try {
    if (!to) throw new Error('no receiver alive');
    const response = await fetch(`http://127.0.0.1:${to.port}/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        signature: createHmac('sha256', SECRET).update(body).digest('hex'),
      },
      body,
    });
    const { outcome } = (await response.json()) as { outcome?: string };
    attempt = { key, status: response.status, outcome, at: Date.now() };
  } catch {
    attempt = { key, status: 'network', outcome: to ? undefined : 'none alive', at: Date.now() };
  }
  log.push(attempt);
  return attempt;
}

/** Sends until a receiver answers 200, 201 or 202 (the platform's retries, minutes apart, replayed at once). */
async function deliverUntilAccepted(
  delivery: { key: string; body: string },
  log: Attempt[],
): Promise<void> {
  const giveUpAt = Date.now() + 60_000;
  for (;;) {
    const { status } = await send(delivery, log);
    if (status !== 'network' && ACCEPTED.has(status)) return;
    if (Date.now() > giveUpAt) throw new Error(`${delivery.key} was never accepted`);
    await sleep(20 + Math.random() * 30);
  }
}

async function inParallel<T>(
  items: readonly T[],
  limit: number,
  run: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await run(items[next++] as T);
    }),
  );
}
