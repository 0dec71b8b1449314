/**
 * The "A stack on Postgres alone" recipe of docs/postgres.md is examples/pg-boss.js (its header comment
 * aside), and it runs as written (its `schoolhooks` imports resolved to the sources): a web
 * process and a worker process on a database of this test's own; a payment delivered over HTTP
 * is answered 202, the worker grants it once in the run's transaction, a resend is a duplicate,
 * and SIGTERM ends both.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { fixtureDelivery, SECRET, type Delivery } from '../helpers/deliveries.js';
import { uniqueTable, useTestPostgres, type TestPostgres } from '../helpers/postgres.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const EXAMPLE = 'examples/pg-boss.js';

let server: TestPostgres;
const databaseName = uniqueTable('pgb_readme');
let databaseUrl = '';
const children: ChildProcess[] = [];

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  server = await useTestPostgres();
  await admin((client) => client.query(`CREATE DATABASE "${databaseName}"`));
  databaseUrl = server.url.replace(/\/[^/]*$/, `/${databaseName}`);
}, 60_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  if (server !== undefined) {
    await admin((client) =>
      client.query(`DROP DATABASE IF EXISTS "${databaseName}" WITH (FORCE)`),
    ).catch(() => {});
    await server.close();
  }
});

/** The example as a process, with what it printed so far. */
function start(args: string[]): { child: ChildProcess; output: () => string } {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', './test/helpers/source-packages.mjs', EXAMPLE, ...args],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: '0',
        DATABASE_URL: databaseUrl,
        SCHOOL_WEBHOOK_SECRET: SECRET,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** POST `delivery` to `url`: the answer's status and outcome. */
async function post(url: string, { headers, body }: Delivery) {
  const response = await fetch(url, { method: 'POST', headers, body });
  return { status: response.status, ...((await response.json()) as { outcome: string }) };
}

/** The URL the web process says it listens on, once it does. */
function listeningUrl(output: () => string): Promise<string> {
  return vi.waitFor(
    () => {
      const found = /listening on (http:\/\/localhost:\d+\/webhooks\/school)/.exec(output());
      if (!found) throw new Error(`not listening yet: ${output()}`);
      return found[1]!;
    },
    { timeout: 30_000, interval: 50 },
  );
}

describe('docs/postgres.md: a stack on Postgres alone', () => {
  it('is examples/pg-boss.js as written', async () => {
    const readme = await readFile(join(ROOT, 'docs/postgres.md'), 'utf8');
    const heading = readme.indexOf('\n## A stack on Postgres alone: store, inbox and workers\n');
    expect(heading).toBeGreaterThan(-1);
    const open = readme.indexOf('\n```js\n', heading) + '\n```js\n'.length;
    const block = readme.slice(open, readme.indexOf('\n```\n', open) + 1);
    const example = (await readFile(join(ROOT, EXAMPLE), 'utf8')).replace(/^(\/\/.*\n)+/, '');
    expect(block).toBe(example);
  });

  it('answers 202 in the web process, grants once in a worker process, and stops on SIGTERM', async () => {
    const web = start([]);
    const url = await listeningUrl(web.output);
    const delivery = fixtureDelivery('PaymentCompleted');
    const send = () => post(url, delivery);
    expect(await send()).toMatchObject({ status: 202, outcome: 'queued' });

    const worker = start(['worker']);
    const grants = await vi.waitFor(
      async () => {
        const client = new pg.Client({ connectionString: databaseUrl });
        await client.connect();
        const { rows } = await client
          .query<{ idempotency_key: string }>('SELECT idempotency_key FROM grants')
          .finally(() => client.end());
        expect(rows).toHaveLength(1);
        return rows;
      },
      { timeout: 30_000, interval: 100 },
    );
    expect(grants).toEqual([{ idempotency_key: delivery.idempotencyKey }]);
    expect(await send()).toMatchObject({ status: 200, outcome: 'duplicate' });

    worker.child.kill('SIGTERM');
    web.child.kill('SIGTERM');
    expect(await exited(worker.child)).toBe(0);
    expect(await exited(web.child)).toBe(0);
    expect(worker.output()).toContain('worker running');
  }, 90_000);

  it('keeps answering when its database connections are terminated, as in a PostgreSQL restart', async () => {
    const web = start([]);
    const url = await listeningUrl(web.output);
    const send = () => post(url, fixtureDelivery('PaymentCompleted'));
    // The pool now holds an idle connection: its error would end the process, were the store
    // not listening (the example's pool has no listener of its own).
    expect(await send()).toMatchObject({ status: 202, outcome: 'queued' });
    const terminated = await admin((client) =>
      client.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [databaseName],
      ),
    );
    expect(terminated.rowCount).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(web.child.exitCode).toBeNull();
    expect(await send()).toMatchObject({ status: 202, outcome: 'queued' });
    // Heard by postgresStore and reported by the receiver (its console logger, with no onError).
    expect(web.output()).toContain(
      'Postgres connection failed: terminating connection due to administrator command',
    );

    web.child.kill('SIGTERM');
    expect(await exited(web.child)).toBe(0);
  }, 90_000);
});
