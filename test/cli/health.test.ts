/**
 * `schoolhooks health`: the bin spawned as a cron job runs it, against a real Redis whose notes a
 * real receiver wrote (answering signed deliveries over HTTP, through the node adapter), and the
 * mock school API over real HTTP for `silent`. Each status has its exit code: 0 ok, 1 at_risk or
 * failing, 3 silent, 2 usage (nothing opened, nothing created). The platform's rules asserted
 * (docs/platform.md): it gives a failed delivery up 11 + 33 + 77 + 165 minutes after the first
 * attempt, and disables an endpoint 14 days after its last success.
 */

import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeListener } from '../../src/adapters/node.js';
import { createReceiver } from '../../src/index.js';
import { postgresStore } from '../../src/stores/postgres.js';
import { redisStore } from '../../src/stores/redis.js';
import { createDelivery, fixtures } from '../../src/testing/index.js';
import { createMockSchoolApi, type MockSchoolApi } from '../../src/testing/mock-school-api.js';
import { createWatchdog } from '../../src/watchdog/index.js';
import { runBin, SCHOOL_API_VARIABLES, type BinRun } from '../helpers/cli-bin.js';
import {
  dropTables,
  uniqueTable,
  useTestPostgres,
  type TestPostgres,
} from '../helpers/postgres.js';
import { useTestRedis, type TestRedis, keysMatching } from '../helpers/redis.js';

const SECRET = 'whsec_health_cli_7d1f3a5c9e2b4d6f8a0c1e3b5d7f9a1c';
const API_KEY = 'sk_live_He4lthC1iK3y9b8a7c6d5e4f3a2b1c0d';
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** The platform's last attempt of a failed delivery, after its first (docs/platform.md). */
const RETRY_SPAN = (11 + 33 + 77 + 165) * MINUTE;

let redis: TestRedis;
let client: Redis;
let database: TestPostgres;
let mock: MockSchoolApi;
const prefixes: string[] = [];
const servers: Server[] = [];
/** Every output of the bin, searched for the API key at the end. */
const outputs: string[] = [];

type Run = BinRun;

/** The API's credentials, as the environment gives them. */
const credentials = (): Record<string, string> => ({
  SCHOOL_API_KEY: API_KEY,
  SCHOOL_SELLER_ID: '3',
  SCHOOL_ID: '4',
});

/** The bin as a cron job starts it: `node --import tsx src/cli/index.ts health …`. */
async function health(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  const run = await runBin(['health', ...args], { env, unset: SCHOOL_API_VARIABLES });
  outputs.push(run.stdout, run.stderr);
  return run;
}

/**
 * A receiver on a Redis store of its own (a fresh prefix) behind the node adapter on a loopback
 * port, its clock `offsetMs` from now; its handler fails for the invoices in `failing`.
 */
async function receiverOnRedis(offsetMs = 0) {
  const prefix = `test-health-cli-${randomUUID().slice(0, 8)}:`;
  prefixes.push(prefix);
  const failing = new Set<number>();
  const now = () => Date.now() + offsetMs;
  const receiver = createReceiver({
    secret: SECRET,
    store: redisStore({ client, prefix }),
    logger: false,
    now,
  });
  receiver.on('PaymentCompleted', (event) => {
    if (failing.has(event.data.payment.invoice.id)) throw new Error('crm hiccup');
  });
  receiver.onError(() => {});
  const server = createServer(nodeListener(receiver));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  /** The platform's POST of a payment of `invoiceId`; resolves to its status and key. */
  const pay = async (invoiceId: number) => {
    const idempotencyKey = randomUUID();
    const delivery = createDelivery(
      'PaymentCompleted',
      fixtures.PaymentCompleted({ payment: { invoice: { id: invoiceId } } }),
      { secret: SECRET, idempotencyKey, timestamp: new Date(now()) },
    );
    const answer = await fetch(url, {
      method: 'POST',
      headers: delivery.headers,
      body: delivery.body,
    });
    await answer.arrayBuffer();
    return { status: answer.status, idempotencyKey };
  };
  /** Write this process's pending notes to the store now (what a watchdog on it does first). */
  const flush = () => createWatchdog({ receiver }).check();
  return { prefix, failing, pay, flush, now };
}

beforeAll(async () => {
  [redis, database] = await Promise.all([useTestRedis(), useTestPostgres()]);
  client = new Redis(redis.url);
  mock = await createMockSchoolApi({
    apiKey: API_KEY,
    sellerId: 3,
    schoolId: 4,
    lists: {
      invoices: [
        // Paid ten hours ago, and no delivery recorded it: the endpoint is silent.
        {
          invoiceId: 990_001,
          createdAt: new Date(Date.now() - 10 * HOUR).toISOString(),
          user: { id: 5001 },
          paymentStatus: 'Completed',
        },
      ],
    },
  });
}, 60_000);

afterAll(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((r) => server.close(r))));
  await mock?.close();
  if (client) {
    for (const prefix of prefixes) {
      const keys = await keysMatching(client, `${prefix}*`);
      if (keys.length > 0) await client.del(...keys);
    }
    client.disconnect();
  }
  await redis?.close();
  await database?.close();
  // No run printed the API key, whatever it printed.
  for (const output of outputs) expect(output).not.toContain(API_KEY);
});

describe('schoolhooks health on a Redis store', () => {
  it('exits 0 and says ok after a success, and when the platform would disable the endpoint', async () => {
    const receiver = await receiverOnRedis();
    expect((await receiver.pay(990_101)).status).toBe(200);
    await receiver.flush();
    const run = await health(['--store', redis.url, '--prefix', receiver.prefix, '--json']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const report = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(report).toMatchObject({ status: 'ok', atRisk: [] });
    // The platform disables an endpoint 14 days after its last success.
    const lastSuccess = Date.parse(String(report['lastSuccessAt']));
    expect(Date.parse(String(report['disablesAt'])) - lastSuccess).toBe(14 * DAY);
    expect(Math.abs(lastSuccess - Date.now())).toBeLessThan(MINUTE);

    const text = await health(['--store', redis.url, '--prefix', receiver.prefix]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^status {2}ok$/m);
    expect(text.stdout).toContain(`disables at   ${String(report['disablesAt'])}`);
  }, 60_000);

  it('exits 1 and lists the delivery at risk with its attempts and when the platform gives it up', async () => {
    const receiver = await receiverOnRedis();
    expect((await receiver.pay(990_201)).status).toBe(200);
    receiver.failing.add(990_202);
    const first = await receiver.pay(990_202);
    expect(first.status).toBeGreaterThanOrEqual(500);
    await receiver.flush();
    const run = await health(['--store', redis.url, '--prefix', receiver.prefix, '--json']);
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout) as {
      status: string;
      atRisk: {
        idempotencyKey: string;
        event: string;
        firstAttemptAt: string;
        attemptsSeen: number;
        givesUpAt: string;
      }[];
    };
    expect(report.status).toBe('at_risk');
    expect(report.atRisk).toHaveLength(1);
    const [atRisk] = report.atRisk;
    expect(atRisk).toMatchObject({
      idempotencyKey: first.idempotencyKey,
      event: 'PaymentCompleted',
      attemptsSeen: 1,
    });
    expect(Date.parse(atRisk!.givesUpAt) - Date.parse(atRisk!.firstAttemptAt)).toBe(RETRY_SPAN);

    const text = await health(['--store', redis.url, '--prefix', receiver.prefix]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^status {2}at_risk \(1 delivery at risk/m);
    expect(text.stdout).toMatch(
      new RegExp(
        `^PaymentCompleted +1 +${atRisk!.givesUpAt.replaceAll('.', '\\.')} +${first.idempotencyKey}$`,
        'm',
      ),
    );
    expect(text.stdout).toMatch(/^disables at {3}\S+Z/m);
  }, 60_000);

  it('exits 1 and says failing when no answer was 2xx for over 30 minutes', async () => {
    // The receiver's clock 40 minutes back: its failed answers are that old.
    const receiver = await receiverOnRedis(-40 * MINUTE);
    receiver.failing.add(990_301);
    expect((await receiver.pay(990_301)).status).toBeGreaterThanOrEqual(500);
    await receiver.flush();
    const run = await health(['--store', redis.url, '--prefix', receiver.prefix, '--json']);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({
      status: 'failing',
      failingSince: new Date(Date.parse(JSON.parse(run.stdout).lastAttemptAt)).toISOString(),
    });
  }, 60_000);

  it('exits 3 and says silent when the API lists a paid invoice that no delivery recorded', async () => {
    const receiver = await receiverOnRedis();
    expect((await receiver.pay(990_401)).status).toBe(200);
    await receiver.flush();
    const run = await health(
      ['--store', redis.url, '--prefix', receiver.prefix, '--api-url', mock.url, '--json'],
      credentials(),
    );
    expect(run).toMatchObject({ code: 3, stderr: '' });
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'silent', silent: { entities: 1 } });
    const text = await health(['--store', redis.url, '--prefix', receiver.prefix], {
      ...credentials(),
      SCHOOL_API_URL: mock.url,
    });
    expect(text.code).toBe(3);
    expect(text.stdout).toMatch(/^status {2}silent \(1 paid invoices or accesses/m);
  }, 60_000);
});

describe('schoolhooks health on a Postgres store, one school of many', () => {
  it('exits 1 for the school whose delivery is at risk and 0 for the other, from --table and --tenant', async () => {
    const table = uniqueTable('cli_health');
    const pool = new pg.Pool({ connectionString: database.url, max: 3 });
    pool.on('error', () => {});
    try {
      const receiver = createReceiver({
        secret: () => SECRET,
        store: postgresStore({ pool, table }),
        logger: false,
      });
      receiver.on('PaymentCompleted', (event) => {
        if (event.data.payment.invoice.id === 990_502) throw new Error('crm hiccup');
      });
      receiver.onError(() => {});
      const pay = async (tenant: string, invoiceId: number) => {
        const delivery = createDelivery(
          'PaymentCompleted',
          fixtures.PaymentCompleted({ payment: { invoice: { id: invoiceId } } }),
          { secret: SECRET },
        );
        return (await receiver.handle({ method: 'POST', ...delivery, tenant })).status;
      };
      expect(await pay('school-a', 990_501)).toBe(200);
      expect(await pay('school-b', 990_502)).toBeGreaterThanOrEqual(500);
      await createWatchdog({ receiver, tenant: 'school-a' }).check();

      const store = ['--store', database.url, '--table', table];
      const atRisk = await health([...store, '--tenant', 'school-b', '--json']);
      expect(atRisk.code).toBe(1);
      expect(JSON.parse(atRisk.stdout)).toMatchObject({
        status: 'at_risk',
        atRisk: [{ event: 'PaymentCompleted', attemptsSeen: 1 }],
      });
      const ok = await health([...store, '--tenant', 'school-a']);
      expect(ok.code).toBe(0);
      expect(ok.stdout).toMatch(/^status {2}ok$/m);
      // The receiver without a tenant answered nothing: ok, with no success kept.
      const none = await health(store);
      expect(none.code).toBe(0);
      expect(none.stdout).toContain('last success  none kept');
      expect(none.stderr).toMatch(/no answer is kept there yet: check that --prefix, --table/);
      expect(ok.stderr).toBe('');
    } finally {
      await dropTables(pool, [table]).catch(() => {});
      await pool.end();
    }
  }, 60_000);
});

describe('schoolhooks health: usage errors exit 2', () => {
  it.each([
    [
      'an unknown option',
      ['--store', 'redis://127.0.0.1:6379', '--jsn'],
      /unknown option '--jsn'.*--json/,
    ],
    ['no --store', ['--json'], /--store is required/],
    ['a store that is neither Redis nor Postgres', ['--store', 'mysql://h/db'], /--store must be/],
    [
      'a tenant name a URL resolves away',
      ['--store', 'redis://127.0.0.1:6379', '--tenant', '..'],
      /--tenant:/,
    ],
    [
      '--api-url without the API key',
      ['--store', 'redis://127.0.0.1:6379', '--api-url', 'http://127.0.0.1:9/'],
      /SCHOOL_API_KEY/,
    ],
  ])(
    '%s',
    async (_name, args, message) => {
      const run = await health(args);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(message);
    },
    60_000,
  );

  it('a Postgres table that does not exist, which it does not create', async () => {
    const table = uniqueTable('cli_health_none');
    const run = await health(['--store', database.url, '--table', table]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`--table: there is no table ${table}`));
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    try {
      const { rows } = await pool.query<{ found: boolean }>(
        'SELECT to_regclass($1) IS NOT NULL AS found',
        [table],
      );
      expect(rows[0]?.found).toBe(false);
    } finally {
      await pool.end();
    }
  }, 60_000);
});
