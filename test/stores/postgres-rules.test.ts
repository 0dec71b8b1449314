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
import type { ClaimResult } from '../../src/stores/types.js';
import { sleep } from '../helpers/redis.js';
import { usePostgresPool } from '../helpers/postgres.js';
import { failureOf } from '../helpers/failure-of.js';

const postgres = usePostgresPool('sh_rules');
const table = () => postgres.table();

function claimed(result: ClaimResult): Extract<ClaimResult, { state: 'claimed' }> {
  if (result.state !== 'claimed') throw new Error(`expected a claim, got ${result.state}`);
  return result;
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
    await store.release('k', claimed(await store.claim('k', 10_000)).token);
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
    const results = await Promise.all(stores.map((store, i) => store.claim(`k${i}`, 10_000)));
    expect(results.map((result) => result.state)).toEqual(Array(8).fill('claimed'));
    await Promise.all(stores.map((store, i) => store.release(`k${i}`, claimed(results[i]!).token)));
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
      await store.release('k', claimed(await store.claim('k', 10_000)).token);
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
    const failure = await failureOf(store.claim('k', 10_000));
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect(failure.message).toMatch(/^Postgres claim failed: the database is starting up/);
    await store.release('k', claimed(await store.claim('k', 10_000)).token);
    expect(creations).toBe(2);
  });
});

describe('postgresStore settings', () => {
  it('refuses a lease that is not a positive finite number of ms, and takes 1 ms', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    for (const leaseMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      const failure = await failureOf(store.claim('k', leaseMs));
      expect(failure, String(leaseMs)).toBeInstanceOf(ConfigError);
      expect(failure.message).toMatch(
        /^postgresStore: leaseMs must be a positive number of milliseconds/,
      );
    }
    const result = claimed(await store.claim('k', 1));
    await store.release('k', result.token);
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
    await store.release('live', claimed(await store.claim('live', 10_000)).token);
    expect(await settledCount(name)).toBe(0);

    await insertExpired(name, 5600, 'b');
    const next = postgresStore({ pool: postgres.pool, table: name });
    await next.release('live', claimed(await next.claim('live', 10_000)).token);
    // Ten batches of 500 at the most: 600 wait for the next sweep.
    expect(await settledCount(name)).toBe(600);
  });

  it('sweeps at most once a minute per store', async () => {
    const name = table();
    const store = postgresStore({ pool: postgres.pool, table: name });
    await store.release('a', claimed(await store.claim('a', 10_000)).token);
    await settledCount(name);
    await insertExpired(name, 10, 'late');
    await store.release('b', claimed(await store.claim('b', 10_000)).token);
    expect(await settledCount(name)).toBe(10);
  });
});

describe('postgresStore claims', () => {
  it('keeps the locks of two tables apart: one key claimed in each at once', async () => {
    const first = postgresStore({ pool: postgres.pool, table: table() });
    const second = postgresStore({ pool: postgres.pool, table: table() });
    const a = claimed(await first.claim('same-key', 10_000));
    const b = await second.claim('same-key', 10_000);
    expect(b.state).toBe('claimed');
    await first.release('same-key', a.token);
    await second.release('same-key', claimed(b).token);
  });

  it('keeps the entity locks of two tables apart: one entity claimed in each at once', async () => {
    const stores = [table(), table()].map((name) =>
      postgresStore({ pool: postgres.pool, table: name }),
    );
    const answers = [];
    for (const store of stores) {
      const key = claimed(await store.claim('entity-key', 10_000));
      answers.push({ store, token: key.token });
      const entity = await store.claimEntity!('invoice:1', 1, 10_000, {
        key: 'entity-key',
        token: key.token,
      });
      expect(entity.state).toBe('claimed');
    }
    for (const { store, token } of answers) await store.release('entity-key', token);
  });

  it('completes only the key a token was given for', async () => {
    const name = table();
    const store = postgresStore({ pool: postgres.pool, table: name });
    const result = claimed(await store.claim('mine', 10_000));
    await store.complete('other', result.token, 60_000, 'fp');
    expect(await count(name)).toBe(0);
    await store.complete('mine', result.token, 60_000, 'fp');
    const { rows } = await postgres.pool.query<{ key: string }>(`SELECT key FROM "${name}"`);
    expect(rows).toEqual([{ key: 'mine' }]);
  });

  it('ignores the abandon of a claim that was completed already', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const result = claimed(await store.claim('k', 10_000));
    await store.complete('k', result.token, 60_000, 'fp');
    expect(() => result.transaction?.abandon()).not.toThrow();
    expect(await store.claim('k', 10_000)).toEqual({ state: 'done', fingerprint: 'fp' });
  });

  it('waits for the session of an abandoned claim to end, then claims the key', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table(), connectTimeoutMs: 4000 });
    await store.release('warm', claimed(await store.claim('warm', 10_000)).token);
    const first = claimed(await store.claim('k', 60_000));
    first.transaction?.abandon();
    const startedAt = Date.now();
    // The abandoned session still holds the lock for a moment: not in_flight, and not the
    // fallback wait of connectTimeoutMs / 2 either (the session's end is heard).
    const second = await store.claim('k', 60_000);
    expect(second.state).toBe('claimed');
    expect(Date.now() - startedAt).toBeLessThan(1500);
    await store.release('k', claimed(second).token);
  });

  it('returns a pooled client without the listeners it added, claim after claim', async () => {
    const one = new pg.Pool({ connectionString: postgres.url, max: 1 });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const store = postgresStore({ pool: one, table: table() });
      for (let i = 0; i < 15; i++) {
        const result = claimed(await store.claim(`k${i}`, 10_000));
        await store.complete(`k${i}`, result.token, 60_000, 'fp');
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
    const failure = await failureOf(store.claim('k', 10_000));
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect(failure.message).toMatch(/^Postgres did not answer claim within 100 ms/);
    await sleep(600);
    expect(sent).toEqual([]);
    // And the key is free: nothing holds its lock.
    const other = postgresStore({ pool: postgres.pool, table: name });
    await other.release('k', claimed(await other.claim('k', 10_000)).token);
  });

  it('fails a claim whose statement fails, closing its client rather than pooling it', async () => {
    const name = table();
    const store = postgresStore({ pool: postgres.pool, table: name });
    await store.release('a', claimed(await store.claim('a', 10_000)).token);
    await postgres.pool.query(`DROP TABLE "${name}"`);
    const failure = await failureOf(store.claim('b', 10_000));
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect(failure.message).toMatch(/^Postgres claim failed: /);
    // The pool still serves clean clients: none is left inside a failed transaction.
    for (let i = 0; i < 5; i++) await postgres.pool.query('SELECT 1');
  });

  it('names the commit in the error of a completion whose connection died', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const result = claimed(await store.claim('k', 10_000));
    const pid = (result.transaction!.client as unknown as { processID: number }).processID;
    await postgres.pool.query('SELECT pg_terminate_backend($1)', [pid]);
    const failure = await failureOf(store.complete('k', result.token, 60_000, 'fp'));
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect(failure.message).toMatch(/^Postgres commit failed: /);
  });

  it('names the rollback in the error of a release whose connection died', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const result = claimed(await store.claim('k', 10_000));
    const pid = (result.transaction!.client as unknown as { processID: number }).processID;
    await postgres.pool.query('SELECT pg_terminate_backend($1)', [pid]);
    const failure = await failureOf(store.release('k', result.token));
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect(failure.message).toMatch(/^Postgres rollback failed: /);
  });
});

describe("postgresStore's records, in the key's transaction", () => {
  const RECORD = '~["record",null,"invoice:41"]';
  /** What a reconcile run's claim of the record finds once the key's claim ended. */
  async function runFinds(store: ReturnType<typeof postgresStore>): Promise<string> {
    const answer = await store.claim(RECORD, 5_000);
    if (answer.state !== 'claimed')
      return answer.state === 'done' ? `done:${answer.fingerprint}` : answer.state;
    await store.release(RECORD, answer.token);
    return 'free';
  }

  it('writes the record with the key, as a webhook had it', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const key = claimed(await store.claim('delivery-1', 5_000));
    const record = await store.claimRecord!(RECORD, 5_000, { key: 'delivery-1', token: key.token });
    expect(record).toEqual({ state: 'claimed', token: key.token });
    await store.completeRecord!(RECORD, key.token, 60_000);
    await store.complete('delivery-1', key.token, 60_000, 'fp');
    expect(await runFinds(store)).toBe('done:webhook');
  });

  it('writes nothing for a claim that never took the record, or that let it go', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const never = claimed(await store.claim('delivery-2', 5_000));
    await store.completeRecord!(RECORD, never.token, 60_000);
    await store.complete('delivery-2', never.token, 60_000, 'fp');
    expect(await runFinds(store)).toBe('free');

    const freed = claimed(await store.claim('delivery-3', 5_000));
    await store.claimRecord!(RECORD, 5_000, { key: 'delivery-3', token: freed.token });
    await store.releaseRecord!(RECORD, freed.token);
    await store.completeRecord!(RECORD, freed.token, 60_000);
    await store.complete('delivery-3', freed.token, 60_000, 'fp');
    expect(await runFinds(store)).toBe('free');
  });

  it('refuses to take a record for a key whose claim has ended, naming why', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const key = claimed(await store.claim('delivery-4', 5_000));
    await store.release('delivery-4', key.token);
    const error = await failureOf(
      store.claimRecord!(RECORD, 5_000, { key: 'delivery-4', token: key.token }),
    );
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error.message).toBe(
      "postgresStore: the key's claim has ended (its lease ran out), so its transaction cannot take the entity's record",
    );
    // Another key's token does not stand in for it either.
    const other = claimed(await store.claim('delivery-5', 5_000));
    const wrongKey = await failureOf(
      store.claimRecord!(RECORD, 5_000, { key: 'delivery-4', token: other.token }),
    );
    expect(wrongKey).toBeInstanceOf(StoreUnavailableError);
    await store.release('delivery-5', other.token);
  });

  it('finds a record held by a run in flight, and one it recovered recovered', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const run = claimed(await store.claim(RECORD, 5_000));
    const key = claimed(await store.claim('delivery-6', 5_000));
    expect(
      await store.claimRecord!(RECORD, 5_000, { key: 'delivery-6', token: key.token }),
    ).toEqual({
      state: 'in_flight',
    });
    await store.complete(RECORD, run.token, 60_000, 'reconciled');
    expect(
      await store.claimRecord!(RECORD, 5_000, { key: 'delivery-6', token: key.token }),
    ).toEqual({
      state: 'recovered',
    });
    await store.release('delivery-6', key.token);
  });
});

describe("postgresStore's entities and records: calls that do not match the held claim", () => {
  const ENTITY = 'invoice:77';
  const RECORD = '~["record",null,"invoice:77"]';

  /** What another delivery's claim of ENTITY at version 1 finds once the first key committed. */
  async function laterClaimFinds(store: ReturnType<typeof postgresStore>, key: string) {
    const next = claimed(await store.claim(key, 5_000));
    const answer = await store.claimEntity!(ENTITY, 1, 5_000, { key, token: next.token });
    await store.release(key, next.token);
    return answer.state;
  }

  it('refuses a version that is not a finite number of ms, naming versionMs', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const key = claimed(await store.claim('d-nan', 5_000));
    for (const versionMs of [Number.NaN, Number.POSITIVE_INFINITY]) {
      const error = await failureOf(
        store.claimEntity!(ENTITY, versionMs, 5_000, { key: 'd-nan', token: key.token }),
      );
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.message).toBe(
        'postgresStore: versionMs must be a finite number of milliseconds',
      );
    }
    await store.release('d-nan', key.token);
  });

  it('refuses to take an entity for a key whose claim has ended, naming the entity', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const key = claimed(await store.claim('d-ended', 5_000));
    await store.release('d-ended', key.token);
    const error = await failureOf(
      store.claimEntity!(ENTITY, 2, 5_000, { key: 'd-ended', token: key.token }),
    );
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error.message).toBe(
      "postgresStore: the key's claim has ended (its lease ran out), so its transaction cannot take the entity",
    );
  });

  it('writes no version for an entity let go before its completion', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const key = claimed(await store.claim('d-let-go', 5_000));
    const held = { key: 'd-let-go', token: key.token };
    expect(await store.claimEntity!(ENTITY, 2, 5_000, held)).toEqual({
      state: 'claimed',
      token: key.token,
    });
    await store.releaseEntity!(ENTITY, key.token);
    await store.completeEntity!(ENTITY, key.token, 2, 60_000);
    await store.complete('d-let-go', key.token, 60_000, 'fp');
    // Version 2 was never written, so version 1 is not older than anything recorded.
    expect(await laterClaimFinds(store, 'd-after')).toBe('claimed');
  });

  it('keeps the held entity when another entity is let go, and writes its version', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const key = claimed(await store.claim('d-other', 5_000));
    await store.claimEntity!(ENTITY, 2, 5_000, { key: 'd-other', token: key.token });
    await store.releaseEntity!('invoice:78', key.token);
    await store.completeEntity!(ENTITY, key.token, 2, 60_000);
    await store.complete('d-other', key.token, 60_000, 'fp');
    expect(await laterClaimFinds(store, 'd-after-2')).toBe('superseded');
  });

  it('keeps the held record when another record is let go, and writes it', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const key = claimed(await store.claim('d-record', 5_000));
    await store.claimRecord!(RECORD, 5_000, { key: 'd-record', token: key.token });
    await store.releaseRecord!('~["record",null,"invoice:78"]', key.token);
    await store.completeRecord!(RECORD, key.token, 60_000);
    await store.complete('d-record', key.token, 60_000, 'fp');
    const run = await store.claim(RECORD, 5_000);
    expect(run).toEqual({ state: 'done', fingerprint: 'webhook' });
  });

  it('ignores a completion or a release with a token whose claim has ended', async () => {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const key = claimed(await store.claim('d-late', 5_000));
    await store.complete('d-late', key.token, 60_000, 'fp');
    await expect(store.completeRecord!(RECORD, key.token, 60_000)).resolves.toBeUndefined();
    await expect(store.releaseRecord!(RECORD, key.token)).resolves.toBeUndefined();
    await expect(store.completeEntity!(ENTITY, key.token, 2, 60_000)).resolves.toBeUndefined();
    await expect(store.releaseEntity!(ENTITY, key.token)).resolves.toBeUndefined();
    // None of them wrote anything: the record is free for a run.
    const run = claimed(await store.claim(RECORD, 5_000));
    await store.release(RECORD, run.token);
  });

  /** A claim of `key` whose session Postgres has ended, and the store that made it. */
  async function claimOnDeadSession(key: string) {
    const store = postgresStore({ pool: postgres.pool, table: table() });
    const result = claimed(await store.claim(key, 10_000));
    const pid = (result.transaction!.client as unknown as { processID: number }).processID;
    await postgres.pool.query('SELECT pg_terminate_backend($1)', [pid]);
    return { store, held: { key, token: result.token } };
  }

  it.each([
    ['claimEntity', (s: Store, h: Held) => s.claimEntity!(ENTITY, 2, 5_000, h)],
    ['claimRecord', (s: Store, h: Held) => s.claimRecord!(RECORD, 5_000, h)],
  ])('names %s in the error of a claim whose connection died', async (name, call) => {
    const { store, held } = await claimOnDeadSession(`d-dead-${name}`);
    const failure = await failureOf(call(store, held));
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect(failure.message).toMatch(new RegExp(`^Postgres ${name} failed: `));
    await Promise.resolve()
      .then(() => store.release(held.key, held.token))
      .catch(() => {});
  });

  it.each([
    [
      'completeEntity',
      (s: Store, h: Held) => s.claimEntity!(ENTITY, 2, 5_000, h),
      (s: Store, h: Held) => s.completeEntity!(ENTITY, h.token, 2, 60_000),
    ],
    [
      'completeRecord',
      (s: Store, h: Held) => s.claimRecord!(RECORD, 5_000, h),
      (s: Store, h: Held) => s.completeRecord!(RECORD, h.token, 60_000),
    ],
  ])(
    'names %s in the error of a completion whose connection died',
    async (name, take, complete) => {
      const store = postgresStore({ pool: postgres.pool, table: table() });
      const key = `d-dead-${name}`;
      const result = claimed(await store.claim(key, 10_000));
      const held = { key, token: result.token };
      await take(store, held);
      const pid = (result.transaction!.client as unknown as { processID: number }).processID;
      await postgres.pool.query('SELECT pg_terminate_backend($1)', [pid]);
      const failure = await failureOf(complete(store, held));
      expect(failure).toBeInstanceOf(StoreUnavailableError);
      expect(failure.message).toMatch(new RegExp(`^Postgres ${name} failed: `));
      await Promise.resolve()
        .then(() => store.release(key, result.token))
        .catch(() => {});
    },
  );
});

type Store = ReturnType<typeof postgresStore>;
type Held = { key: string; token: string };
