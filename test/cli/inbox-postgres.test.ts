/**
 * `schoolhooks inbox … --postgres URL` against real Postgres and a real pg-boss inbox holding a
 * completed job, a dead letter and a waiting job, in a pg-boss schema of this file's own.
 */

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { main } from '../../src/cli/main.js';
import { createReceiver, memoryStore, type Receiver } from '../../src/index.js';
import { pgBossInbox, pgBossJobId, type PgBossInbox } from '../../src/postgres.js';
import {
  createTestDelivery,
  fixtureDelivery,
  SECRET,
  type Delivery,
} from '../helpers/deliveries.js';
import { uniqueTable, useTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { freePort } from '../helpers/redis.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

let database: TestPostgres;
let inbox: PgBossInbox;
let receiver: Receiver;
const schema = uniqueTable('pgb_cli');
const queue = `cli-${randomUUID().slice(0, 8)}`;
const signatures: string[] = [];
let done: Delivery;
let dead: Delivery;
let waiting: Delivery;

async function cli(args: readonly string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    out: (text) => void (stdout += `${text}\n`),
    err: (text) => void (stderr += `${text}\n`),
    readStdin: async () => new Uint8Array(),
    stdinIsTty: true,
    env: {},
    untilStopped: () => new Promise(() => {}),
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

const target = () => ['--postgres', database.url, '--schema', schema, '--queue', queue];

async function deliver(delivery: Delivery): Promise<void> {
  signatures.push(delivery.headers['signature']!);
  const result = await receiver.handle({ method: 'POST', ...delivery });
  expect(result.outcome).toBe('queued');
}

beforeAll(async () => {
  database = await useTestPostgres();
  inbox = pgBossInbox({ connectionString: database.url, schema, queueName: queue, backoffMs: 10 });
  receiver = createReceiver({ secret: SECRET, store: memoryStore(), inbox, logger: false });
  receiver.on('UserSignedIn', () => {});
  done = createTestDelivery('UserSignedIn', { user: { id: 1 } }, { idempotencyKey: 'cli:done' });
  dead = fixtureDelivery(
    'PaymentCompleted',
    (data) => {
      (data['payment'] as { invoice: Record<string, unknown> }).invoice['totalAmount'] = 'lots';
    },
    { idempotencyKey: `dead-${randomUUID()}` },
  );
  await deliver(done);
  await deliver(dead);
  const worker = inbox.work(receiver, { pollIntervalMs: 20 });
  await vi.waitFor(
    async () => {
      expect(await inbox.jobs({ state: 'completed' })).toHaveLength(1);
      expect(await inbox.jobs({ state: 'failed' })).toHaveLength(1);
    },
    { timeout: 10_000, interval: 25 },
  );
  await worker.close();
  // Stored after the worker stopped: it stays waiting.
  waiting = createTestDelivery('UserSignedIn', { user: { id: 2 } });
  await deliver(waiting);
}, 60_000);

afterAll(async () => {
  await inbox?.close();
  if (database !== undefined) {
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
    await database.close();
  }
});

/** Nothing secret or signed in what the CLI printed. */
function expectNothingSecret(run: Run): void {
  for (const text of [run.stdout, run.stderr]) {
    expect(text).not.toContain(SECRET);
    for (const signature of signatures) expect(text).not.toContain(signature);
    expect(text).not.toContain('"body"');
  }
}

describe('schoolhooks inbox --postgres', () => {
  it('lists every job with its state, attempts, event and reason, run as the bin', async () => {
    const child = spawn(
      process.execPath,
      ['--import', TSX, join(ROOT, 'src/cli/index.ts'), 'inbox', 'list', ...target()],
      { cwd: ROOT },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    const run = { code, stdout, stderr };
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+STATE\s+ATTEMPTS\s+EVENT\s+RECEIVED\s+REASON$/);
    expect(lines.at(-1)).toBe('3 jobs');
    expect(run.stdout).toMatch(
      new RegExp(`${pgBossJobId('cli:done')}\\s+completed\\s+1\\s+UserSignedIn`),
    );
    expect(run.stdout).toMatch(
      new RegExp(
        `${pgBossJobId(dead.idempotencyKey)}\\s+failed\\s+1\\s+PaymentCompleted\\s+\\S+\\s+invalid_payload: `,
      ),
    );
    expect(run.stdout).toMatch(
      new RegExp(`${pgBossJobId(waiting.idempotencyKey)}\\s+waiting\\s+0\\s+UserSignedIn`),
    );
    expectNothingSecret(run);
  });

  it('lists one state as JSON, and shows one job by its key or its id', async () => {
    const failed = await cli(['inbox', 'list', '--state', 'failed', '--json', ...target()]);
    expect(failed.code).toBe(0);
    expect(JSON.parse(failed.stdout)).toEqual([
      expect.objectContaining({
        id: pgBossJobId(dead.idempotencyKey),
        idempotencyKey: dead.idempotencyKey,
        state: 'failed',
        attemptsMade: 1,
        reason: expect.stringMatching(/^invalid_payload: .*totalAmount/),
      }),
    ]);
    const byKey = await cli(['inbox', 'show', 'cli:done', ...target()]);
    expect(byKey.code).toBe(0);
    expect(byKey.stdout).toMatch(/^id:\s+\S+\nevent:\s+UserSignedIn\n/);
    expect(byKey.stdout).toMatch(/outcome:\s+processed/);
    expect(byKey.stdout).toMatch(/finishedAt:\s+\d{4}-/);
    const byId = await cli(['inbox', 'show', pgBossJobId('cli:done'), '--json', ...target()]);
    expect(JSON.parse(byId.stdout)).toMatchObject({
      idempotencyKey: 'cli:done',
      state: 'completed',
    });
    expectNothingSecret(failed);
    expectNothingSecret(byKey);
    expect(await cli(['inbox', 'show', 'nope', ...target()])).toMatchObject({ code: 1 });
  });

  it('retries a named dead letter, exits 1 for a job that is not one, and retries --all of one --event', async () => {
    const run = await cli([
      'inbox',
      'retry',
      dead.idempotencyKey,
      waiting.idempotencyKey,
      ...target(),
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe(`retried ${dead.idempotencyKey}\n`);
    expect(run.stderr).toBe(
      `schoolhooks inbox: ${waiting.idempotencyKey}: not a dead letter in this inbox\n`,
    );
    expect(await inbox.getJob(dead.idempotencyKey)).toMatchObject({
      state: 'waiting',
      attemptsMade: 0,
    });
    const worker = inbox.work(receiver, { pollIntervalMs: 20 });
    await vi.waitFor(
      async () =>
        expect(await inbox.getJob(dead.idempotencyKey)).toMatchObject({ state: 'failed' }),
      { timeout: 10_000, interval: 25 },
    );
    await worker.close();
    const other = await cli(['inbox', 'retry', '--all', '--event', 'UserSignedIn', ...target()]);
    expect(other).toEqual({ code: 0, stdout: '0 dead letters back in the queue\n', stderr: '' });
    const all = await cli(['inbox', 'retry', '--all', '--event', 'PaymentCompleted', ...target()]);
    expect(all).toEqual({ code: 0, stdout: '1 dead letter back in the queue\n', stderr: '' });
    expect(await inbox.jobs({ state: 'failed' })).toEqual([]);
  });

  it('exits 2 for a queue or schema that is not there, naming the queues, and creates nothing', async () => {
    const typo = `cli-typo-${randomUUID().slice(0, 8)}`;
    const run = await cli([
      'inbox',
      'list',
      '--postgres',
      database.url,
      '--schema',
      schema,
      '--queue',
      typo,
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      `no queue '${typo}' in the pg-boss of the schema '${schema}'; the queues there: ${queue}`,
    );
    const noSchema = uniqueTable('pgb_none');
    const none = await cli(['inbox', 'list', '--postgres', database.url, '--schema', noSchema]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(`no pg-boss in the schema '${noSchema}'`);
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    const { rows } = await admin.query(
      `SELECT (SELECT count(*) FROM "${schema}".queue WHERE name = $1)::int AS queues, ` +
        '(SELECT count(*) FROM pg_namespace WHERE nspname = $2)::int AS schemas',
      [typo, noSchema],
    );
    await admin.end();
    expect(rows).toEqual([{ queues: 0, schemas: 0 }]);
  });

  it('exits 1 soon when Postgres cannot be reached, without printing the password; 2 for a bad URL', async () => {
    const port = await freePort();
    const startedAt = performance.now();
    const run = await cli([
      'inbox',
      'list',
      '--postgres',
      `postgres://user:hunter2@127.0.0.1:${port}/db`,
    ]);
    expect(performance.now() - startedAt).toBeLessThan(6000);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`cannot reach Postgres at postgres://***@127.0.0.1:${port}/db`);
    expect(run.stderr).not.toContain('hunter2');
    expect(await cli(['inbox', 'list', '--postgres', 'mysql://x'])).toMatchObject({ code: 2 });
    expect(
      await cli(['inbox', 'list', '--postgres', database.url, '--redis', 'redis://x']),
    ).toMatchObject({ code: 2 });
  });
});
