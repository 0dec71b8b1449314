/**
 * postgresStore's rules one at a time, each against its near misses, on a real PostgreSQL:
 * table names, lease lengths, the sweep's batches and pace, locks per table, a claim that ends
 * before its session does, a caller that gave up, and the errors that name what failed.
 * (Written for the survivors of its mutation run: docs/maintainers/mutation-testing.md.)
 */

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ConfigError, StoreUnavailableError } from '../../src/errors.js';
import { postgresStore, postgresStoreSql } from '../../src/stores/postgres.js';
import { entityTableOf } from '../../src/stores/postgres-table.js';
import type { ClaimRequest, IdempotencyStore } from '../../src/stores/types.js';
import { sleep } from '../helpers/redis.js';
import { usePostgresPool } from '../helpers/postgres.js';
import { failureOf } from '../helpers/failure-of.js';
import { heldOf, requestFor } from './contract.js';

const postgres = usePostgresPool('sh_rules');
const table = () => postgres.table();

/** `request` claimed and given back at once (the store has made its table, and swept). */
async function claimAndRelease(store: IdempotencyStore, request: ClaimRequest): Promise<void> {
  await store.settle(heldOf(await store.claim(request)), 'release');
}

async function count(name: string): Promise<number> {
  const { rows } = await postgres.pool.query<{ n: string }>(`SELECT count(*) AS n FROM "${name}"`);
  return Number(rows[0]!.n);
}

/** `n` keys that expired an hour ago, written straight into the table. */
async function insertExpired(name: string, n: number, prefix: string): Promise<void> {
  await postgres.pool.query(
    `INSERT INTO "${name}" (key, fingerprint, expires_at) ` +
      `SELECT $1 || g, 'fp', now() - interval '1 hour' FROM generate_series(1, $2::int) g`,
    [prefix, n],
  );
}

/** Waits until the count stops changing for a moment, and gives it. */
async function settledCount(name: string): Promise<number> {
  let last = -1;
  for (;;) {
    await sleep(150);
    const now = await count(name);
    if (now === last) return now;
    last = now;
  }
}

describe('postgresStore table names', () => {
  it('refuses a schema.table with one part that is not an identifier, naming the factory', () => {
    for (const bad of ['public.a-b', 'a-b.deliveries']) {
      expect(() => postgresStoreSql({ table: bad }), bad).toThrow(
        /^postgresStoreSql: table must be a name or schema\.name/,
      );
      expect(() => postgresStore({ pool: postgres.pool, table: bad }), bad).toThrow(
        /^postgresStore: table must be a name or schema\.name/,
      );
    }
  });

  it('names the expiry index after the table, in its schema, cut to 63 characters', () => {
    expect(postgresStoreSql({ table: 'public.deliveries' })).toContain(
      'CREATE INDEX IF NOT EXISTS "deliveries_expires_at" ON "public"."deliveries" (expires_at);',
    );
    const long = 'd'.repeat(60);
    expect(postgresStoreSql({ table: long })).toContain(
      `CREATE INDEX IF NOT EXISTS "${`${long}_expires_at`.slice(0, 63)}" ON "${long}"`,
    );
  });

  it('puts the entities of the ordering guard in a table of their own beside it, in its schema', () => {
    const sql = postgresStoreSql({ table: 'public.deliveries' });
    expect(sql).toContain('CREATE TABLE IF NOT EXISTS "public"."deliveries_entities" (');
    expect(sql).toContain(
      'CREATE INDEX IF NOT EXISTS "deliveries_entities_expires_at" ON "public"."deliveries_entities" (expires_at);',
    );
    // Two long names that Postgres would cut to one (63 characters) still get two tables.
    const [a, b] = ['e'.repeat(60) + 'a', 'e'.repeat(60) + 'b'];
    const [ea, eb] = [entityTableOf(a), entityTableOf(b)];
    expect(ea).not.toBe(eb);
    for (const name of [ea, eb]) {
      expect(name.length).toBeLessThanOrEqual(63);
      expect(name).toMatch(/^e+_[0-9a-f]{8}_entities$/);
    }
    expect(postgresStoreSql({ table: a })).toContain(`CREATE TABLE IF NOT EXISTS "${ea}" (`);
    expect(entityTableOf('deliveries')).toBe('deliveries_entities');
    // A name whose `_entities` table is exactly 63 characters keeps it whole.
    expect(entityTableOf('f'.repeat(54))).toBe(`${'f'.repeat(54)}_entities`);
    expect(entityTableOf('f'.repeat(55))).toMatch(/^f{45}_[0-9a-f]{8}_entities$/);
  });

  it('creates the expiry index with the table', async () => {
    const name = table();
    const store = postgresStore({ pool: postgres.pool, table: name });
    await claimAndRelease(store, requestFor('k'));
    const { rows } = await postgres.pool.query<{ indexname: string }>(
      'SELECT indexname FROM pg_indexes WHERE tablename = $1',
      [name],
    );
    expect(rows.map((row) => row.indexname)).toContain(`${name}_expires_at`);
  });

  it('lets stores made at once create one table: none of them fails', async () => {
    const name = table();
    const stores = Array.from({ length: 8 }, () =>
      postgresStore({ pool: postgres.pool, table: name }),
    );
    const results = await Promise.all(stores.map((store, i) => store.claim(requestFor(`k${i}`))));
    expect(results.map((result) => result.state)).toEqual(Array(8).fill('claimed'));
    await Promise.all(stores.map((store, i) => store.settle(heldOf(results[i]!), 'release')));
  });
});

describe('postgresStore table creation', () => {
  /** The test pool, but the table's DDL answers with `fail()` (an error, or undefined: run it). */
  function creatingPool(fail: () => Error | undefined): pg.Pool {
    return {
      query: (text: unknown, ...rest: unknown[]) => {
        const error = typeof text === 'string' && text.startsWith('CREATE') ? fail() : undefined;
        if (error !== undefined) return Promise.reject(error);
        return (postgres.pool.query as (...args: unknown[]) => unknown)(text, ...rest);
      },
      connect: () => postgres.pool.connect(),
    } as unknown as pg.Pool;
  }

  // All three come from CREATE TABLE IF NOT EXISTS racing another session (42710: "type … already
  // exists", for the table's row type).
  it.each(['23505', '42P07', '42710'])(
    'takes a creation that lost a race to another session (%s) as the table made',
    async (code) => {
      const name = table();
      await postgres.pool.query(postgresStoreSql({ table: name }));
      const lost = Object.assign(new Error('duplicate'), { code });
      const store = postgresStore({ pool: creatingPool(() => lost), table: name });
      await claimAndRelease(store, requestFor('k'));
    },
  );

  it('tries the creation again on the next claim after one that failed', async () => {
    const name = table();
    let creations = 0;
    const down = Object.assign(new Error('the database is starting up'), { code: '57P03' });
    const store = postgresStore({
      pool: creatingPool(() => (++creations === 1 ? down : undefined)),
      table: name,
    });
    const failure = await failureOf(store.claim(requestFor('k')));
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect((failure.cause as { code?: unknown }).code).toBe('57P03');
    expect(failure.message).toMatch(/^Postgres claim failed: the database is starting up/);
    await claimAndRelease(store, requestFor('k'));
    expect(creations).toBe(2);
  });
});

describe('postgresStore settings', () => {
  it('refuses a lease that is not a positive finite number of ms, and takes 1 ms', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    for (const leaseMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      const failure = await failureOf(store.claim(requestFor('k', { leaseMs })));
      expect(failure, String(leaseMs)).toBeInstanceOf(ConfigError);
      expect(failure.message).toMatch(
        /^postgresStore: leaseMs must be a positive number of milliseconds/,
      );
    }
    await claimAndRelease(store, requestFor('k', { leaseMs: 1 }));
  });

  it('refuses a version that is not a finite number of ms, naming versionMs, and takes any finite one', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const at = (versionMs: number) =>
      requestFor('k', { version: { entity: 'invoice:77', versionMs } });
    for (const versionMs of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      const error = await failureOf(store.claim(at(versionMs)));
      expect(error, String(versionMs)).toBeInstanceOf(ConfigError);
      expect(error.message).toBe(
        'postgresStore: versionMs must be a finite number of milliseconds',
      );
    }
    // Written into the lock's query as a literal: any finite number is one Postgres reads.
    for (const versionMs of [-1, 0, 1.5, 1e21, 5e-324, Number.MAX_VALUE]) {
      await claimAndRelease(store, at(versionMs));
    }
  });

  it('names connectTimeoutMs in its setup error', () => {
    for (const connectTimeoutMs of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => postgresStore({ pool: postgres.pool, connectTimeoutMs })).toThrow(
        /^postgresStore: connectTimeoutMs must be a positive number/,
      );
    }
  });
});

describe('postgresStore sweep', () => {
  it('deletes expired keys in batches of 500 until fewer are left, up to 10 batches a sweep', async () => {
    const name = table();
    await postgres.pool.query(postgresStoreSql({ table: name }));
    await insertExpired(name, 1200, 'a');
    // A new store sweeps on its first claim: three batches (500, 500, 200) take them all.
    const store = postgresStore({ pool: postgres.pool, table: name });
    await claimAndRelease(store, requestFor('live'));
    expect(await settledCount(name)).toBe(0);

    await insertExpired(name, 5600, 'b');
    const next = postgresStore({ pool: postgres.pool, table: name });
    await claimAndRelease(next, requestFor('live'));
    // Ten batches of 500 at the most: 600 wait for the next sweep.
    expect(await settledCount(name)).toBe(600);
  });

  it('sweeps at most once a minute per store', async () => {
    const name = table();
    const store = postgresStore({ pool: postgres.pool, table: name });
    await claimAndRelease(store, requestFor('a'));
    await settledCount(name);
    await insertExpired(name, 10, 'late');
    await claimAndRelease(store, requestFor('b'));
    expect(await settledCount(name)).toBe(10);
  });
});

describe('postgresStore claims', () => {
  it('keeps the locks of two tables apart: one key claimed in each at once', async () => {
    const first = postgresStore({ pool: postgres.pool, table: table() });
    const second = postgresStore({ pool: postgres.pool, table: table() });
    const a = heldOf(await first.claim(requestFor('same-key')));
    const b = await second.claim(requestFor('same-key'));
    expect(b.state).toBe('claimed');
    await first.settle(a, 'release');
    await second.settle(heldOf(b), 'release');
  });

  it('keeps the entity locks of two tables apart: one entity claimed in each at once', async () => {
    const stores = [table(), table()].map((name) =>
      postgresStore({ pool: postgres.pool, table: name }),
    );
    const request = requestFor('entity-key', { version: { entity: 'invoice:1', versionMs: 1 } });
    const claims = [];
    for (const store of stores) {
      const claim = await store.claim(request);
      expect(claim).toMatchObject({ state: 'claimed', superseded: false });
      claims.push({ store, claim: heldOf(claim) });
    }
    for (const { store, claim } of claims) await store.settle(claim, 'release');
  });

  it('completes only the key a token was given for', async () => {
    const name = table();
    const store = postgresStore({ pool: postgres.pool, table: name });
    const result = heldOf(await store.claim(requestFor('mine')));
    // The token of 'mine' in a claim of another key's request: not the claim it was given for.
    await store.settle({ ...result, request: requestFor('other') }, 'complete');
    await store.settle({ ...result, request: requestFor('other') }, 'release');
    expect(await count(name)).toBe(0);
    expect(await store.claim(requestFor('mine'))).toEqual({ state: 'in_flight', held: 'key' });
    await store.settle(result, 'complete');
    const { rows } = await postgres.pool.query<{ key: string }>(`SELECT key FROM "${name}"`);
    expect(rows).toEqual([{ key: 'mine' }]);
  });

  it('ignores the abandon of a claim that was completed already', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const result = heldOf(await store.claim(requestFor('k')));
    await store.settle(result, 'complete');
    expect(() => result.transaction?.abandon()).not.toThrow();
    expect(await store.claim(requestFor('k'))).toEqual({ state: 'done', fingerprint: 'fp' });
  });

  it('waits for the session of an abandoned claim to end, then claims the key', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table(), connectTimeoutMs: 4000 });
    await claimAndRelease(store, requestFor('warm'));
    const first = heldOf(await store.claim(requestFor('k', { leaseMs: 60_000 })));
    first.transaction?.abandon();
    const startedAt = Date.now();
    // The abandoned session still holds the lock for a moment: not in_flight, and not the
    // fallback wait of connectTimeoutMs / 2 either (the session's end is heard).
    const second = await store.claim(requestFor('k', { leaseMs: 60_000 }));
    expect(second.state).toBe('claimed');
    expect(Date.now() - startedAt).toBeLessThan(1500);
    await store.settle(heldOf(second), 'release');
  });

  it('returns a pooled client without the listeners it added, claim after claim', async () => {
    const one = new pg.Pool({ connectionString: postgres.url, max: 1 });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const store = postgresStore({ pool: one, table: table() });
      for (let i = 0; i < 15; i++) {
        await store.settle(heldOf(await store.claim(requestFor(`k${i}`))), 'complete');
        // A claim that takes nothing gives its client back too.
        expect((await store.claim(requestFor(`k${i}`))).state).toBe('done');
      }
      const client = await one.connect();
      expect(client.listenerCount('error')).toBeLessThanOrEqual(1);
      client.release();
      await sleep(10);
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
      await one.end();
    }
  });
});

describe('postgresStore failures', () => {
  it('sends nothing more once the caller was told the claim timed out', async () => {
    const name = table();
    await postgres.pool.query(postgresStoreSql({ table: name }));
    const sent: string[] = [];
    // A pool whose connections come late: the claim's deadline passes while it waits.
    const slow = {
      query: postgres.pool.query.bind(postgres.pool),
      async connect() {
        await sleep(300);
        const client = await postgres.pool.connect();
        const query = client.query.bind(client) as (...args: unknown[]) => unknown;
        (client as unknown as { query: (...args: unknown[]) => unknown }).query = (
          ...args: unknown[]
        ) => {
          sent.push(String(args[0]));
          return query(...args);
        };
        return client;
      },
    } as unknown as pg.Pool;
    const store = postgresStore({ pool: slow, table: name, connectTimeoutMs: 100 });
    const failure = await failureOf(store.claim(requestFor('k')));
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect(failure.message).toMatch(/^Postgres did not answer claim within 100 ms/);
    await sleep(600);
    expect(sent).toEqual([]);
    // And the key is free: nothing holds its lock.
    const other = postgresStore({ pool: postgres.pool, table: name });
    await claimAndRelease(other, requestFor('k'));
  });

  it('fails a claim whose statement fails, closing its client rather than pooling it', async () => {
    const name = table();
    const store = postgresStore({ pool: postgres.pool, table: name });
    await claimAndRelease(store, requestFor('a'));
    await postgres.pool.query(`DROP TABLE "${name}"`);
    const failure = await failureOf(store.claim(requestFor('b')));
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect((failure.cause as { code?: unknown }).code).toBe('42P01');
    expect(failure.message).toMatch(/^Postgres claim failed: /);
    // The pool still serves clean clients: none is left inside a failed transaction.
    for (let i = 0; i < 5; i++) await postgres.pool.query('SELECT 1');
  });

  it('names the commit in the error of a completion whose connection died', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const result = heldOf(await store.claim(requestFor('k')));
    const pid = (result.transaction!.client as unknown as { processID: number }).processID;
    await postgres.pool.query('SELECT pg_terminate_backend($1)', [pid]);
    const failure = await failureOf(store.settle(result, 'complete'));
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect(failure.message).toMatch(/^Postgres commit failed: /);
  });

  it('names the rollback in the error of a release whose connection died', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const result = heldOf(await store.claim(requestFor('k')));
    const pid = (result.transaction!.client as unknown as { processID: number }).processID;
    await postgres.pool.query('SELECT pg_terminate_backend($1)', [pid]);
    const failure = await failureOf(store.settle(result, 'release'));
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect(failure.message).toMatch(/^Postgres rollback failed: /);
  });
});

describe("postgresStore's records, in the key's transaction", () => {
  const RECORD = '~["record",null,"invoice:41"]';
  const WEBHOOK = { fingerprint: 'webhook', ttlMs: 60_000 };
  /** What a reconcile run's claim of the record finds once the key's claim ended. */
  async function runFinds(store: IdempotencyStore): Promise<string> {
    const answer = await store.claim(requestFor(RECORD, { fingerprint: 'reconciled' }));
    if (answer.state !== 'claimed')
      return answer.state === 'done' ? `done:${answer.fingerprint}` : answer.state;
    await store.settle(answer, 'release');
    return 'free';
  }

  it('writes the record with the key, as a webhook had it', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const key = heldOf(
      await store.claim(requestFor('delivery-1', { records: [RECORD], recordsAs: WEBHOOK })),
    );
    expect(key.records).toEqual([{ state: 'held' }]);
    await store.settle(key, 'complete');
    expect(await runFinds(store)).toBe('done:webhook');
  });

  it('writes nothing for a claim that never took the record, or that was released', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    await store.settle(heldOf(await store.claim(requestFor('delivery-2'))), 'complete');
    expect(await runFinds(store)).toBe('free');

    const freed = heldOf(
      await store.claim(requestFor('delivery-3', { records: [RECORD], recordsAs: WEBHOOK })),
    );
    await store.settle(freed, 'release');
    expect(await runFinds(store)).toBe('free');
  });

  it('answers a record done with an empty fingerprint done, not held, and leaves it so', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const empty = { fingerprint: '', ttlMs: 60_000 };
    const first = requestFor('delivery-7', { records: [RECORD], recordsAs: empty });
    await store.settle(heldOf(await store.claim(first)), 'complete');
    const second = heldOf(
      await store.claim(requestFor('delivery-8', { records: [RECORD], recordsAs: WEBHOOK })),
    );
    expect(second.records).toEqual([{ state: 'done', fingerprint: '' }]);
    await store.settle(second, 'complete');
    expect(await runFinds(store)).toBe('done:');
  });

  it('finds a record held by a run in flight, and one it recovered recovered', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const run = heldOf(await store.claim(requestFor(RECORD, { fingerprint: 'reconciled' })));
    const delivery = requestFor('delivery-6', { records: [RECORD], recordsAs: WEBHOOK });
    expect(await store.claim(delivery)).toEqual({ state: 'in_flight', held: 'record' });
    await store.settle(run, 'complete');
    const key = heldOf(await store.claim(delivery));
    expect(key.records).toEqual([{ state: 'done', fingerprint: 'reconciled' }]);
    // Completed, the key leaves the record as the run wrote it.
    await store.settle(key, 'complete');
    expect(await runFinds(store)).toBe('done:reconciled');
  });
});

describe("postgresStore's entities and records: settles that do not match the held claim", () => {
  const ENTITY = 'invoice:77';
  const RECORD = '~["record",null,"invoice:77"]';

  it('ignores a completion or a release with a token whose claim has ended, whatever it asks', async () => {
    const name = table();
    const store = postgresStore({ pool: postgres.pool, table: name });
    const key = heldOf(await store.claim(requestFor('d-late')));
    await store.settle(key, 'complete');
    // The same token again, as is, and with a request that names a record and an entity.
    const asking = {
      ...key,
      request: requestFor('d-late', {
        records: [RECORD],
        version: { entity: ENTITY, versionMs: 2 },
      }),
      records: [{ state: 'held' } as const],
    };
    for (const late of [key, asking]) {
      await expect(store.settle(late, 'complete')).resolves.toBeUndefined();
      await expect(store.settle(late, 'release')).resolves.toBeUndefined();
    }
    // None of them wrote anything: the key is done, the record free for a run, no version kept.
    expect(await store.peek(['d-late', RECORD])).toEqual([
      { state: 'done', fingerprint: 'fp' },
      { state: 'free' },
    ]);
    const { rows } = await postgres.pool.query(`SELECT key FROM "${name}_entities"`);
    expect(rows).toEqual([]);
  });
});
