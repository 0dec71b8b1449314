/**
 * Keys the platform can send that a server does not keep as they are, over real HTTP (the node
 * adapter on a loopback port, signed deliveries): idempotencyKeys that differ only by a lone
 * surrogate (`"\ud800"`, valid JSON and valid UTF-8 bytes) or by U+0000. On the Redis and the
 * Postgres store, and through the BullMQ and pg-boss inboxes, each event is processed exactly
 * once and its resend is a duplicate: none is merged with another (answered `conflict` and never
 * run), none is refused for ever (a 503 the platform retries until it gives up).
 *
 * And one idempotencyKey under many tenants (many schools on one endpoint, each route naming its
 * school, a secret lookup giving each school its own secrets): on the memory, Redis and Postgres
 * stores it is processed once per tenant, twice under one tenant (two of its endpoints) once,
 * and with `postgresStore` a tenant's handlers write in the transaction its key completes with,
 * on the HTTP path and in a pg-boss worker's run. (Every inbox's side of it: test/inbox/contract.ts.)
 */

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { nodeListener } from '../../src/adapters/node.js';
import { bullmqInbox } from '../../src/inbox/bullmq.js';
import { pgBossInbox } from '../../src/inbox/pg-boss.js';
import type { Inbox } from '../../src/inbox/types.js';
import {
  createReceiver,
  type Receiver,
  type ReceiverOptions,
} from '../../src/receiving/receiver.js';
import { memoryStore } from '../../src/stores/memory.js';
import { postgresStore } from '../../src/stores/postgres.js';
import { redisStore } from '../../src/stores/redis.js';
import type { IdempotencyStore } from '../../src/stores/types.js';
import { listen, post, type AdapterServer } from '../adapters/suite.js';
import { createTestDelivery, SECRET, type Delivery } from '../helpers/deliveries.js';
import {
  dropTables,
  uniqueTable,
  useTestPostgres,
  type TestPostgres,
} from '../helpers/postgres.js';
import { useTestRedis, type TestRedis, keysMatching } from '../helpers/redis.js';
import {
  lookupIn,
  tenantDelivery,
  tenantOfRequest,
  tenantPath,
  tenantSecret,
  tenantSecrets,
  UNUSUAL_TENANTS,
} from '../helpers/tenants.js';

let redis: TestRedis;
let client: Redis;
let database: TestPostgres;
let pool: pg.Pool;
const tables: string[] = [];
const run = randomUUID();
/** What each test opened, closed after it whatever happened. */
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  redis = await useTestRedis();
  client = new Redis(redis.url);
  database = await useTestPostgres();
  pool = new pg.Pool({ connectionString: database.url, max: 10 });
  pool.on('error', () => {});
}, 60_000);

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

afterAll(async () => {
  if (client) {
    const keys = await keysMatching(client, `keys-http-${run}*`);
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

/**
 * Keys that differ only by a lone surrogate (three of them, and U+FFFD, which a client that
 * encodes them as UTF-8 puts in their place) or by U+0000.
 */
function awkwardKeys(): string[] {
  const base = `key-${randomUUID()}`;
  return [`${base}\ud800`, `${base}\udbff`, `${base}\udc00`, `${base}\ufffd`, base, `${base}\0`];
}

/** What {@link serve} counts a run under: its idempotencyKey, with its tenant when it has one. */
function runName(idempotencyKey: string, tenant: string | undefined): string {
  return tenant === undefined ? idempotencyKey : JSON.stringify([tenant, idempotencyKey]);
}

/**
 * The receiver behind the node adapter, counting the runs of each idempotencyKey (and tenant:
 * {@link runName}); a tenant's route is `/t/<tenant>` ({@link tenantPath}).
 */
async function serve(
  store: IdempotencyStore,
  inbox?: Inbox,
  secret: ReceiverOptions['secret'] = SECRET,
): Promise<{ server: AdapterServer; runs: Map<string, number>; receiver: Receiver }> {
  const runs = new Map<string, number>();
  const receiver = createReceiver({
    secret,
    store,
    ...(inbox && { inbox }),
    logger: false,
  }).on('UserSignedIn', (event, ctx) => {
    const name = runName(event.idempotencyKey, ctx.tenant);
    runs.set(name, (runs.get(name) ?? 0) + 1);
  });
  const listener = nodeListener(receiver, { tenant: tenantOfRequest });
  const server = await listen(createServer(listener).listen(0, '127.0.0.1'), '/');
  cleanups.push(() => server.close());
  return { server, runs, receiver };
}

/** Each key's delivery, then each one's resend (the same signed body), as the platform sends. */
async function sendTwice(url: string, keys: readonly string[]) {
  const deliveries: Delivery[] = keys.map((idempotencyKey) =>
    createTestDelivery('UserSignedIn', { user: { id: 1 } }, { idempotencyKey }),
  );
  const first = [];
  for (const delivery of deliveries) first.push(await post(url, delivery));
  const resent = [];
  for (const delivery of deliveries) resent.push(await post(url, delivery));
  return { first, resent };
}

function redisStoreOfTest(): IdempotencyStore {
  return redisStore({ client, prefix: `keys-http-${run}:${randomUUID()}:` });
}

function postgresStoreOfTest(): IdempotencyStore {
  const table = uniqueTable('sh_keys');
  tables.push(table);
  return postgresStore({ pool, table });
}

describe.each([
  ['redisStore', redisStoreOfTest],
  ['postgresStore', postgresStoreOfTest],
])('%s over HTTP: keys that differ only by a lone surrogate or U+0000', (_name, makeStore) => {
  it('processes each event once and answers each resend duplicate', async () => {
    const { server, runs } = await serve(makeStore());
    const keys = awkwardKeys();
    const { first, resent } = await sendTwice(server.url, keys);
    // 200 processed stops the platform's retries of each; the answer names the key as sent.
    expect(first).toEqual(
      keys.map((idempotencyKey) =>
        expect.objectContaining({
          status: 200,
          body: expect.objectContaining({ outcome: 'processed', idempotencyKey }),
        }),
      ),
    );
    expect(resent).toEqual(
      keys.map(() =>
        expect.objectContaining({
          status: 200,
          body: expect.objectContaining({ outcome: 'duplicate' }),
        }),
      ),
    );
    expect([...runs.entries()].sort()).toEqual(keys.map((key) => [key, 1]).sort());
  });
});

describe('inboxes over HTTP: keys that differ only by a lone surrogate or U+0000', () => {
  /** Queued once each, resends duplicate, and every job run once by the inbox's worker. */
  async function queuesEachOnce(
    store: IdempotencyStore,
    inbox: Inbox & { work(receiver: Receiver): { close(): Promise<void> } },
  ): Promise<string[]> {
    const { server, runs, receiver } = await serve(store, inbox);
    const keys = awkwardKeys();
    const { first, resent } = await sendTwice(server.url, keys);
    // 202 queued stops the platform's retries: the job must be there, one per key.
    expect(
      first.map((answer) => [answer.status, (answer.body as { outcome: string }).outcome]),
    ).toEqual(keys.map(() => [202, 'queued']));
    expect(
      resent.map((answer) => [answer.status, (answer.body as { outcome: string }).outcome]),
    ).toEqual(keys.map(() => [200, 'duplicate']));
    const worker = inbox.work(receiver);
    cleanups.push(() => worker.close());
    await vi.waitFor(() => expect(runs.size).toBe(keys.length), { timeout: 15_000, interval: 50 });
    // Give a second run of any job the time to happen: none may.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect([...runs.entries()].sort()).toEqual(keys.map((key) => [key, 1]).sort());
    return keys;
  }

  it('bullmqInbox on redisStore: each queued once as a job of its own, and run once', async () => {
    const inbox = bullmqInbox({
      connection: client,
      queueName: `keys-${randomUUID()}`,
      prefix: `keys-http-${run}`,
      backoffMs: 10,
    });
    cleanups.push(async () => {
      await inbox.queue.obliterate({ force: true }).catch(() => {});
      await inbox.close();
    });
    const keys = await queuesEachOnce(redisStoreOfTest(), inbox);
    // Each job found by its key, holding that key as sent.
    for (const key of keys) expect((await inbox.getJob(key))?.idempotencyKey).toBe(key);
  }, 30_000);

  it('pgBossInbox on postgresStore: each queued once as a job of its own, and run once', async () => {
    const schema = uniqueTable('pgb_keys');
    cleanups.push(() => pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    const inbox = pgBossInbox({
      connectionString: database.url,
      schema,
      queueName: `keys-${randomUUID().slice(0, 8)}`,
      backoffMs: 10,
    });
    cleanups.push(() => inbox.close());
    const keys = await queuesEachOnce(postgresStoreOfTest(), inbox);
    // Each job found by its key, a job of its own (jsonb holds an awkward key's storageKey).
    const ids = await Promise.all(keys.map(async (key) => (await inbox.getJob(key))?.id));
    expect(new Set(ids).size).toBe(keys.length);
    expect(ids).not.toContain(undefined);
  }, 30_000);
});

/** The answer's status and outcome, to compare many at once. */
function statusAndOutcome(answer: { status: number; body: unknown }): [number, string] {
  return [answer.status, (answer.body as { outcome: string }).outcome];
}

describe.each([
  ['memoryStore', () => memoryStore()],
  ['redisStore', redisStoreOfTest],
  ['postgresStore', postgresStoreOfTest],
])('%s over HTTP: one idempotencyKey under many tenants', (_name, makeStore) => {
  it('processes it once under each tenant (unusual names too), and answers each resend duplicate', async () => {
    const tenants = ['school-a', 'school-b', ...UNUSUAL_TENANTS];
    const { server, runs } = await serve(makeStore(), undefined, lookupIn(tenantSecrets(tenants)));
    const key = randomUUID();
    const timestamp = new Date().toISOString();
    const deliveries = tenants.map((tenant) =>
      tenantDelivery(key, timestamp, tenantSecret(tenant)),
    );
    const sendAll = async () => {
      const answers = [];
      for (const [i, tenant] of tenants.entries()) {
        answers.push(await post(server.url + tenantPath(tenant), deliveries[i]!));
      }
      return answers;
    };
    const first = await sendAll();
    expect(first).toEqual(
      tenants.map(() =>
        expect.objectContaining({
          status: 200,
          body: expect.objectContaining({ outcome: 'processed', idempotencyKey: key }),
        }),
      ),
    );
    expect((await sendAll()).map(statusAndOutcome)).toEqual(tenants.map(() => [200, 'duplicate']));
    // A tenant's delivery verifies with its own secrets only.
    const other = await post(server.url + tenantPath('school-a'), deliveries[1]!);
    expect(statusAndOutcome(other)).toEqual([401, 'invalid_signature']);
    expect([...runs.entries()].sort()).toEqual(
      tenants.map((tenant) => [runName(key, tenant), 1]).sort(),
    );
  });

  it('runs it once for two deliveries under one tenant (two of its endpoints, each with its secret), sent at once', async () => {
    const endpoints = [tenantSecret('school-a', 1), tenantSecret('school-a', 2)];
    const secrets = new Map([['school-a', endpoints]]);
    const { server, runs } = await serve(makeStore(), undefined, lookupIn(secrets));
    const key = randomUUID();
    const timestamp = new Date().toISOString();
    const fanOut = endpoints.map((secret) => tenantDelivery(key, timestamp, secret));
    const url = server.url + tenantPath('school-a');
    const answers = (await Promise.all(fanOut.map((delivery) => post(url, delivery)))).map(
      statusAndOutcome,
    );
    // One runs the handlers; the other finds it done, or still running (409, retried later).
    expect(answers).toContainEqual([200, 'processed']);
    expect([
      [200, 'duplicate'],
      [409, 'in_flight'],
    ]).toContainEqual(answers.find(([, outcome]) => outcome !== 'processed'));
    for (const delivery of fanOut) {
      expect(statusAndOutcome(await post(url, delivery))).toEqual([200, 'duplicate']);
    }
    expect([...runs.entries()]).toEqual([[runName(key, 'school-a'), 1]]);
  });
});

describe('postgresStore over HTTP: a tenant’s handlers write in the transaction its key completes with', () => {
  it('commits one tenant’s writes, rolls back the other’s failed run and runs it again on the resend', async () => {
    const grants = uniqueTable('sh_grants');
    tables.push(grants);
    await pool.query(`CREATE TABLE "${grants}" (tenant text NOT NULL, key text NOT NULL)`);
    const tenants = ['school-a', 'school-b'];
    const { server, receiver } = await serve(
      postgresStoreOfTest(),
      undefined,
      lookupIn(tenantSecrets(tenants)),
    );
    let failB = true;
    receiver.on('UserSignedIn', async (event, ctx) => {
      await ctx.transaction!.query(`INSERT INTO "${grants}" (tenant, key) VALUES ($1, $2)`, [
        ctx.tenant,
        event.idempotencyKey,
      ]);
      if (ctx.tenant === 'school-b' && failB) throw new Error('after the insert');
    });
    const key = randomUUID();
    const timestamp = new Date().toISOString();
    const send = (tenant: string) =>
      post(server.url + tenantPath(tenant), tenantDelivery(key, timestamp, tenantSecret(tenant)));
    const granted = async () =>
      (await pool.query(`SELECT tenant, key FROM "${grants}" ORDER BY tenant`)).rows;

    expect(statusAndOutcome(await send('school-a'))).toEqual([200, 'processed']);
    expect(statusAndOutcome(await send('school-b'))).toEqual([500, 'handler_failed']);
    expect(await granted()).toEqual([{ tenant: 'school-a', key }]);
    failB = false;
    // The platform's retry of school B's delivery: its key was released with the rollback.
    expect(statusAndOutcome(await send('school-b'))).toEqual([200, 'processed']);
    expect(statusAndOutcome(await send('school-a'))).toEqual([200, 'duplicate']);
    expect(statusAndOutcome(await send('school-b'))).toEqual([200, 'duplicate']);
    expect(await granted()).toEqual([
      { tenant: 'school-a', key },
      { tenant: 'school-b', key },
    ]);
  });

  it('pgBossInbox: a worker’s run of a tenant’s job commits its writes with its run’s key, a failed run’s rolled back', async () => {
    const grants = uniqueTable('sh_grants');
    tables.push(grants);
    await pool.query(
      `CREATE TABLE "${grants}" (tenant text NOT NULL, key text NOT NULL, attempt int NOT NULL)`,
    );
    const schema = uniqueTable('pgb_tenants');
    cleanups.push(() => pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    const inbox = pgBossInbox({
      connectionString: database.url,
      schema,
      queueName: `tenants-${randomUUID().slice(0, 8)}`,
      backoffMs: 10,
    });
    cleanups.push(() => inbox.close());
    const tenants = ['school-a', 'school-b'];
    const { server, receiver } = await serve(
      postgresStoreOfTest(),
      inbox,
      lookupIn(tenantSecrets(tenants)),
    );
    receiver.on('UserSignedIn', async (event, ctx) => {
      await ctx.transaction!.query(
        `INSERT INTO "${grants}" (tenant, key, attempt) VALUES ($1, $2, $3)`,
        [ctx.tenant, event.idempotencyKey, ctx.attempt],
      );
      if (ctx.tenant === 'school-b' && ctx.attempt < 2) throw new Error('after the insert');
    });
    const key = randomUUID();
    const timestamp = new Date().toISOString();
    for (const tenant of tenants) {
      const delivery = tenantDelivery(key, timestamp, tenantSecret(tenant));
      const answer = await post(server.url + tenantPath(tenant), delivery);
      expect(statusAndOutcome(answer)).toEqual([202, 'queued']);
    }
    const worker = inbox.work(receiver, { pollIntervalMs: 20 });
    cleanups.push(() => worker.close());
    await vi.waitFor(async () => expect(await inbox.jobs({ state: 'completed' })).toHaveLength(2), {
      timeout: 15_000,
      interval: 50,
    });
    const { rows } = await pool.query(
      `SELECT tenant, key, attempt FROM "${grants}" ORDER BY tenant`,
    );
    expect(rows).toEqual([
      { tenant: 'school-a', key, attempt: 1 },
      { tenant: 'school-b', key, attempt: 2 },
    ]);
  }, 30_000);
});
