/**
 * The crash test: receivers in child processes on one Postgres, killed with SIGKILL while a
 * "platform" sends 1 000 events over HTTP and resends every delivery until it is answered
 * 200/201/202 (the real platform retries 5 times, minutes apart; here at once, until accepted).
 * Each handler writes its effect through `ctx.transaction`, so "exactly once" is checked in the
 * effects table itself.
 *
 * Two kinds of kills:
 * - at named points: for keys chosen with a seeded generator (CRASH_SEED), the receiver stops
 *   before, during or after the handler's insert, or before the commit, says so on stdout, and
 *   is killed right there;
 * - at random: a random receiver every KILL_EVERY accepted events, wherever it is.
 */

import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleScript, type BundledScript } from '../helpers/bundle.js';
import {
  dropTables,
  uniqueTable,
  useTestPostgres,
  type TestPostgres,
} from '../helpers/postgres.js';
import { sleep } from '../helpers/redis.js';
import { seededRandom } from '../helpers/seeded-random.js';
import { inParallel } from '../helpers/in-parallel.js';
import {
  isAccepted,
  postSigned,
  SameBytes,
  startChildReceiver,
  stopChildReceiver,
  type Answered,
  type ChildReceiver,
} from '../helpers/crash-platform.js';

const SECRET = '5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592';
const FIXTURE = fileURLToPath(new URL('./fixtures/postgres-receiver-process.ts', import.meta.url));
/** Events sent; every one must end with exactly one effect. */
const EVENTS = 1000;
const RECEIVERS = 5;
/** Deliveries the platform has in flight at once. */
const CONCURRENCY = 12;
/** A random receiver is killed (and a new one started) every this many accepted events. */
const KILL_EVERY = 70;
/** Where the receiver is killed for the chosen keys, and how many keys per point. */
const POINTS = ['before-insert', 'during-insert', 'after-insert', 'before-commit'] as const;
const KEYS_PER_POINT = 3;
/** How long Postgres runs the insert that a `during-insert` kill lands in. */
const SLOW_INSERT_MS = 300;
const SEED = Number(process.env['CRASH_SEED'] ?? 20);

type Point = (typeof POINTS)[number];

type ReceiverProcess = ChildReceiver;

/** One answer the platform got, or a connection the kill dropped. */
interface Attempt extends Answered {
  readonly key: string;
}

/** A kill at a named point: when the process was gone, and when its Postgres session was. */
interface PointKill {
  readonly point: Point;
  readonly key: string;
  /** The receiver process killed. */
  readonly pid: number;
  readonly killedAt: number;
  readonly sessionEndedAt: number;
}

let database: TestPostgres;
let pool: pg.Pool;
let script: BundledScript;
let holdDir: string;
const table = uniqueTable('sh_crash');
const effects = uniqueTable('sh_crash_effects');
const receivers: ReceiverProcess[] = [];
/** Receivers still starting (after a kill): afterAll waits for them, so none is left running. */
const starting = new Set<Promise<unknown>>();
/** Kills at named points still being carried out. */
const killing = new Set<Promise<unknown>>();
const random = seededRandom(SEED);
const keys = Array.from({ length: EVENTS }, (_, i) => `crash-${i}-${randomUUID()}`);
/** The keys held at a named point, picked among the middle 90 % so they land under load. */
const held = new Map<string, Point>();
for (const point of POINTS) {
  for (let n = 0; n < KEYS_PER_POINT; n++) {
    let index: number;
    do index = 50 + Math.floor(random() * (EVENTS - 100));
    while (held.has(keys[index]!));
    held.set(keys[index]!, point);
  }
}
const pointKills: PointKill[] = [];

beforeAll(async () => {
  database = await useTestPostgres();
  pool = new pg.Pool({ connectionString: database.url, max: 4 });
  pool.on('error', () => {});
  script = await bundleScript(FIXTURE);
  holdDir = await mkdtemp(join(tmpdir(), 'schoolhooks-pg-crash-'));
  // No unique constraint: an event processed twice would show as two rows.
  await pool.query(`CREATE TABLE "${effects}" (key text NOT NULL, pid int NOT NULL)`);
  await Promise.all(
    Array.from({ length: RECEIVERS }, async () => receivers.push(await startReceiver())),
  );
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([...killing]);
  await Promise.allSettled([...starting]);
  await Promise.all(receivers.map(stopChildReceiver));
  if (pool) {
    await dropTables(pool, [table, effects]);
    await pool.end();
  }
  await database?.close();
  await script?.remove();
  if (holdDir) await rm(holdDir, { recursive: true, force: true });
});

describe('postgresStore under SIGKILL', () => {
  it(`keeps exactly one effect per event for ${EVENTS} events while receivers are killed`, async () => {
    const startedAt = Date.now();
    const attempts: Attempt[] = [];
    let sending = true;
    const randomKills: number[] = [];
    let accepted = 0;
    // A kill after every KILL_EVERY accepted events (so the count does not depend on the
    // machine's speed), at a random moment within the stream of deliveries.
    let nextKillAt = KILL_EVERY;
    const killer = (async () => {
      while (sending) {
        await sleep(5 + random() * 20);
        const alive = receivers.filter((r) => r.alive);
        // Always leave one running, so the platform's retries have somewhere to go.
        if (!sending || accepted < nextKillAt || alive.length < 2) continue;
        nextKillAt += KILL_EVERY;
        const victim = alive[Math.floor(random() * alive.length)]!;
        victim.alive = false;
        victim.child.kill('SIGKILL');
        randomKills.push(Date.now());
        replaceReceiver();
      }
    })();
    await inParallel(keys, CONCURRENCY, async (key) => {
      await deliverUntilAccepted(delivery(key), attempts);
      accepted++;
    });
    sending = false;
    await killer;
    await Promise.all([...killing]);
    const sentFor = Date.now() - startedAt;

    const { rows } = await pool.query<{ key: string; runs: number; pid: number }>(
      `SELECT key, count(*)::int AS runs, min(pid) AS pid FROM "${effects}" GROUP BY key`,
    );
    const runs = new Map(rows.map((row) => [row.key, row.runs]));
    /** The receiver whose run of a key committed (one per key, checked below). */
    const committedBy = new Map(rows.map((row) => [row.key, row.pid]));
    const cut = attempts.filter((a) => a.status === 'network');
    // What the platform sent after the first cut-off delivery of each key, to its acceptance.
    const firstCut = new Map<string, number>();
    for (const c of cut) if (!firstCut.has(c.key)) firstCut.set(c.key, c.at);
    const resends = attempts.filter((a) => a.sentAt >= (firstCut.get(a.key) ?? Infinity));
    const answered = (a: Attempt): boolean => a.status !== 'network';
    const latencies = (list: Attempt[]): number[] =>
      list.filter(answered).map((a) => a.at - a.sentAt);
    const inFlight = resends.filter((a) => a.status === 409);
    /** Which kill a 409 followed, and when, against the end of the killed session. */
    const whyInFlight = (a: Attempt): string => {
      const kill = pointKills.find((k) => k.key === a.key);
      const since = a.sentAt - (firstCut.get(a.key) ?? a.sentAt);
      if (!kill) return `random kill, sent ${since} ms after the cut`;
      return `${kill.point}, sent ${a.sentAt - kill.killedAt} ms after the kill, ${kill.sessionEndedAt - a.sentAt} ms before its session ended`;
    };
    const sessionEnds = Object.fromEntries(
      POINTS.map((point) => [
        point,
        pointKills.filter((k) => k.point === point).map((k) => k.sessionEndedAt - k.killedAt),
      ]),
    );
    console.info(
      [
        `postgres crash test (seed ${SEED}): ${EVENTS} events, ${rows.length} keys with effects, ` +
          `${[...runs.values()].reduce((a, b) => a + b, 0)} effects`,
        `${attempts.length} deliveries sent (${attempts.length - EVENTS} resends), ` +
          `${attempts.filter(isAccepted).length} accepted`,
        `${pointKills.length} kills at named points, ${randomKills.length} at random`,
        `${cut.length} deliveries cut off (${firstCut.size} events), ${resends.length} resends ` +
          `of them, ${inFlight.length} answered 409; no receiver running ${noneAlive} times`,
        `answer time of those resends: ${summary(latencies(resends))}; of every delivery: ` +
          `${summary(latencies(attempts))}`,
        `Postgres session gone after the kill (ms): ${JSON.stringify(sessionEnds)}`,
        `the 409s: ${JSON.stringify(inFlight.map((a) => whyInFlight(a)))}`,
        `sent in ${sentFor} ms`,
      ].join('\n'),
    );

    const storyOf = (key: string): string =>
      JSON.stringify(attempts.filter((a) => a.key === key).map((a) => ({ ...a, key: undefined })));
    // Exactly one effect per event.
    expect(keys.filter((key) => runs.get(key) !== 1)).toEqual([]);
    expect(rows).toHaveLength(EVENTS);

    // Every kill at a named point was at the point its key was held for, and every point was
    // killed at least once. Not every held key: a random kill can land after a run has claimed
    // its key's point (the marker file) and before it says so, and the key's retry then runs
    // through (seen once in CI: 11 of 12).
    const named = new Set([...held].map(([key, point]) => `${point} ${key}`));
    expect(pointKills.filter((k) => !named.has(`${k.point} ${k.key}`))).toEqual([]);
    expect(new Set(pointKills.map((k) => k.point))).toEqual(new Set(held.values()));
    expect(pointKills.length).toBeGreaterThanOrEqual(held.size - 2);
    expect(randomKills.length).toBeGreaterThanOrEqual(5);
    expect(cut.length).toBeGreaterThan(pointKills.length);

    // No retry waited for a lease (leaseMs is 10 min): once the killed receiver's Postgres
    // session was gone (at once, or when the statement it was running ended), the next resend
    // of its key that reached a receiver was processed.
    for (const kill of pointKills) {
      const story = `${kill.point}: ${storyOf(kill.key)}`;
      // (An upper bound: polled every few ms, slower on a machine under load.)
      expect(kill.sessionEndedAt - kill.killedAt, story).toBeLessThan(SLOW_INSERT_MS + 1700);
      const after = attempts.filter((a) => a.key === kill.key && a.sentAt > kill.killedAt);
      // The held run never committed: the effect is a later run's.
      expect(committedBy.get(kill.key), story).not.toBe(kill.pid);
      // Accepted once: processed, or a duplicate when an earlier resend's run committed and a
      // random kill then cut its answer off (a 'network' attempt before it).
      const accepted = after.filter(isAccepted);
      expect(accepted, story).toHaveLength(1);
      const cutBefore = after.some((a) => a.status === 'network' && a.sentAt < accepted[0]!.sentAt);
      expect(accepted[0], story).toMatchObject(
        cutBefore && accepted[0]!.outcome === 'duplicate'
          ? { status: 200, outcome: 'duplicate' }
          : { status: 200, outcome: 'processed' },
      );
      // A 409 only while the killed session still ran a statement (`during-insert`).
      for (const a of after.filter((a) => a.status === 409)) {
        expect(a.sentAt, story).toBeLessThan(kill.sessionEndedAt);
      }
    }
    // Every delivery a kill cut off was accepted soon after: nothing held it for a lease.
    for (const c of cut) {
      const done = attempts.find((a) => a.key === c.key && a.sentAt >= c.at && isAccepted(a));
      expect(done, storyOf(c.key)).toBeDefined();
      expect(done!.at - c.at, storyOf(c.key)).toBeLessThan(5000);
    }
    // And each resend was answered at once, as any delivery is (under a second here; the bound
    // leaves room for a 2-core machine running the whole suite, or other work, beside it).
    expect(Math.max(...latencies(resends))).toBeLessThan(5000);

    // Every event is done: the same deliveries again are all duplicates.
    const again: Attempt[] = [];
    await inParallel(keys.slice(0, 100), 20, (key) => deliverUntilAccepted(delivery(key), again));
    expect(new Set(again.map((a) => a.outcome))).toEqual(new Set(['duplicate']));
  }, 150_000);
});

/** `median / p99 / max ms` of a list of durations. */
function summary(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number): number =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return `median ${at(0.5)} / p99 ${at(0.99)} / max ${sorted.at(-1) ?? 0} ms`;
}

async function startReceiver(): Promise<ReceiverProcess> {
  const env = {
    ...process.env,
    DATABASE_URL: database.url,
    SECRET,
    TABLE: table,
    EFFECTS_TABLE: effects,
    HOLD: JSON.stringify(Object.fromEntries(held)),
    HOLD_DIR: holdDir,
    SLOW_INSERT_MS: String(SLOW_INSERT_MS),
  };
  // A hold comes only after a request, so once the receiver listens.
  return startChildReceiver(script.file, env, (line, receiver) => {
    const hold = /^hold (\S+) (\S+) (\d+)$/.exec(line);
    if (hold && receiver) killAtPoint(receiver, hold[1] as Point, hold[2]!, Number(hold[3]));
  });
}

/** Kills a receiver that stopped at a named point, and times its Postgres session's end. */
function killAtPoint(receiver: ReceiverProcess, point: Point, key: string, backend: number): void {
  receiver.alive = false;
  receiver.child.kill('SIGKILL');
  // The kernel ends it at once; its 'exit' reaches this process later, under load much later.
  const killedAt = Date.now();
  void receiver.exited.then(replaceReceiver);
  const killed = (async () => {
    for (;;) {
      const { rowCount } = await pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [
        backend,
      ]);
      if (rowCount === 0) break;
      await sleep(5);
    }
    pointKills.push({ point, key, pid: receiver.pid, killedAt, sessionEndedAt: Date.now() });
  })();
  killing.add(killed);
  void killed.finally(() => killing.delete(killed));
}

/** Starts a receiver in place of a killed one; one that fails to start leaves fewer. */
function replaceReceiver(): void {
  const started = startReceiver().then(
    (receiver) => receivers.push(receiver),
    () => undefined,
  );
  starting.add(started);
  void started.finally(() => starting.delete(started));
}

/** The platform's delivery of one event: the same bytes on every retry. */
const deliveries = new SameBytes();
const delivery = (key: string) => deliveries.of(key);

/** How often the platform found no receiver running (all killed or starting): not sent. */
let noneAlive = 0;

async function send(
  { key, body }: { key: string; body: string },
  log: Attempt[],
): Promise<Attempt | undefined> {
  const alive = receivers.filter((r) => r.alive);
  const to = alive[Math.floor(Math.random() * alive.length)];
  if (!to) {
    noneAlive++;
    return undefined;
  }
  const attempt = { key, ...(await postSigned(to.port, body, SECRET)) };
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
    const attempt = await send(delivery, log);
    if (attempt && isAccepted(attempt)) return;
    if (Date.now() > giveUpAt) throw new Error(`${delivery.key} was never accepted`);
    await sleep(20 + Math.random() * 30);
  }
}
