/**
 * The inbox crash test: a web process (here, this one) stores 1 000 events over HTTP in a
 * pg-boss inbox on a `postgresStore` receiver; inbox workers in child processes, each run of a
 * job one transaction, are killed with SIGKILL at random while they work, and started again.
 * pg-boss hands the job of a killed worker out again after expireInMs. Each handler writes its
 * effect through `ctx.transaction`: the effects table must hold exactly one row per event.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeListener } from '../../src/adapters/node.js';
import { createReceiver } from '../../src/receiving/receiver.js';
import { pgBossInbox, postgresStore, type PgBossInbox } from '../../src/postgres.js';
import { bundleScript, type BundledScript } from '../helpers/bundle.js';
import {
  dropTables,
  uniqueTable,
  useTestPostgres,
  type TestPostgres,
} from '../helpers/postgres.js';
import { sleep } from '../helpers/redis.js';
import { inParallel } from '../helpers/in-parallel.js';

const SECRET = '2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae';
const FIXTURE = fileURLToPath(new URL('./fixtures/pg-boss-worker-process.ts', import.meta.url));
const EVENTS = 1000;
const WORKERS = 3;
/** A random worker is killed (and a new one started) every this many effects. */
const KILL_EVERY = 100;
/** How long pg-boss lets a run hold its job before it takes the worker for dead. */
const EXPIRE_MS = 2000;

interface WorkerProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<unknown>;
  alive: boolean;
}

let database: TestPostgres;
let pool: pg.Pool;
let script: BundledScript;
let inbox: PgBossInbox;
let server: Server;
let url: string;
const schema = uniqueTable('pgb_crash');
const queue = `crash-${randomUUID().slice(0, 8)}`;
const table = uniqueTable('sh_inbox_crash');
const effects = uniqueTable('sh_inbox_crash_effects');
const workers: WorkerProcess[] = [];
const starting = new Set<Promise<unknown>>();

beforeAll(async () => {
  database = await useTestPostgres();
  pool = new pg.Pool({ connectionString: database.url, max: 10 });
  pool.on('error', () => {});
  // No unique constraint: an event processed twice would show as two rows.
  await pool.query(`CREATE TABLE "${effects}" (key text NOT NULL, pid int NOT NULL)`);
  script = await bundleScript(FIXTURE);
  // The web process: stores each delivery in the inbox, answers 202.
  // (expireInMs travels with each job: the side that stores it sets it.)
  inbox = pgBossInbox({
    connectionString: database.url,
    schema,
    queueName: queue,
    expireInMs: EXPIRE_MS,
  });
  await inbox.start();
  const receiver = createReceiver({
    secret: SECRET,
    store: postgresStore({ pool, table }),
    inbox,
    logger: false,
  });
  server = createServer(nodeListener(receiver));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  await Promise.all(Array.from({ length: WORKERS }, async () => workers.push(await startWorker())));
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([...starting]);
  await Promise.all(workers.map(stopWorker));
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  await inbox?.close();
  if (pool) {
    await dropTables(pool, [table, effects]);
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  }
  await database?.close();
  await script?.remove();
});

describe('pgBossInbox workers on postgresStore under SIGKILL', () => {
  it(`keeps exactly one effect per event for ${EVENTS} events while workers are killed`, async () => {
    const startedAt = Date.now();
    const keys = Array.from({ length: EVENTS }, (_, i) => `inbox-crash-${i}-${randomUUID()}`);
    const answers: Record<string, number> = {};
    let stored = 0;
    // The platform: every delivery sent until answered 2xx.
    const sending = inParallel(keys, 20, async (key) => {
      const body = JSON.stringify({
        event: 'UserSignedIn',
        timestamp: new Date().toISOString(),
        idempotencyKey: key,
        data: {},
      });
      for (;;) {
        const response = await fetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            signature: createHmac('sha256', SECRET).update(body).digest('hex'),
          },
          body,
        });
        const { outcome } = (await response.json()) as { outcome?: string };
        const answer = `${response.status} ${outcome ?? ''}`;
        answers[answer] = (answers[answer] ?? 0) + 1;
        if (response.status >= 200 && response.status < 300) break;
        await sleep(50);
      }
      stored++;
    });
    const count = async (): Promise<number> =>
      (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${effects}"`)).rows[0]!.n;
    // The killer: a random worker every KILL_EVERY effects, while there is work left.
    let kills = 0;
    let done = 0;
    for (let nextKillAt = KILL_EVERY; done < EVENTS;) {
      await sleep(20);
      done = await count();
      if (Date.now() - startedAt > 100_000) break;
      const alive = workers.filter((w) => w.alive);
      if (done < nextKillAt || done >= EVENTS - KILL_EVERY / 2 || alive.length < 2) continue;
      nextKillAt += KILL_EVERY;
      const victim = alive[Math.floor(Math.random() * alive.length)]!;
      victim.alive = false;
      victim.child.kill('SIGKILL');
      kills++;
      const started = startWorker().then(
        (worker) => workers.push(worker),
        () => undefined,
      );
      starting.add(started);
      void started.finally(() => starting.delete(started));
    }
    await sending;
    const finishedAt = Date.now();
    // Jobs of killed workers come back after EXPIRE_MS: wait that long and more, then count.
    await sleep(EXPIRE_MS * 2 + 1000);
    const { rows } = await pool.query<{ key: string; runs: number }>(
      `SELECT key, count(*)::int AS runs FROM "${effects}" GROUP BY key`,
    );
    const runs = new Map(rows.map((row) => [row.key, row.runs]));
    const left = await inbox.jobs({ state: 'active' });
    // Runs a kill cut short, handed out again after EXPIRE_MS.
    const completed = await inbox.jobs({ state: 'completed' });
    const runAgain = completed.filter((job) => job.attemptsMade > 1).length;
    console.info(
      `pg-boss inbox crash test: ${EVENTS} events stored (${stored}), answers ` +
        `${JSON.stringify(answers)}, ${kills} workers killed, ${await count()} effects for ` +
        `${rows.length} keys, all done in ${finishedAt - startedAt} ms, ${left.length} jobs ` +
        `active, ${completed.length} completed, ${runAgain} of them run again after a kill`,
    );
    expect(keys.filter((key) => runs.get(key) !== 1)).toEqual([]);
    expect(await count()).toBe(EVENTS);
    expect(kills).toBeGreaterThanOrEqual(5);
    // The kills cut runs short: their jobs were handed out again and run once more.
    expect(runAgain).toBeGreaterThan(0);
    expect(left).toEqual([]);
  }, 150_000);
});

async function startWorker(): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [script.file], {
    env: {
      ...process.env,
      DATABASE_URL: database.url,
      SECRET,
      SCHEMA: schema,
      QUEUE: queue,
      TABLE: table,
      EFFECTS_TABLE: effects,
      EXPIRE_MS: String(EXPIRE_MS),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    let stdout = '';
    const timer = setTimeout(() => reject(new Error(`worker did not start: ${stderr}`)), 30_000);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('working\n')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited with ${String(code)}: ${stderr}`));
    });
  });
  const worker: WorkerProcess = { child, exited, alive: true };
  void exited.then(() => (worker.alive = false));
  return worker;
}

async function stopWorker(worker: WorkerProcess): Promise<void> {
  if (worker.child.exitCode !== null || worker.child.signalCode !== null) return;
  worker.child.kill('SIGTERM');
  const timer = setTimeout(() => worker.child.kill('SIGKILL'), 3000);
  await worker.exited;
  clearTimeout(timer);
}
