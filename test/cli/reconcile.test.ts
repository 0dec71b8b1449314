/**
 * `schoolhooks reconcile`: the bin spawned as a user runs it, against the mock school API over
 * real HTTP and a real Redis or Postgres store in which some entities were recorded as a
 * webhook's handlers record them. Usage errors run in-process (`main`), and once spawned.
 */

import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { main } from '../../src/cli/main.js';
import { postgresStore } from '../../src/stores/postgres.js';
import { redisStore } from '../../src/stores/redis.js';
import { createMockSchoolApi, type MockSchoolApi } from '../../src/testing/mock-school-api.js';
import { runBin, SCHOOL_API_VARIABLES, type BinRun } from '../helpers/cli-bin.js';
import {
  dropTables,
  uniqueTable,
  useTestPostgres,
  type TestPostgres,
} from '../helpers/postgres.js';
import { useTestRedis, type TestRedis, keysMatching } from '../helpers/redis.js';
import { recordWebhook } from '../reconcile/helpers.js';

const API_KEY = 'sk_live_Cl1Rec0nc1le7a9c1e3b5d7f9a1c3e5b7';
const HOUR = 3_600_000;
/** A date `ms` before now, as the platform writes it. */
const ago = (ms: number): string => new Date(Date.now() - ms).toISOString();

let redis: TestRedis;
let client: Redis;
let database: TestPostgres;
let pool: pg.Pool;
let mock: MockSchoolApi;
const prefix = `test-reconcile-cli-${randomUUID().slice(0, 8)}:`;
const table = uniqueTable('cli_reconcile');

type Run = BinRun;

/** The API's credentials, as the environment gives them. */
const credentials = (): Record<string, string> => ({
  SCHOOL_API_KEY: API_KEY,
  SCHOOL_SELLER_ID: '3',
  SCHOOL_ID: '4',
});

/** The bin as a user starts it: `node --import tsx src/cli/index.ts reconcile …`. */
function spawned(
  args: readonly string[],
  env: Record<string, string> = credentials(),
): Promise<Run> {
  return runBin(['reconcile', ...args], { env, unset: SCHOOL_API_VARIABLES });
}

/** The command in this process, for the usage errors. */
async function inProcess(
  args: readonly string[],
  env: Record<string, string> = credentials(),
): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    out: (text) => void (stdout += `${text}\n`),
    err: (text) => void (stderr += `${text}\n`),
    readStdin: async () => new Uint8Array(),
    stdinIsTty: true,
    env,
    untilStopped: () => new Promise(() => {}),
  };
  const code = await main(['reconcile', ...args], io);
  return { code, stdout, stderr };
}

const invoice = (invoiceId: number) => ({
  invoiceId,
  createdAt: ago(10 * HOUR),
  user: { id: 5000 + invoiceId },
  paymentStatus: 'Completed',
});

beforeAll(async () => {
  [redis, database] = await Promise.all([useTestRedis(), useTestPostgres()]);
  client = new Redis(redis.url);
  pool = new pg.Pool({ connectionString: database.url, max: 3 });
  mock = await createMockSchoolApi({
    apiKey: API_KEY,
    sellerId: 3,
    schoolId: 4,
    lists: {
      invoices: [
        invoice(1),
        invoice(2),
        invoice(3),
        // Never paid: not listed as paid, so never missing.
        { invoiceId: 4, createdAt: ago(10 * HOUR), user: { id: 5004 } },
        // Younger than the platform's retry span: left to its webhook.
        { ...invoice(5), createdAt: ago(HOUR) },
      ],
      productAccesses: [
        {
          accessId: 10,
          productId: 31,
          courseId: 310,
          active: true,
          createdAt: ago(20 * HOUR),
          user: { id: 7000 },
        },
      ],
      certificates: [
        {
          certificateId: 30,
          courseId: 310,
          issuedAt: ago(30 * HOUR),
          link: 'https://example.com/c',
          user: { id: 7 },
        },
      ],
      users: [{ id: 20, email: 'user20@example.com', createdAt: ago(12 * HOUR) }],
    },
  });
  const redisRecords = redisStore({ client, prefix });
  for (const entity of ['invoice:1', 'access:10', 'user:20']) {
    await recordWebhook(redisRecords, entity);
  }
  const pgRecords = postgresStore({ pool, table });
  await recordWebhook(pgRecords, 'invoice:1', 'school-a');
  // Another school's record of invoice 2 is not school-a's.
  await recordWebhook(pgRecords, 'invoice:2', 'school-b');
  await recordWebhook(pgRecords, 'user:20', 'school-a');
}, 60_000);

afterAll(async () => {
  await mock?.close();
  if (client) {
    const keys = await keysMatching(client, `${prefix}*`);
    if (keys.length > 0) await client.del(...keys);
    client.disconnect();
  }
  if (pool) {
    await dropTables(pool, [table]).catch(() => {});
    await pool.end();
  }
  await redis?.close();
  await database?.close();
});

describe('schoolhooks reconcile', () => {
  it('prints what no webhook handled, from a Redis store, and exits 3', async () => {
    const run = await spawned([
      '--since',
      '48h',
      '--store',
      redis.url,
      '--prefix',
      prefix,
      '--api-url',
      mock.url,
    ]);
    expect(run.stderr.trim().split('\n')).toEqual([
      'checked 3 invoices…',
      'checked 1 access…',
      'checked 1 certificate…',
      'checked 1 user…',
    ]);
    expect(run.code).toBe(3);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines.slice(0, 4)).toEqual([
      'KIND         ID',
      'invoice      2',
      'invoice      3',
      'certificate  30',
    ]);
    expect(lines.slice(5)).toEqual([
      expect.stringMatching(/^window {3}\d{4}-.*Z to \d{4}-.*Z$/),
      'checked  3 invoices, 1 access, 1 certificate, 1 user',
      'handled  3 (by a webhook or an earlier run)',
      'missing  3',
    ]);
    expect(run.stdout + run.stderr).not.toContain(API_KEY);
  }, 20_000);

  it('prints the JSON report of one tenant, from a Postgres store, for the kinds asked', async () => {
    const run = await spawned([
      '--since',
      '2d',
      '--store',
      database.url,
      '--table',
      table,
      '--tenant',
      'school-a',
      '--kinds',
      'invoice,user',
      '--api-url',
      mock.url,
      // The command's only mode, said out loud as a script may.
      '--dry-run',
      '--json',
    ]);
    // stderr has the progress, a line a page, and nothing else.
    expect(run.stderr.trim().split('\n')).toEqual(['checked 3 invoices…', 'checked 1 user…']);
    expect(run.code).toBe(3);
    const report = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(report).toEqual({
      window: { from: expect.any(String), to: expect.any(String) },
      checked: expect.objectContaining({ invoice: 3, user: 1 }),
      handled: 2,
      recovered: 0,
      missing: [
        { kind: 'invoice', id: '2' },
        { kind: 'invoice', id: '3' },
      ],
      failed: [],
      inFlight: [],
      unrecorded: [],
      complete: true,
    });
    // Nothing was recorded by the dry run: the same run finds the same.
    const again = await inProcess(
      [
        ...['--since', '2d', '--store', database.url, '--table', table, '--tenant', 'school-a'],
        ...['--kinds', 'invoice,user', '--api-url', mock.url, '--json'],
      ],
      credentials(),
    );
    expect(JSON.parse(again.stdout)).toMatchObject({ missing: report['missing'] });
  }, 20_000);

  it('refuses a --table that does not exist (exit 2), creating nothing', async () => {
    const mistyped = `${table}_typo`;
    const run = await spawned([
      ...['--since', '2d', '--store', database.url, '--table', mistyped],
      ...['--api-url', mock.url, '--dry-run'],
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`--table: there is no table ${mistyped}`);
    expect(run.stdout).toBe('');
    const pool = new pg.Pool({ connectionString: database.url });
    try {
      const { rows } = await pool.query<{ found: string | null }>(
        'SELECT to_regclass($1)::text AS found, to_regclass($2)::text AS entities',
        [mistyped, `${mistyped}_entities`],
      );
      expect(rows[0]).toEqual({ found: null, entities: null });
    } finally {
      await pool.end();
    }
  }, 20_000);

  it('exits 0 when nothing is missing', async () => {
    const run = await inProcess([
      ...['--since', '48h', '--store', redis.url, '--prefix', prefix],
      ...['--kinds', 'access,user', '--api-url', mock.url],
    ]);
    expect(run).toEqual({
      code: 0,
      stdout: expect.stringContaining('missing  0\n'),
      stderr: 'checked 1 access…\nchecked 1 user…\n',
    });
    expect(run.stdout).not.toContain('KIND');
  });

  it('takes the API key from the environment only, and never prints it', async () => {
    const run = await spawned(
      ['--since', '48h', '--store', redis.url, '--api-url', mock.url, '--api-key', API_KEY],
      { SCHOOL_SELLER_ID: '3', SCHOOL_ID: '4' },
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("unknown option '--api-key'");
    expect(run.stdout + run.stderr).not.toContain(API_KEY);
  }, 20_000);

  it.each([
    [['--store', 'redis://127.0.0.1:6379'], {}, '--since is required'],
    [
      ['--since', '2 days'],
      {},
      '--since must be a duration before now (90m, 48h, 7d) or an ISO date',
    ],
    [['--since', '48h', '--until', 'tomorrow'], {}, '--until must be an ISO date'],
    [['--since', '48h'], {}, '--store is required'],
    [['--since', '48h', '--store', 'http://x'], {}, '--store must be a well-formed redis://'],
    [['--since', '48h', '--store', 'redis://:hunter2@[::1'], {}, '--store must be a well-formed'],
    [
      ['--since', '48h', '--store', 'redis://x', '--table', 't'],
      {},
      '--table is for a postgres://',
    ],
    [
      ['--since', '48h', '--store', 'postgres://x', '--prefix', 'p'],
      {},
      '--prefix is for a redis://',
    ],
    [
      ['--since', '48h', '--store', 'redis://x', '--kinds', 'invoices'],
      {},
      "--kinds: unknown kind 'invoices'; did you mean invoice?",
    ],
    [
      ['--since', '48h', '--store', 'redis://x', '--tenant', ''],
      {},
      '--tenant: a tenant name is empty',
    ],
    [['--since', '48h', '--store', 'redis://x'], {}, '--api-url is required'],
    [
      ['--since', '48h', '--store', 'redis://x', '--api-url', 'ftp://x'],
      {},
      '--api-url must be an http:// or https:// URL',
    ],
    [
      ['--since', '48h', '--store', 'redis://x', '--api-url', 'https://x'],
      { SCHOOL_API_KEY: '' },
      'the SCHOOL_API_KEY variable is required',
    ],
    [
      ['--since', '48h', '--store', 'redis://x', '--api-url', 'https://x'],
      { SCHOOL_SELLER_ID: 'seller' },
      'the SCHOOL_SELLER_ID variable must be a positive integer',
    ],
    [
      ['--since', '48h', '--store', 'redis://x', '--api-url', 'https://x'],
      { SCHOOL_ID: undefined },
      'the SCHOOL_ID variable is required',
    ],
    [
      [
        '--since',
        '1d',
        '--until',
        '2020-01-01',
        '--store',
        'redis://127.0.0.1:6379',
        '--api-url',
        'https://x',
      ],
      {},
      'the window is empty',
    ],
  ] as [string[], Record<string, string | undefined>, string][])(
    'a usage error exits 2 naming the input: %j %j',
    async (args, env, message) => {
      const merged = Object.fromEntries(
        Object.entries({ ...credentials(), ...env }).filter(([, value]) => value !== undefined),
      ) as Record<string, string>;
      const run = await inProcess(args, merged);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(message);
      expect(run.stderr).not.toContain('hunter2');
      expect(run.stderr).toContain("Run 'schoolhooks reconcile --help' for usage.");
    },
  );

  it('an unreachable store is a failure (exit 1) that names no password', async () => {
    const run = await inProcess([
      ...['--since', '48h', '--store', 'redis://:hunter2@127.0.0.1:1', '--api-url', mock.url],
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('cannot reach Redis at redis://***@127.0.0.1:1');
    expect(run.stderr).not.toContain('hunter2');
  });
});

it('an item the list gives unreadable is a failure (exit 1), named in what it prints', async () => {
  const broken = await createMockSchoolApi({
    apiKey: API_KEY,
    sellerId: 3,
    schoolId: 4,
    // No courseId: the list item does not match its schema.
    lists: { certificates: [{ certificateId: 31, issuedAt: ago(30 * HOUR), user: { id: 7 } }] },
  });
  try {
    const run = await inProcess([
      ...['--since', '48h', '--store', redis.url, '--prefix', prefix],
      ...['--kinds', 'certificate', '--api-url', broken.url],
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^failed {3}certificate 31: .*courseId/m);
  } finally {
    await broken.close();
  }
});
