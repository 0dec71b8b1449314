/**
 * The ordering guard killed mid-handler: receivers in child processes, on `redisStore` and on
 * `postgresStore`, run a `latestOnly: true` handler of CourseProgressChanged, and are killed with
 * SIGKILL inside that handler, before or after it applies a state. A "platform" sends 30 states
 * of each of 40 entities (user + course + lesson), each entity's in a shuffled order, 12 at a
 * time, and resends each until it is answered 2xx. The receivers' lease is short, so the claim of
 * a killed one runs out during the test.
 *
 * The effects are recorded outside the receivers (a file per process on Redis, rows committed
 * with the claim on Postgres), and what must hold is read from them: for every entity, in the
 * order the effects were applied, the versions never go down (no older state applied after a
 * newer one), and the newest state is applied.
 *
 * The kills: for chosen states (seeded, CRASH_SEED), the first run stops before or
 * after applying and says so on stdout, and the test kills its process right there. Each chosen
 * state is the first its entity sends, and the newest or nearly so: the entity's older states
 * all come after it, while the killed claim holds, and once its lease ran out.
 */

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleScript, type BundledScript } from '../helpers/bundle.js';
import { inParallel } from '../helpers/in-parallel.js';
import {
  dropTables,
  uniqueTable,
  useTestPostgres,
  type TestPostgres,
} from '../helpers/postgres.js';
import { sleep, useTestRedis, type TestRedis, keysMatching } from '../helpers/redis.js';
import { seededRandom } from '../helpers/seeded-random.js';
import {
  countBy,
  isAccepted,
  postSigned,
  startChildReceiver,
  stopChildReceiver,
  type Answered,
  type ChildReceiver,
} from '../helpers/crash-platform.js';

const SECRET = '2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae';
const FIXTURE = fileURLToPath(new URL('./fixtures/ordering-receiver-process.ts', import.meta.url));
const TEMPLATE = new URL('../../fixtures/CourseProgressChanged.json', import.meta.url);
const ENTITIES = 40;
const STATES = 30;
const RECEIVERS = 4;
/**
 * Receivers started and listening, to take a killed one's place at once (a start takes 1–3 s on
 * a busy 2-core machine).
 */
const SPARES = 2;
/** Deliveries the platform has in flight at once. */
const CONCURRENCY = 12;
/** The receivers' leaseMs: a killed claim runs out during the test. */
const LEASE_MS = 1500;
const HANDLER_TIMEOUT_MS = 600;
/** The kills: one per chosen state, each point in turn. */
const POINTS = ['before-apply', 'after-apply'] as const;
const HOLDS = 12;
const SEED = Number(process.env['CRASH_SEED'] ?? 20);

type Point = (typeof POINTS)[number];
type StoreKind = 'redis' | 'postgres';

/** One state of one entity: a delivery of its own. */
interface State {
  readonly entity: string;
  /** Its timestamp, in ms: the version the ordering guard compares. */
  readonly version: number;
  /** 0 for the oldest of its entity, STATES - 1 for the newest. */
  readonly rank: number;
  readonly key: string;
  readonly body: string;
}

/** A state whose first run stops at `point`, for the test to kill its process there. */
interface Hold {
  readonly point: Point;
  readonly state: State;
}

/** One answer the platform got, or a connection a kill dropped. */
interface Attempt extends Answered {
  readonly state: State;
}

/** A kill inside a handler: the state it held, and the process. */
interface Kill {
  readonly point: Point;
  readonly state: State;
  readonly pid: number;
  readonly at: number;
}

/** One applied state, in the order the effects were applied. */
interface Effect {
  readonly entity: string;
  readonly version: number;
  readonly pid: number;
}

type ReceiverProcess = ChildReceiver;

/**
 * The platform's plan: ENTITIES × STATES deliveries in the order they are sent, and the states
 * held. Each entity starts at its own moment and sends its states in a shuffled order; the
 * entities of the holds start spread over the first half of the run, each with its held state.
 */
function plan(kind: StoreKind): { states: State[][]; sendOrder: State[]; holds: Hold[] } {
  const random = seededRandom(SEED);
  const { data } = JSON.parse(readFileSync(TEMPLATE, 'utf8')) as {
    data: Record<string, unknown>;
  };
  const course = 73120;
  // Whole seconds an hour ago: well within maxEventAgeMs, each state a second apart.
  const base = Math.floor(Date.now() / 1000) * 1000 - 3_600_000;
  const states = Array.from({ length: ENTITIES }, (_, e) => {
    const user = 4_100_000 + e;
    const lesson = 880_000 + e;
    const user0 = data['user'] as Record<string, unknown>;
    return Array.from({ length: STATES }, (_, rank): State => {
      const version = base + rank * 1000 + e;
      const key = `ordering-crash-${kind}-${e}-${rank}-${randomUUID()}`;
      const body = JSON.stringify({
        event: 'CourseProgressChanged',
        timestamp: new Date(version).toISOString(),
        idempotencyKey: key,
        data: {
          ...data,
          user: { ...user0, id: user },
          course: { ...(data['course'] as object), id: course },
          lessonId: lesson,
          status: rank === STATES - 1 ? 'Completed' : 'OnPractice',
        },
      });
      return { entity: `progress:${user}:${course}:${lesson}`, version, rank, key, body };
    });
  });
  const shuffled = <T>(items: readonly T[]): T[] => {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy;
  };
  // The held entities are the first HOLDS of a shuffled list; a third of their held states are
  // the newest (so it may be applied twice), the others among the newest third.
  const entityOrder = shuffled(states.map((_, e) => e));
  const holds: Hold[] = entityOrder.slice(0, HOLDS).map((e, i) => ({
    point: POINTS[i % POINTS.length]!,
    state: states[e]![i % 3 === 0 ? STATES - 1 : 20 + Math.floor(random() * 9)]!,
  }));
  // Each entity sends its states through half of the run, starting at a moment of its own; the
  // held ones start where a share of the others' deliveries has gone (3 % to 63 %), so the
  // kills are spread over the run.
  const heldEntities = new Map(holds.map((h) => [h.state.entity, h.state]));
  const schedule = (entity: State[], start: number): { state: State; at: number }[] => {
    const held = heldEntities.get(entity[0]!.entity);
    const order = shuffled(entity.filter((s) => s !== held));
    if (held) order.unshift(held);
    return order.map((state, i) => ({ state, at: start + (i / STATES) * 0.5 + random() * 0.01 }));
  };
  const others = states
    .filter((entity) => !heldEntities.has(entity[0]!.entity))
    .flatMap((entity) => schedule(entity, random() * 0.5))
    .sort((a, b) => a.at - b.at);
  const atShare = (share: number): number => others[Math.floor(share * others.length)]!.at;
  const held = states
    .filter((entity) => heldEntities.has(entity[0]!.entity))
    .flatMap((entity) => {
      const i = holds.findIndex((h) => h.state.entity === entity[0]!.entity);
      return schedule(entity, atShare(0.03 + (0.6 * i) / (HOLDS - 1)));
    });
  const sendOrder = [...others, ...held].sort((a, b) => a.at - b.at).map((s) => s.state);
  return { states, sendOrder, holds };
}

/** What a run of one store gives back to check. */
interface RunResult {
  readonly states: State[][];
  readonly holds: Hold[];
  readonly attempts: Attempt[];
  readonly kills: Kill[];
  /** Every applied state, in the order applied. */
  readonly effects: Effect[];
  readonly sentFor: number;
  readonly noneAlive: number;
}

/** The store a run uses, and how its receivers reach it and its effects are read. */
interface StoreUnderTest {
  readonly kind: StoreKind;
  /** The receivers' environment besides the common part. */
  env(): Record<string, string>;
  /** Every applied state, in the order applied. */
  effects(): Promise<Effect[]>;
}

let script: BundledScript;
let holdRoot: string;

beforeAll(async () => {
  script = await bundleScript(FIXTURE);
  holdRoot = await mkdtemp(join(tmpdir(), 'schoolhooks-ordering-crash-'));
}, 60_000);

afterAll(async () => {
  await script?.remove();
  if (holdRoot) await rm(holdRoot, { recursive: true, force: true });
});

/**
 * Runs the platform against RECEIVERS receivers on `store`, killing each one that holds, and
 * replacing it, until every state is accepted.
 */
async function runPlatform(store: StoreUnderTest): Promise<RunResult> {
  const { states, sendOrder, holds } = plan(store.kind);
  const holdDir = await mkdtemp(join(holdRoot, `${store.kind}-`));
  const env = {
    ...process.env,
    ...store.env(),
    STORE: store.kind,
    SECRET,
    LEASE_MS: String(LEASE_MS),
    HANDLER_TIMEOUT_MS: String(HANDLER_TIMEOUT_MS),
    HOLD: JSON.stringify(Object.fromEntries(holds.map((h) => [h.state.key, h.point]))),
    HOLD_DIR: holdDir,
  };
  const byKey = new Map(states.flat().map((s) => [s.key, s]));
  const receivers: ReceiverProcess[] = [];
  const spares: ReceiverProcess[] = [];
  const starting = new Set<Promise<unknown>>();
  const kills: Kill[] = [];
  const attempts: Attempt[] = [];
  let noneAlive = 0;

  // A hold comes only after a request, so once the receiver listens.
  const startReceiver = (): Promise<ReceiverProcess> =>
    startChildReceiver(script.file, env, (line, receiver) => {
      const held = /^hold (\S+) (\S+)$/.exec(line);
      if (held && receiver) kill(receiver, held[1] as Point, byKey.get(held[2]!)!);
    });

  /** A spare in place of a killed receiver, and a new spare (or receiver, with no spare left). */
  const replace = (): void => {
    const spare = spares.shift();
    if (spare) receivers.push(spare);
    const started = startReceiver().then(
      (receiver) => (spare ? spares : receivers).push(receiver),
      () => undefined,
    );
    starting.add(started);
    void started.finally(() => starting.delete(started));
  };

  /** Kills a receiver inside a handler, at the point its line names, and replaces it. */
  function kill(receiver: ReceiverProcess, point: Point, state: State): void {
    receiver.alive = false;
    receiver.child.kill('SIGKILL');
    kills.push({ point, state, pid: receiver.pid, at: Date.now() });
    replace();
  }

  const send = async (state: State): Promise<Attempt | undefined> => {
    const alive = receivers.filter((r) => r.alive);
    const to = alive[Math.floor(Math.random() * alive.length)];
    if (!to) {
      noneAlive++;
      return undefined;
    }
    const attempt = { state, ...(await postSigned(to.port, state.body, SECRET)) };
    attempts.push(attempt);
    return attempt;
  };

  /**
   * Sends until a receiver answers 200, 201 or 202 (`superseded` and `duplicate` are 200: the
   * platform stops there); a 409, a 5xx or a dropped connection is sent again a moment later.
   */
  const deliverUntilAccepted = async (state: State): Promise<void> => {
    const giveUpAt = Date.now() + 60_000;
    for (;;) {
      const attempt = await send(state);
      if (attempt && isAccepted(attempt)) return;
      if (Date.now() > giveUpAt) throw new Error(`${state.key} was never accepted`);
      await sleep(50 + Math.random() * 100);
    }
  };

  try {
    await Promise.all([
      ...Array.from({ length: RECEIVERS }, async () => receivers.push(await startReceiver())),
      ...Array.from({ length: SPARES }, async () => spares.push(await startReceiver())),
    ]);
    const startedAt = Date.now();
    await inParallel(sendOrder, CONCURRENCY, deliverUntilAccepted);
    const sentFor = Date.now() - startedAt;
    return {
      states,
      holds,
      attempts,
      kills,
      effects: await store.effects(),
      sentFor,
      noneAlive,
    };
  } finally {
    await Promise.allSettled([...starting]);
    await Promise.all([...receivers, ...spares].map(stopChildReceiver));
  }
}

/** What the effects show, per entity, and what the run's figures are. */
function examine(store: StoreKind, run: RunResult) {
  const { states, attempts, kills, effects } = run;
  // Each entity's applied versions, in the order applied; an older one after a newer one.
  const applied = new Map<string, number[]>();
  for (const effect of effects) {
    const list = applied.get(effect.entity) ?? [];
    list.push(effect.version);
    applied.set(effect.entity, list);
  }
  const olderAfterNewer: string[] = [];
  for (const [entity, versions] of applied) {
    let newest = -Infinity;
    for (const version of versions) {
      if (version < newest) olderAfterNewer.push(`${entity}: ${version} after ${newest}`);
      newest = Math.max(newest, version);
    }
  }
  const newestRuns = states.map((entity) => {
    const newest = entity[STATES - 1]!;
    return (applied.get(newest.entity) ?? []).filter((v) => v === newest.version).length;
  });
  const stateRuns = countBy(effects, (e) => `${e.entity} ${e.version}`);
  const appliedTwice = Object.values(stateRuns).filter((n) => n > 1).length;
  const resends = attempts.length - ENTITIES * STATES;
  // Older states of a killed claim's entity answered superseded after its kill.
  const supersededAfterKills = kills.map(
    (k) =>
      attempts.filter(
        (a) =>
          a.state.entity === k.state.entity &&
          a.state.version < k.state.version &&
          a.sentAt > k.at &&
          a.outcome === 'superseded',
      ).length,
  );
  // How long after its kill each held state was accepted (its own key's lease, on Redis).
  const heldAccepted = kills.map((k) => {
    const accepted = attempts.find((a) => a.state === k.state && a.sentAt > k.at && isAccepted(a));
    return accepted ? accepted.at - k.at : NaN;
  });
  console.info(
    [
      `ordering crash test on ${store} (seed ${SEED}): ${ENTITIES} entities × ${STATES} states, ` +
        `sent in ${run.sentFor} ms`,
      `kills inside a handler: ${kills.length} (${JSON.stringify(countBy(kills, (k) => k.point))}); ` +
        `no receiver running ${run.noneAlive} times`,
      `${attempts.length} deliveries sent (${resends} resends), ` +
        `${attempts.filter((a) => a.status === 'network').length} cut off by a kill`,
      `answers: ${JSON.stringify(countBy(attempts, (a) => `${a.status} ${a.outcome ?? ''}`))}`,
      `effects: ${effects.length}; states applied twice: ${appliedTwice}; ` +
        `newest applied twice: ${newestRuns.filter((n) => n > 1).length}, ` +
        `never: ${newestRuns.filter((n) => n === 0).length}; ` +
        `older applied after newer: ${olderAfterNewer.length}`,
      `older states superseded after each kill: ${JSON.stringify(supersededAfterKills)}; ` +
        `held states accepted after their kill (ms): ${JSON.stringify(heldAccepted)}`,
    ].join('\n'),
  );
  return { applied, olderAfterNewer, newestRuns, supersededAfterKills, heldAccepted };
}

/** The checks both stores share; what differs is said in each test. */
function expectOrdered(run: RunResult, result: ReturnType<typeof examine>): void {
  const { attempts, kills, holds } = run;
  // An entity's story: the ranks it applied (0 the oldest), and each delivery of it (its rank,
  // ms since the entity's first, the answer), with the kills in their place.
  const storyOf = (entity: string): string => {
    const first = attempts.find((a) => a.state.entity === entity)?.sentAt ?? 0;
    const rankOf = new Map(run.states.flat().map((s) => [s.version, s.rank]));
    const events = [
      ...attempts
        .filter((a) => a.state.entity === entity)
        .map((a) => ({ at: a.sentAt, text: `${a.state.rank} ${a.status} ${a.outcome ?? ''}` })),
      ...kills
        .filter((k) => k.state.entity === entity)
        .map((k) => ({ at: k.at, text: `killed ${k.point} of ${k.state.rank}` })),
    ].sort((a, b) => a.at - b.at);
    return JSON.stringify({
      applied: result.applied.get(entity)?.map((v) => rankOf.get(v)),
      sent: events.map((e) => `+${e.at - first} ${e.text}`),
    });
  };
  // No older state of an entity applied after a newer one.
  if (result.olderAfterNewer.length > 0) {
    console.info(storyOf(result.olderAfterNewer[0]!.split(': ')[0]!));
  }
  expect(result.olderAfterNewer).toEqual([]);
  // Every entity's newest state applied.
  expect(result.newestRuns.filter((n) => n === 0)).toEqual([]);
  // Every state accepted.
  const accepted = new Set(attempts.filter(isAccepted).map((a) => a.state.key));
  expect(accepted.size).toBe(ENTITIES * STATES);
  // Each kill was at a point a held state names, inside the handler of its first run; every
  // point was killed, and (but for a held state whose delivery a kill cut off and that came
  // again after a newer one) every held state.
  const named = new Set(holds.map((h) => `${h.point} ${h.state.key}`));
  expect(kills.filter((k) => !named.has(`${k.point} ${k.state.key}`))).toEqual([]);
  expect(new Set(kills.map((k) => k.point))).toEqual(new Set(POINTS));
  expect(kills.length).toBeGreaterThanOrEqual(Math.max(8, HOLDS - 2));
  // The guard answered older states superseded.
  expect(attempts.some((a) => a.outcome === 'superseded')).toBe(true);
}

describe('the ordering guard on redisStore, receivers killed mid-handler', () => {
  let redis: TestRedis;
  let client: Redis;
  let effectsDir: string;
  const prefix = `ordering-crash-${randomUUID()}:`;

  beforeAll(async () => {
    redis = await useTestRedis();
    client = new Redis(redis.url);
    effectsDir = await mkdtemp(join(tmpdir(), 'schoolhooks-ordering-effects-'));
  }, 60_000);

  afterAll(async () => {
    if (client) {
      const keys = await keysMatching(client, `${prefix}*`);
      for (let i = 0; i < keys.length; i += 500) await client.del(...keys.slice(i, i + 500));
      client.disconnect();
    }
    await redis?.close();
    if (effectsDir) await rm(effectsDir, { recursive: true, force: true });
  });

  it(`applies no older state after a newer one, and every newest, through ${HOLDS} kills`, async () => {
    const run = await runPlatform({
      kind: 'redis',
      env: () => ({ REDIS_URL: redis.url, PREFIX: prefix, EFFECTS_DIR: effectsDir }),
      async effects() {
        // Every line of every process's file, a killed one's too: what it wrote is applied.
        const lines: { effect: Effect; at: bigint }[] = [];
        for (const file of await readdir(effectsDir)) {
          for (const line of (await readFile(join(effectsDir, file), 'utf8')).split('\n')) {
            if (!line) continue;
            const [entity, version, pid, , at] = line.split(' ');
            lines.push({
              effect: { entity: entity!, version: Number(version), pid: Number(pid) },
              at: BigInt(at!),
            });
          }
        }
        lines.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
        return lines.map((l) => l.effect);
      },
    });
    const result = examine('redis', run);
    expectOrdered(run, result);
    // A state a killed process applied counts as applied; one it was killed before applying
    // was not applied by it.
    for (const kill of run.kills) {
      const byIt = run.effects.filter(
        (e) =>
          e.pid === kill.pid && e.entity === kill.state.entity && e.version === kill.state.version,
      );
      expect(byIt, `${kill.point} ${kill.state.key}`).toHaveLength(
        kill.point === 'after-apply' ? 1 : 0,
      );
    }
    // A newest state applied by a killed process is applied again once its lease ran out (the
    // same version is not superseded; the platform's resend runs it): at-least-once, in order.
    const newestAppliedAndKilled = run.kills.filter(
      (k) => k.point === 'after-apply' && k.state.rank === STATES - 1,
    );
    expect(newestAppliedAndKilled.length).toBeGreaterThan(0);
    for (const kill of newestAppliedAndKilled) {
      expect(result.applied.get(kill.state.entity)!.at(-1)).toBe(kill.state.version);
      expect(
        result.applied.get(kill.state.entity)!.filter((v) => v === kill.state.version).length,
      ).toBeGreaterThanOrEqual(2);
    }
  }, 150_000);
});

describe('the ordering guard on postgresStore, receivers killed mid-handler', () => {
  let database: TestPostgres;
  let pool: pg.Pool;
  const table = uniqueTable('sh_ordcrash');
  const effects = uniqueTable('sh_ordcrash_effects');

  beforeAll(async () => {
    database = await useTestPostgres();
    pool = new pg.Pool({ connectionString: database.url, max: 4 });
    pool.on('error', () => {});
    // `seq` is the order the rows were inserted in: two runs of one entity never overlap.
    await pool.query(
      `CREATE TABLE "${effects}" (seq bigserial PRIMARY KEY, entity text NOT NULL, ` +
        'version bigint NOT NULL, pid int NOT NULL)',
    );
  }, 60_000);

  afterAll(async () => {
    if (pool) {
      await dropTables(pool, [table, effects]);
      await pool.end();
    }
    await database?.close();
  });

  it(`applies no older state after a newer one, and every newest, through ${HOLDS} kills`, async () => {
    const run = await runPlatform({
      kind: 'postgres',
      env: () => ({ DATABASE_URL: database.url, TABLE: table, EFFECTS_TABLE: effects }),
      async effects() {
        // Committed rows only: a killed claim's insert rolled back with it.
        const { rows } = await pool.query<{ entity: string; version: string; pid: number }>(
          `SELECT entity, version, pid FROM "${effects}" ORDER BY seq`,
        );
        return rows.map((r) => ({ entity: r.entity, version: Number(r.version), pid: r.pid }));
      },
    });
    const result = examine('postgres', run);
    expectOrdered(run, result);
    // Nothing a killed claim inserted committed: each state is applied once, the newest too.
    for (const kill of run.kills) {
      const byIt = run.effects.filter(
        (e) =>
          e.pid === kill.pid && e.entity === kill.state.entity && e.version === kill.state.version,
      );
      expect(byIt, `${kill.point} ${kill.state.key}`).toEqual([]);
    }
    expect(result.newestRuns.filter((n) => n !== 1)).toEqual([]);
    const twice = Object.entries(countBy(run.effects, (e) => `${e.entity} ${e.version}`)).filter(
      ([, n]) => n > 1,
    );
    expect(twice).toEqual([]);
  }, 150_000);
});
