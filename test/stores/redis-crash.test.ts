/**
 * The Redis crash test: a persistent Redis of this test's own (AOF, fsync always) is killed with
 * SIGKILL twice while receiver processes on `redisStore` take about 200 deliveries a second, and
 * restarted on the same port and data directory. The "platform" resends every delivery until it
 * is answered 200/201/202. Every run of a handler is recorded in a file, outside Redis.
 *
 * What must hold: no handler ran twice, and once Redis was back no resend was answered 409
 * `in_flight` (a completion Redis missed is sent again with the same token when the client is
 * ready, so the resend finds the key done).
 */

import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleScript, type BundledScript } from '../helpers/bundle.js';
import { sleep, startRedisServer, type RedisServerProcess } from '../helpers/redis.js';
import { inParallel } from '../helpers/in-parallel.js';
import {
  countBy,
  isAccepted,
  postSigned,
  SameBytes,
  startChildReceiver,
  stopChildReceiver,
  type Answered,
  type ChildReceiver,
} from '../helpers/crash-platform.js';

const SECRET = '8c6976e5b5410415bde908bd4dee15dfb167a9c873fc4bb8a81f6f2ab448a918';
const FIXTURE = fileURLToPath(new URL('./fixtures/redis-receiver-process.ts', import.meta.url));
const RECEIVERS = 3;
/** Events sent, one every SEND_EVERY_MS: 3 000 at 200 a second, 15 s. */
const EVENTS = 3000;
const SEND_EVERY_MS = 5;
/**
 * When Redis is killed: once this share of the events has been sent (the second kill also waits
 * until Redis has been back for a second), and how long it stays down each time.
 */
const KILLS_AFTER = [0.3, 0.65];
const DOWN_MS = 700;

interface ReceiverProcess extends ChildReceiver {
  /** When its Redis client was ready, each time (ms since the epoch, its clock and ours). */
  readonly readyAt: number[];
}

/** One answer the platform got, or a connection that failed. */
interface Attempt extends Answered {
  readonly key: string;
}

/** One outage: when Redis was killed, started again, and seen answering again. */
interface Outage {
  readonly killedAt: number;
  readonly restartedAt: number;
  readonly backAt: number;
}

let redis: RedisServerProcess;
let script: BundledScript;
let effectsDir: string;
const prefix = `redis-crash-${randomUUID()}:`;
const receivers: ReceiverProcess[] = [];
/** When Redis was killed. */
const kills: number[] = [];
/** Deliveries whose answer came across a kill, sent again as if it had been lost. */
const lostAnswers = new Set<string>();

beforeAll(async () => {
  // Never the shared Redis: this one is killed.
  redis = await startRedisServer({
    args: ['--appendonly', 'yes', '--appendfsync', 'always'],
    // Its restarts come under load, on a machine that may be busy with more.
    readyTimeoutMs: 20_000,
  });
  script = await bundleScript(FIXTURE);
  effectsDir = await mkdtemp(join(tmpdir(), 'schoolhooks-redis-crash-'));
  await Promise.all(
    Array.from({ length: RECEIVERS }, async () => receivers.push(await startReceiver())),
  );
}, 60_000);

afterAll(async () => {
  await Promise.all(receivers.map(stopChildReceiver));
  await redis?.close();
  await script?.remove();
  if (effectsDir) await rm(effectsDir, { recursive: true, force: true });
});

describe('redisStore when Redis is killed under load', () => {
  it(`runs each of ${EVENTS} handlers once through ${KILLS_AFTER.length} kills of Redis`, async () => {
    const keys = Array.from({ length: EVENTS }, (_, i) => `redis-crash-${i}-${randomUUID()}`);
    const attempts: Attempt[] = [];
    const outages: Outage[] = [];
    const startedAt = Date.now();
    // How late this process's timers fire: the schedule above is only as good as that.
    let lag = 0;
    let tick = Date.now();
    const lagMonitor = setInterval(() => {
      lag = Math.max(lag, Date.now() - tick - 50);
      tick = Date.now();
    }, 50);
    let sent = 0;
    const killer = (async () => {
      for (const share of KILLS_AFTER) {
        const after = (outages.at(-1)?.backAt ?? 0) + 1000;
        while (sent < share * EVENTS || Date.now() < after) await sleep(10);
        const killedAt = Date.now();
        kills.push(killedAt);
        await redis.kill();
        await sleep(DOWN_MS);
        // Same port, same data directory: it comes back with what its AOF holds.
        const restartedAt = Date.now();
        await redis.start();
        outages.push({ killedAt, restartedAt, backAt: Date.now() });
      }
    })();
    // Open loop, as the platform sends: one new event every SEND_EVERY_MS, whatever the answers.
    await Promise.all(
      keys.map(async (key, i) => {
        await sleep(startedAt + i * SEND_EVERY_MS - Date.now());
        sent++;
        await deliverUntilAccepted(delivery(key), attempts);
      }),
    );
    await killer;
    clearInterval(lagMonitor);
    // Each receiver says when its client is connected again: wait for the last of them.
    const lastRestart = outages.at(-1)?.restartedAt ?? 0;
    const reconnected = (): boolean =>
      receivers.every((r) => r.readyAt.some((at) => at >= lastRestart));
    for (const giveUpAt = Date.now() + 20_000; !reconnected() && Date.now() < giveUpAt;) {
      await sleep(20);
    }
    const sentFor = Date.now() - startedAt;

    const runs = await readKeys('runs');
    const failedCompletions = await readKeys('failed completions');
    const twice = keys.filter((key) => (runs.get(key) ?? 0) > 1);
    const never = keys.filter((key) => !runs.has(key));
    const inFlight = attempts.filter((a) => a.status === 409);
    // Sent after an outage, once Redis was started again (and until the next kill).
    const back = (a: Attempt): boolean =>
      outages.some(
        (o, i) => a.sentAt >= o.restartedAt && a.sentAt < (outages[i + 1]?.killedAt ?? Infinity),
      );
    // When every receiver was connected to Redis again after each outage: from then on (and a
    // round trip more, for the completions they send again on connecting) no resend may be 409.
    const reconnectedAt = outages.map((o) =>
      Math.max(...receivers.map((r) => r.readyAt.find((at) => at >= o.restartedAt) ?? Infinity)),
    );
    const reconnecting = (a: Attempt): boolean =>
      outages.some((o, i) => a.sentAt >= o.killedAt && a.sentAt < reconnectedAt[i]! + 100);
    const inFlightAfterBack = inFlight.filter((a) => !reconnecting(a));
    const unavailable = attempts.filter((a) => a.status === 503);
    const accepted = attempts.filter(isAccepted);
    const resends = attempts.length - EVENTS;
    // What the deliveries whose answer was taken as lost got when sent again.
    const lostResends = attempts.filter(
      (a) => lostAnswers.has(a.key) && !kills.some((k) => k >= a.sentAt && k <= a.at) && back(a),
    );
    const resentAfterBack = attempts.filter(
      (a) => back(a) && attempts.some((b) => b.key === a.key && b.sentAt < a.sentAt),
    );
    console.info(
      [
        `redis crash test: ${EVENTS} events in ${sentFor} ms, Redis killed ${outages.length} times, ` +
          `started again after ${outages.map((o) => o.restartedAt - o.killedAt).join(', ')} ms, ` +
          `answering PING ${outages.map((o) => o.backAt - o.restartedAt).join(', ')} ms later, ` +
          `every receiver connected again ${outages.map((o, i) => reconnectedAt[i]! - o.restartedAt).join(', ')} ms after the restart`,
        `${attempts.length} deliveries sent (${resends} resends, ${resentAfterBack.length} ` +
          `after Redis was back), ${accepted.length} accepted`,
        `answers: ${JSON.stringify(countBy(attempts, (a) => `${a.status} ${a.outcome ?? ''}`))}`,
        `${unavailable.length} answered 503, ${inFlight.length} answered 409 ` +
          `(${inFlightAfterBack.length} once every receiver was connected to it again)`,
        `completions Redis missed: ${failedCompletions.size}; answers taken as lost and sent ` +
          `again: ${lostAnswers.size}, answered ${JSON.stringify(countBy(lostResends, (a) => `${a.status} ${a.outcome ?? ''}`))}`,
        `handlers run twice: ${twice.length}, never: ${never.length}; timers up to ${lag} ms late`,
      ].join('\n'),
    );

    // Events sent once more after everything (those whose completion Redis missed, and more):
    // every one a duplicate.
    const sample = new Set([...failedCompletions.keys(), ...lostAnswers, ...keys.slice(0, 300)]);
    const again: Attempt[] = [];
    await inParallel([...sample], 30, (key) => deliverUntilAccepted(delivery(key), again));
    // (A connection that failed is sent again, as the platform would.)
    const answeredAgain = again.filter((a) => a.status !== 'network');
    const storyOf = (key: string): string =>
      JSON.stringify(
        attempts
          .filter((a) => a.key === key)
          .map((a) => `${a.sentAt - startedAt}+${a.at - a.sentAt} ${a.status} ${a.outcome ?? ''}`),
      );
    const unaccepted = keys.filter((key) => !attempts.some((a) => a.key === key && isAccepted(a)));
    // What went wrong, if anything did: the stories of the first few.
    const wrong = [...unaccepted, ...twice, ...inFlight.map((a) => a.key)];
    if (wrong.length > 0) console.info(wrong.slice(0, 5).map(storyOf));
    expect(unaccepted).toEqual([]);
    expect(countBy(answeredAgain, (a) => `${a.status} ${a.outcome ?? ''}`)).toEqual({
      '200 duplicate': sample.size,
    });
    expect(outages).toHaveLength(KILLS_AFTER.length);
    expect(reconnectedAt.every(Number.isFinite)).toBe(true);
    expect(twice).toEqual([]);
    expect(never).toEqual([]);
    // The kills were felt: deliveries were answered 503 while Redis was down.
    expect(unavailable.length).toBeGreaterThan(0);
    // No 409 once every receiver was connected to Redis again. (Before that, a resend that
    // reaches one process while the process holding its unfinished completion is still
    // reconnecting is 409 for that moment: ioredis's reconnect delay.)
    expect(inFlightAfterBack).toEqual([]);
    // Kills landed between a handler's effect and its completion (every such event is in the
    // last pass above: a duplicate). Those whose 200 was taken as lost were sent again once
    // Redis was back: each was a duplicate.
    expect(failedCompletions.size).toBeGreaterThan(0);
    const missedAndResent = [...failedCompletions.keys()].filter((key) => lostAnswers.has(key));
    for (const key of missedAndResent) {
      // Every answer after the first accepted one is a duplicate, however long it took (on a
      // loaded machine a resend may be answered only after the next kill), and there is one.
      const [, ...resent] = attempts
        .filter((a) => a.key === key && isAccepted(a))
        .sort((a, b) => a.sentAt - b.sentAt);
      expect(resent.length, storyOf(key)).toBeGreaterThan(0);
      expect(
        resent.map((a) => a.outcome),
        storyOf(key),
      ).toEqual(resent.map(() => 'duplicate'));
    }
    // Every event was accepted exactly once... or more, as duplicates of a processed one.
    expect(new Set(accepted.map((a) => a.key)).size).toBe(EVENTS);
  }, 120_000);
});

/**
 * How many times each key is written in the receivers' files of one kind: `.txt` for the runs of
 * its handler, `.completions.txt` for its completions Redis did not take.
 */
async function readKeys(kind: 'runs' | 'failed completions'): Promise<Map<string, number>> {
  const runs = new Map<string, number>();
  for (const file of await readdir(effectsDir)) {
    if (file.endsWith('.completions.txt') !== (kind === 'failed completions')) continue;
    for (const key of (await readFile(join(effectsDir, file), 'utf8')).split('\n')) {
      if (key) runs.set(key, (runs.get(key) ?? 0) + 1);
    }
  }
  return runs;
}

async function startReceiver(): Promise<ReceiverProcess> {
  const readyAt: number[] = [];
  const env = {
    ...process.env,
    REDIS_URL: redis.url,
    SECRET,
    PREFIX: prefix,
    EFFECTS_DIR: effectsDir,
  };
  const started = await startChildReceiver(script.file, env, (line) => {
    const ready = /^ready (\d+)$/.exec(line);
    if (ready) readyAt.push(Number(ready[1]));
  });
  return Object.assign(started, { readyAt });
}

/** The platform's delivery of one event: the same bytes on every resend. */
const deliveries = new SameBytes();
const delivery = (key: string) => deliveries.of(key);

async function send(
  { key, body }: { key: string; body: string },
  log: Attempt[],
): Promise<Attempt> {
  const to = receivers[Math.floor(Math.random() * receivers.length)]!;
  const attempt = { key, ...(await postSigned(to.port, body, SECRET)) };
  log.push(attempt);
  return attempt;
}

/**
 * Sends to a random receiver until one answers 200, 201 or 202 (the platform's retries, sooner),
 * for at most 60 s (far less than leaseMs: a key held for its lease is never accepted).
 */
async function deliverUntilAccepted(
  delivery: { key: string; body: string },
  log: Attempt[],
): Promise<void> {
  const giveUpAt = Date.now() + 60_000;
  for (let wait = 200; ; wait = Math.min(wait * 2, 1600)) {
    const attempt = await send(delivery, log);
    // An answer that came across a kill of Redis is taken as lost on the way (its completion
    // may not have reached Redis): the platform sends it again, which must be a duplicate.
    if (isAccepted(attempt)) {
      if (!kills.some((k) => k >= attempt.sentAt && k <= attempt.at)) return;
      lostAnswers.add(delivery.key);
    }
    // Given up: the test names it with its story.
    if (Date.now() > giveUpAt) return;
    // The platform waits minutes, longer each time; here 200 ms doubling up to 1.6 s.
    await sleep(wait * (0.75 + Math.random() / 2));
  }
}
