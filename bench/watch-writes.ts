/**
 * What a write of the watchdog's notes costs the store's server: batches of 1 000 answers (a
 * receiver writes one as soon as 1 000 wait, src/watchdog/answer-notes.ts), every answer a 2xx of
 * a delivery of its own (the common case: the store remembers each success, so another process's
 * late note of an earlier failure is ignored) or, with `--failing`, one in 20 answered 500. On
 * redisStore the time Redis spent in the watch script (`INFO commandstats`, `EVALSHA`); on
 * postgresStore the CPU of every `postgres` process of this machine (/proc) and the write's wall
 * time. 30 batches a round after 10 to warm up, the median of 3 rounds.
 *
 * `WATCH_BENCH_BASELINE=<checkout>` measures that checkout's stores too, in turns with this one's
 * (its `src/` run through tsx, as this one's is), and prints the ratio of each round: for a change
 * to the watch script or table, against the build before it in the same run.
 *
 * Run: `node --import tsx bench/watch-writes.ts [--failing]` (`REDIS_URL`, `DATABASE_URL` as in
 * reconcile-run.ts; a server that does not answer is left out with a note).
 * @module
 */

import { resolve } from 'node:path';
import process from 'node:process';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { IdempotencyStore } from '../src/stores/types.js';
import type { AnswerNote } from '../src/watchdog/types.js';
import { WATCHDOG_DEFAULTS } from '../src/defaults.js';
import { randomTag } from './bodies.js';
import { median, postgresCpuMs } from './measure.js';

const NOTES = 1000;
const WARM = 10;
const BATCHES = 30;
const ROUNDS = 3;
const FAIL_EVERY = process.argv.includes('--failing') ? 20 : 0;

/** The stores' factories of one checkout. */
interface Build {
  name: string;
  redisStore: (options: { client: Redis; prefix: string }) => IdempotencyStore;
  postgresStore: (options: { pool: pg.Pool; table: string }) => IdempotencyStore;
}

async function buildAt(name: string, root: string): Promise<Build> {
  const at = (file: string) => pathToFileURL(resolve(root, 'src/stores', file)).href;
  const redis = (await import(at('redis.ts'))) as Pick<Build, 'redisStore'>;
  const postgres = (await import(at('postgres.ts'))) as Pick<Build, 'postgresStore'>;
  return { name, redisStore: redis.redisStore, postgresStore: postgres.postgresStore };
}

/** Batch `n` of a round: NOTES answers of fresh keys, one tenant, in time order. */
function batchOf(tag: string, n: number, start: number) {
  const notes: AnswerNote[] = Array.from({ length: NOTES }, (_, i) => ({
    scope: 'school',
    at: start + n * NOTES + i,
    ok: FAIL_EVERY === 0 || i % FAIL_EVERY !== 0,
    key: `${tag}-b3c4-4d5e-8f60-${String(n * NOTES + i).padStart(12, '0')}`,
    event: 'UserSignedUp',
  }));
  const { keepFailingMs, keepSummaryMs, maxFailing } = WATCHDOG_DEFAULTS;
  return { notes, keepMs: keepFailingMs, keepSummaryMs, maxFailing, now: start + n * NOTES };
}

/** µs of server time (and of wall time) a note, over BATCHES batches after WARM. */
async function round(
  store: IdempotencyStore,
  serverMicros: () => Promise<number>,
): Promise<{ server: number; wall: number }> {
  const tag = randomTag();
  const start = Date.now();
  let server = 0;
  let wall = 0;
  for (let n = 0; n < WARM + BATCHES; n++) {
    const batch = batchOf(tag, n, start);
    const before = await serverMicros();
    const began = performance.now();
    await store.watch!(batch);
    if (n < WARM) continue;
    wall += (performance.now() - began) * 1000;
    server += (await serverMicros()) - before;
  }
  return { server: server / BATCHES / NOTES, wall: wall / BATCHES / NOTES };
}

async function measure(
  label: string,
  builds: Build[],
  storeOf: (build: Build) => IdempotencyStore,
  serverMicros: () => Promise<number>,
  serverWhat: string,
): Promise<void> {
  const rounds = new Map(
    builds.map((build) => [build.name, [] as { server: number; wall: number }[]]),
  );
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? builds : [...builds].reverse();
    for (const build of order)
      rounds.get(build.name)!.push(await round(storeOf(build), serverMicros));
  }
  for (const build of builds) {
    const all = rounds.get(build.name)!;
    const server = median(all.map((one) => one.server)).toFixed(2);
    const wall = median(all.map((one) => one.wall)).toFixed(2);
    console.log(
      `  ${label} (${build.name}): ${server} µs of ${serverWhat} and ${wall} µs of wall time a note`,
    );
  }
  if (builds.length === 2) {
    const [now, before] = builds.map((build) => rounds.get(build.name)!);
    const ratios = now!.map((one, i) => one.server / before![i]!.server);
    const each = ratios.map((ratio) => ratio.toFixed(2)).join(', ');
    console.log(
      `  ${label}: this build ÷ baseline, ${serverWhat}: ${median(ratios).toFixed(2)} (rounds ${each})`,
    );
  }
}

const builds = [await buildAt('this build', resolve(import.meta.dirname, '..'))];
const baseline = process.env.WATCH_BENCH_BASELINE;
if (baseline) builds.push(await buildAt('baseline', baseline));
const answers = FAIL_EVERY ? `one in ${FAIL_EVERY} a failure` : 'every one a success';
console.log(`watch writes: ${NOTES} notes a batch, ${answers}`);

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
try {
  await client.connect();
  const prefix = `schoolhooks-bench-watch:${randomTag()}:`;
  const evalshaMicros = async () => {
    const match = /cmdstat_evalsha:calls=\d+,usec=(\d+)/.exec(await client.info('commandstats'));
    return match ? Number(match[1]) : 0;
  };
  console.log('redisStore:');
  await measure(
    'redisStore',
    builds,
    (build) =>
      build.redisStore({ client, prefix: `${prefix}${build.name === 'baseline' ? 'b' : 'a'}:` }),
    evalshaMicros,
    'Redis time (EVALSHA)',
  );
  const keys = await client.keys(`${prefix}*`);
  for (let i = 0; i < keys.length; i += 1000) await client.unlink(...keys.slice(i, i + 1000));
} catch (error) {
  console.log(`redisStore: left out (${(error as Error).message})`);
} finally {
  client.disconnect();
}

const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  max: 4,
});
pool.on('error', () => {});
const tables: string[] = [];
try {
  await pool.query('SELECT 1');
  console.log('postgresStore:');
  await measure(
    'postgresStore',
    builds,
    (build) => {
      const table = `schoolhooks_bench_watch_${randomTag()}`;
      tables.push(table);
      return build.postgresStore({ pool, table });
    },
    async () => postgresCpuMs() * 1000,
    'Postgres CPU',
  );
} catch (error) {
  console.log(`postgresStore: left out (${(error as Error).message})`);
} finally {
  for (const table of tables) {
    await pool
      .query(`DROP TABLE IF EXISTS "${table}", "${table}_entities", "${table}_watch"`)
      .catch(() => {});
  }
  await pool.end();
}
