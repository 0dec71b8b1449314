/**
 * The `watch` contract (test/stores/watch-contract.ts) on memoryStore, redisStore and postgresStore,
 * and what each server keeps: Redis's keys expiring after their tenant's last write (the failing
 * ones keepMs after, the summary keepSummaryMs after) and the cap per tenant, Postgres's table `<table>_watch` made as the store makes its other tables.
 */

import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { createReceiver } from '../../src/index.js';
import { memoryStore } from '../../src/stores/memory.js';
import { postgresStore, postgresStoreSql } from '../../src/stores/postgres.js';
import { watchTableOf } from '../../src/stores/postgres-table.js';
import { redisStore } from '../../src/stores/redis.js';
import type { IdempotencyStore } from '../../src/stores/types.js';
import type { AnswerNote, WatchBatch } from '../../src/watchdog/types.js';
import { createWatchdog } from '../../src/watchdog/index.js';
import { fixtureDelivery, SECRET } from '../helpers/deliveries.js';
import {
  dropTables,
  uniqueTable,
  useTestPostgres,
  type TestPostgres,
} from '../helpers/postgres.js';
import { useTestRedis, type TestRedis, keysMatching } from '../helpers/redis.js';
import { heldOf, requestFor } from './contract.js';
import { describeWatchContract } from './watch-contract.js';

const PREFIX = `schoolhooks-test:${randomUUID()}:`;
const T = Date.parse('2026-11-20T09:00:00.000Z');
let redis: TestRedis;
let client: Redis;
let database: TestPostgres;
let pool: pg.Pool;
const tables: string[] = [];

function table(): string {
  const name = uniqueTable('sh_watch');
  tables.push(name);
  return name;
}

beforeAll(async () => {
  redis = await useTestRedis();
  client = new Redis(redis.url);
  database = await useTestPostgres();
  pool = new pg.Pool({ connectionString: database.url, max: 10 });
  pool.on('error', () => {});
}, 60_000);

afterAll(async () => {
  if (client) {
    const keys = await keysMatching(client, `${PREFIX}*`);
    if (keys.length > 0) await client.del(...keys);
    client.disconnect();
  }
  await redis?.close();
  if (pool) {
    await dropTables(pool, tables);
    await pool.end();
  }
  await database?.close();
});

describeWatchContract(
  'memoryStore',
  async () => ({ store: memoryStore(), cleanup: async () => {} }),
  { reference: true },
);
/** The PTTL of the watch keys under `keyPrefix` of a tenant (a plain name, escaped as itself). */
async function redisLifetimes(keyPrefix: string, scope: string) {
  const base = `${keyPrefix}{watch:${scope}}:`;
  const failing: number[] = [];
  for (const end of ['watch-failing', 'watch-order', 'watch-succeeded']) {
    const ttl = await client.pttl(base + end);
    if (ttl !== -2) failing.push(ttl);
  }
  return { summary: await client.pttl(`${base}watch`), failing };
}

describeWatchContract(
  'redisStore',
  async () => {
    const prefix = `${PREFIX}${randomUUID()}:`;
    return {
      store: redisStore({ client, prefix }),
      cleanup: async () => {},
      lifetimes: (scope) => redisLifetimes(prefix, scope),
    };
  },
  { expiresOnServer: true },
);
describeWatchContract(
  'redisStore with a namespace',
  async () => {
    const namespace = randomUUID();
    return {
      store: redisStore({ client, prefix: PREFIX, namespace }),
      cleanup: async () => {},
      lifetimes: (scope) => redisLifetimes(`${PREFIX}${namespace}:`, scope),
    };
  },
  { expiresOnServer: true },
);
describeWatchContract(
  'postgresStore',
  async () => {
    const name = table();
    return {
      store: postgresStore({ pool, table: name }),
      cleanup: async () => {},
      // The rows not yet expired: what a read or a write still finds (the sweep deletes the rest).
      lifetimes: async (scope) => {
        const { rows } = await pool.query<{ tenant_row: boolean; ms: number }>(
          'SELECT tenant_row, (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::float8 AS ms ' +
            `FROM "${watchTableOf(name)}" WHERE scope = $1 AND expires_at > clock_timestamp()`,
          [scope],
        );
        return {
          summary: rows.find((row) => row.tenant_row)?.ms ?? -1,
          failing: rows.filter((row) => !row.tenant_row).map((row) => row.ms),
        };
      },
    };
  },
  { expiresOnServer: true },
);

const fail = (key: string, at: number, scope = '') => ({ scope, at, ok: false, key, event: 'E' });
const ok = (key: string, at: number, scope = ''): AnswerNote => ({
  scope,
  at,
  ok: true,
  key,
  event: 'E',
});
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * A postgresStore on table `name`, and a call of its `watch` with `notes` (reading tenant `read`
 * when given): an hour's keepMs, a day's keepSummaryMs, and `maxFailing` and `now` as given.
 */
function watchWriter(name: string, { maxFailing, now }: { maxFailing: number; now: number }) {
  const store = postgresStore({ pool, table: name });
  return (notes: AnswerNote[], read?: string) =>
    store.watch!({ notes, keepMs: HOUR_MS, keepSummaryMs: DAY_MS, maxFailing, now, read });
}

/** The deliveries that only succeeded, as the tenant row of table `name`'s watchdog table keeps them. */
async function storedSuccesses(name: string): Promise<unknown> {
  const { rows } = await pool.query<{ sent: string | null }>(
    `SELECT sent FROM "${watchTableOf(name)}" WHERE tenant_row`,
  );
  return JSON.parse(rows[0]?.sent ?? '[]');
}

/** The live rows of postgresStore table `name`'s watchdog table, the tenants' first. */
async function watchRows(name: string) {
  const { rows } = await pool.query<{ key: string; tenant_row: boolean }>(
    `SELECT key, tenant_row FROM "${watchTableOf(name)}" WHERE expires_at > clock_timestamp() ` +
      'ORDER BY tenant_row DESC, key',
  );
  return rows;
}

describe("redisStore's watch keys", () => {
  it('are four under the tenant hash tag, the failing and succeeded ones expiring keepMs after the last write and the summary keepSummaryMs after, with no more than maxFailing', async () => {
    const prefix = `${PREFIX}${randomUUID()}:`;
    const store = redisStore({ client, prefix });
    const keepMs = 60_000;
    const keepSummaryMs = 3_600_000;
    const notes = [0, 1, 2, 3, 4].map((n) => fail(`k${n}`, T + n, 'school-{1}%'));
    const successes = [5, 6, 7].map((n) => ({ ...fail(`s${n}`, T + n, 'school-{1}%'), ok: true }));
    await store.watch!({
      notes: [...notes, ...successes],
      keepMs,
      keepSummaryMs,
      maxFailing: 2,
      now: T + 7,
    });
    const keys = (await keysMatching(client, `${prefix}*`)).sort();
    expect(keys).toEqual(
      ['watch', 'watch-failing', 'watch-order', 'watch-succeeded'].map(
        (end) => `${prefix}{watch:school-%7B1%7D%25}:${end}`,
      ),
    );
    const [summary, ...failing] = keys;
    const summaryTtl = await client.pttl(summary!);
    expect(summaryTtl).toBeGreaterThan(keepSummaryMs - 5_000);
    expect(summaryTtl).toBeLessThanOrEqual(keepSummaryMs);
    for (const key of failing) {
      const ttl = await client.pttl(key);
      expect(ttl).toBeGreaterThan(keepMs - 5_000);
      expect(ttl).toBeLessThanOrEqual(keepMs);
    }
    expect(await client.hlen(`${prefix}{watch:school-%7B1%7D%25}:watch-failing`)).toBe(2);
    expect(await client.zcard(`${prefix}{watch:school-%7B1%7D%25}:watch-order`)).toBe(2);
    expect(
      await client.zrange(`${prefix}{watch:school-%7B1%7D%25}:watch-succeeded`, 0, -1),
    ).toEqual(['s6', 's7']);
  });

  it('take one script call per watch, whatever the tenants', async () => {
    const prefix = `${PREFIX}${randomUUID()}:`;
    const counting = new Redis(redis.url);
    const sent: string[] = [];
    const original = counting.sendCommand.bind(counting);
    counting.sendCommand = ((command: { name: string }) => {
      sent.push(command.name);
      return original(command as never);
    }) as typeof counting.sendCommand;
    try {
      const store = redisStore({ client: counting, prefix });
      await counting.ping();
      sent.length = 0;
      const notes = ['a', 'b', 'c'].map((tenant, i) => fail(`k${i}`, T + i, tenant));
      const state = await store.watch!({
        notes,
        keepMs: 60_000,
        keepSummaryMs: 60_000,
        maxFailing: 10,
        now: T,
        read: 'b',
      });
      expect(state?.failing.map((one) => one.key)).toEqual(['k1']);
      expect(sent.filter((name) => name !== 'info')).toEqual(['evalsha']);
    } finally {
      counting.disconnect();
    }
  });

  it.each([
    ['no keepMs', { keepMs: 0, keepSummaryMs: 60_000 }],
    ['a summary kept less long than its failing deliveries', { keepMs: 60_000, keepSummaryMs: 1 }],
  ])('refuses a batch it could not store with a ConfigError: %s', async (_, keep) => {
    const store = redisStore({ client, prefix: PREFIX });
    const error = await store.watch!({ notes: [], ...keep, maxFailing: 1, now: T }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe(new ConfigError('x').code);
  });
});

describe("postgresStore's watch table", () => {
  it('is <table>_watch, made on the first write, and in postgresStoreSql', async () => {
    const name = table();
    expect(postgresStoreSql({ table: name })).toContain(
      `CREATE TABLE IF NOT EXISTS "${name}_watch"`,
    );
    const store = postgresStore({ pool, table: name });
    // A read of a table no call has made finds nothing and makes nothing.
    expect(
      await store.watch!({
        notes: [],
        keepMs: 60_000,
        keepSummaryMs: 60_000,
        maxFailing: 5,
        now: T,
        read: '',
      }),
    ).toEqual({
      failing: [],
    });
    const exists = async () =>
      (await pool.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [watchTableOf(name)]))
        .rows[0]!.t;
    expect(await exists()).toBeNull();
    await store.watch!({
      notes: [fail('k', T)],
      keepMs: 60_000,
      keepSummaryMs: 60_000,
      maxFailing: 5,
      now: T,
    });
    expect(await exists()).toBe(watchTableOf(name));
    const { rows } = await pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${watchTableOf(name)}" WHERE expires_at <= clock_timestamp() + interval '60 seconds'`,
    );
    expect(rows[0]!.n).toBe('2');
  });

  it('is made apart from the others: a database made before the watchdog takes claims without it', async () => {
    const name = table();
    // The tables of a migration written before the watchdog: the keys' and the entities'.
    await pool.query(postgresStoreSql({ table: name }));
    await pool.query(`DROP TABLE "${watchTableOf(name)}"`);
    const store = postgresStore({ pool, table: name });
    const claim = await store.claim(requestFor('k'));
    expect(claim.state).toBe('claimed');
    await store.settle(heldOf(claim), 'complete');
    const exists = async () =>
      (await pool.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [watchTableOf(name)]))
        .rows[0]!.t;
    expect(await exists()).toBeNull();
    const state = await store.watch!({
      notes: [fail('k', T)],
      keepMs: 60_000,
      keepSummaryMs: 60_000,
      maxFailing: 5,
      now: T,
      read: '',
    });
    expect(state?.failing.map((one) => one.key)).toEqual(['k']);
    expect(await exists()).toBe(watchTableOf(name));
  });

  it('keeps the deliveries that only succeeded in the tenant row, not a row each', async () => {
    const name = table();
    const batch = watchWriter(name, { maxFailing: 1000, now: T + 3000 });
    await batch(Array.from({ length: 3000 }, (_, i) => ok(`key-${i}`, T + i)));
    await batch([fail('failed-once', T + 1), ok('failed-once', T + 2)]);
    const rows = await watchRows(name);
    // Before, each success was a row inserted and deleted 1 000 successes later.
    expect(rows).toHaveLength(1);
    expect(rows[0]!.tenant_row).toBe(true);
    // The latest 1 000 successes are remembered: a late failure of one of them is ignored,
    // one of an earlier success (forgotten past maxFailing) is not.
    const state = await batch([fail('key-2999', T + 10), fail('key-0', T - 1)], '');
    expect(state?.failing.map((one) => one.key)).toEqual(['key-0']);
  });

  it('reads a success row of the layout before, and moves it into the tenant row', async () => {
    const name = table();
    const write = watchWriter(name, { maxFailing: 5, now: T + 60_000 });
    await write([ok('other', T), ok('k', T + 20)]);
    // A delivery that only succeeded, as the layout before this one kept it: a row of its own
    // (here beside a later success of it in the tenant's row: the latest counts).
    await pool.query(
      `INSERT INTO "${watchTableOf(name)}" (scope, tenant_row, key, sent, success_at, expires_at) ` +
        `VALUES ('', false, 'k', $1, $2, clock_timestamp() + interval '1 hour')`,
      [JSON.stringify(['k', '']), T + 10],
    );
    // Its late failure is ignored, and its success is kept in the tenant row from then on.
    const state = await write([fail('k', T + 15)], '');
    expect(state?.failing).toEqual([]);
    expect((await watchRows(name)).map((row) => row.key)).toEqual(['']);
    expect(await storedSuccesses(name)).toEqual([
      ['other', T],
      ['k', T + 20],
    ]);
    expect((await write([fail('k', T + 19)], ''))?.failing).toEqual([]);
    expect((await write([fail('k', T + 21)], ''))?.failing.map((one) => one.key)).toEqual(['k']);
  });

  it("writes on when a tenant row's successes were changed by hand, forgetting them", async () => {
    const name = table();
    const write = watchWriter(name, { maxFailing: 5, now: T + 60_000 });
    await write([ok('k', T + 10)]);
    for (const sent of ['not json', '{"k": 1}', '[["k"]]', `[["k", "10"], [1, ${T + 10}]]`]) {
      await pool.query(`UPDATE "${watchTableOf(name)}" SET sent = $1 WHERE tenant_row`, [sent]);
      const state = await write([fail(`late-${sent}`, T + 5)], '');
      expect(state?.lastSuccessAt).toBe(T + 10);
      expect(await storedSuccesses(name)).toEqual([]);
    }
    const state = await write([fail('k', T + 5)], '');
    expect(state?.failing.map((one) => one.key)).toContain('k');
  });

  it('keeps two processes writing one tenant at once from losing an attempt', async () => {
    const name = table();
    const stores = [postgresStore({ pool, table: name }), postgresStore({ pool, table: name })];
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        stores[i % 2]!.watch!({
          notes: [fail('k', T + i)],
          keepMs: 60_000,
          keepSummaryMs: 60_000,
          maxFailing: 5,
          now: T + i,
        }),
      ),
    );
    const state = await stores[0]!.watch!({
      notes: [],
      keepMs: 60_000,
      keepSummaryMs: 60_000,
      maxFailing: 5,
      now: T + 10,
      read: '',
    });
    expect(state?.failing).toEqual([
      { key: 'k', event: 'E', firstAttemptAt: T, attemptsSeen: 10, lastAttemptAt: T + 9 },
    ]);
  });
});

describe.each([
  ['memoryStore', () => memoryStore()],
  ['redisStore', () => redisStore({ client, prefix: `${PREFIX}${randomUUID()}:` })],
  ['postgresStore', () => postgresStore({ pool, table: table() })],
] as const)('a receiver on %s', (_name, makeStore) => {
  it('writes its answers in one watch call at most once a second, never one a delivery', async () => {
    const store = makeStore();
    let calls = 0;
    const counted: IdempotencyStore = {
      ...store,
      watch: (batch) => {
        calls++;
        return store.watch!(batch);
      },
    };
    const receiver = createReceiver({ secret: SECRET, store: counted, logger: false });
    receiver.on('PaymentCompleted', () => {});
    const startedAt = Date.now();
    for (let i = 0; i < 60; i++) {
      const delivery = fixtureDelivery('PaymentCompleted');
      const answer = await receiver.handle({ method: 'POST', ...delivery });
      expect(answer.status).toBe(200);
    }
    const elapsed = Date.now() - startedAt;
    expect(calls).toBeLessThanOrEqual(Math.ceil(elapsed / 1000) + 1);
    // check() writes what is pending and reads, in one more call.
    const before = calls;
    const health = await createWatchdog({ receiver }).check();
    expect(calls).toBe(before + 1);
    expect(health).toMatchObject({ status: 'ok', atRisk: [] });
    expect(Date.parse(health.lastSuccessAt!)).toBeGreaterThanOrEqual(startedAt);
  });

  it("asks, in the receiver's batches and a watchdog's reads, to keep a summary past the disable span and failing deliveries past the retries", async () => {
    const store = makeStore();
    const batches: WatchBatch[] = [];
    const seen: IdempotencyStore = {
      ...store,
      watch: (batch) => {
        batches.push(batch);
        return store.watch!(batch);
      },
    };
    const receiver = createReceiver({ secret: SECRET, store: seen, logger: false });
    receiver.on('PaymentCompleted', () => {});
    const answer = await receiver.handle({
      method: 'POST',
      ...fixtureDelivery('PaymentCompleted'),
    });
    expect(answer.status).toBe(200);
    await createWatchdog({ receiver }).check();
    await createWatchdog({ store: seen }).check();
    expect(batches.length).toBeGreaterThanOrEqual(2);
    for (const batch of batches) {
      // docs/platform.md: no success for 14 days disables an endpoint; retries end 11 + 33 + 77
      // + 165 minutes after the first attempt.
      expect(batch.keepSummaryMs).toBeGreaterThan(14 * 24 * 3_600_000);
      expect(batch.keepMs).toBeGreaterThanOrEqual((11 + 33 + 77 + 165) * 60_000);
      expect(batch.keepMs).toBeLessThan(batch.keepSummaryMs);
    }
  });
});

describe("postgresStore's watch round trips", () => {
  it('writes a batch in two round trips on one client, and reads alone in one statement', async () => {
    const name = table();
    await pool.query(postgresStoreSql({ table: name }));
    const sent: string[] = [];
    const pooled: string[] = [];
    const listed = {
      query: (...args: unknown[]) => {
        pooled.push(String(args[0]));
        return (pool.query as (...a: unknown[]) => unknown).apply(pool, args);
      },
      async connect() {
        const one = await pool.connect();
        const { query, release } = one;
        const patched = one as unknown as { query: unknown; release: unknown };
        patched.query = (...args: unknown[]) => {
          sent.push(String(args[0]));
          return (query as (...a: unknown[]) => unknown).apply(one, args);
        };
        patched.release = (...args: unknown[]) => {
          patched.query = query;
          patched.release = release;
          return (release as (...a: unknown[]) => unknown).apply(one, args);
        };
        return one;
      },
    } as unknown as pg.Pool;
    const store = postgresStore({ pool: listed, table: name });
    // The first call checks the tables are there (on the pool), as a first claim does.
    await store.watch!({
      notes: [fail('k0', T, 'a')],
      keepMs: 60_000,
      keepSummaryMs: 60_000,
      maxFailing: 5,
      now: T,
    });
    sent.length = 0;
    pooled.length = 0;
    const notes = ['a', 'b', 'c'].flatMap((tenant) => [
      fail('k1', T, tenant),
      fail('k2', T, tenant),
    ]);
    const state = await store.watch!({
      notes,
      keepMs: 60_000,
      keepSummaryMs: 60_000,
      maxFailing: 5,
      now: T,
      read: 'b',
    });
    expect(state?.failing).toHaveLength(2);
    expect(sent).toHaveLength(2);
    expect(sent[0]).toMatch(/^BEGIN ISOLATION LEVEL READ COMMITTED; /);
    expect(sent[1]).toMatch(/; COMMIT$/);
    expect(pooled).toEqual([]);
    sent.length = 0;
    await store.watch!({
      notes: [],
      keepMs: 60_000,
      keepSummaryMs: 60_000,
      maxFailing: 5,
      now: T,
      read: 'a',
    });
    expect(sent).toEqual([]);
    expect(pooled).toHaveLength(1);
  });
});
