/**
 * PostgreSQL for the test suites: the server of `DATABASE_URL` (default
 * postgres://postgres@127.0.0.1:5432/test) when it answers, else a throwaway cluster made with
 * `initdb` and `pg_ctl` in a temporary directory. Nothing here skips: no Postgres means a
 * failing suite.
 * @module
 */

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmod, chown, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { entityTableOf, watchTableOf } from '../../src/stores/postgres-table.js';
import { freePort } from './redis.js';

/** A Postgres the tests may use, and how to let go of it. */
export interface TestPostgres {
  readonly url: string;
  /** Stops the cluster if this helper made it; leaves a shared server running. */
  close(): Promise<void>;
}

/**
 * `DATABASE_URL` (default postgres://postgres@127.0.0.1:5432/test) if it answers, else a fresh
 * throwaway cluster on a free port. Throws when neither is possible.
 */
export async function useTestPostgres(): Promise<TestPostgres> {
  const url = process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
  if (await answers(url, 2000)) return { url, close: async () => {} };
  try {
    return await startPostgresCluster();
  } catch (error) {
    throw new Error(
      `No Postgres for the tests: ${url.replace(/\/\/[^/@\s]*@/, '//***@')} did not answer and ` +
        `a throwaway cluster could not be started (${error instanceof Error ? error.message : String(error)}). ` +
        'Start PostgreSQL or set DATABASE_URL.',
      { cause: error },
    );
  }
}

/** A throwaway cluster a test controls. */
export interface PostgresClusterProcess extends TestPostgres {
  /** Stops the server (fast shutdown); `start` brings it back with its data. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

/**
 * A throwaway cluster: `initdb` in a temporary directory (as the `postgres` user when this
 * process runs as root, which initdb refuses), `pg_ctl start` on a free port with trust auth,
 * and a database `test`.
 */
export async function startPostgresCluster(): Promise<PostgresClusterProcess> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'schoolhooks-pg-'));
  const data = join(dir, 'data');
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    const { uid, gid } = await idsOf('postgres');
    await chown(dir, uid, gid);
    await chmod(dir, 0o700);
  }
  const bin = await postgresBin();
  const as = (command: string, args: string[]): Promise<void> => {
    const path = join(bin, command);
    return asRoot ? run('runuser', ['-u', 'postgres', '--', path, ...args]) : run(path, args);
  };
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const url = `postgres://postgres@127.0.0.1:${port}/test`;
  const cluster: PostgresClusterProcess = {
    url,
    async start() {
      await as('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-o', options, '-w', 'start']);
    },
    async stop() {
      await as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {});
    },
    async close() {
      await cluster.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
  try {
    await as('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync']);
    await cluster.start();
    const admin = new pg.Client({
      connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`,
    });
    await admin.connect();
    await admin.query('CREATE DATABASE test');
    await admin.end();
    return cluster;
  } catch (error) {
    await cluster.close();
    throw error;
  }
}

/** True when a Postgres at `url` answers `SELECT 1` within `timeoutMs`. */
export async function answers(url: string, timeoutMs: number): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** A table name of this test run's own: `<prefix>_<random>`, safe to drop afterwards. */
export function uniqueTable(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

/**
 * Drops a test's tables, first ending the sessions that still hold them (claims a test left
 * open keep a lock on their table until their lease runs out).
 */
export async function dropTables(pool: pg.Pool, keyTables: readonly string[]): Promise<void> {
  if (keyTables.length === 0) return;
  // Each store's entities' table (the ordering guard's) and watchdog's beside its keys'.
  const tables = keyTables.flatMap((name) => [name, entityTableOf(name), watchTableOf(name)]);
  await pool.query(
    'SELECT pg_terminate_backend(l.pid, 5000) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation ' +
      'WHERE c.relname = ANY($1) AND l.pid <> pg_backend_pid()',
    [tables],
  );
  for (const name of tables) await pool.query(`DROP TABLE IF EXISTS "${name}"`);
}

/**
 * Where `initdb` and `pg_ctl` are: on the PATH, or in Debian's `/usr/lib/postgresql/<version>/bin`
 * (the newest), which the `postgresql` package does not put on the PATH.
 */
async function postgresBin(): Promise<string> {
  try {
    return dirname((await capture('sh', ['-c', 'command -v initdb'])).trim());
  } catch {
    const versions = (await readdir('/usr/lib/postgresql').catch(() => [] as string[]))
      .filter((version) => /^\d+$/.test(version))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0] === undefined) throw new Error('initdb was not found (install postgresql)');
    return join('/usr/lib/postgresql', versions[0], 'bin');
  }
}

async function idsOf(user: string): Promise<{ uid: number; gid: number }> {
  const output = await capture('id', ['-u', user]);
  const group = await capture('id', ['-g', user]);
  return { uid: Number(output.trim()), gid: Number(group.trim()) };
}

function run(command: string, args: readonly string[]): Promise<void> {
  return capture(command, args).then(() => undefined);
}

function capture(command: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(output) : reject(new Error(`${command} exited with ${code}: ${output}`)),
    );
  });
}

/** A pool on the test database for one test file, and tables of its own, dropped at its end. */
export interface TestPostgresPool {
  /** The pool (made in beforeAll). */
  readonly pool: pg.Pool;
  /** The database's URL. */
  readonly url: string;
  /** A table name of this file's own (`<prefix>_<random>`), dropped in afterAll. */
  table(prefix?: string): string;
}

/**
 * Registers this file's beforeAll and afterAll: the test database (`DATABASE_URL`, or a throwaway
 * cluster), a pool of `max` connections, and the tables handed out dropped at the end.
 */
export function usePostgresPool(prefix: string, max = 20): TestPostgresPool {
  let database: TestPostgres | undefined;
  let pool: pg.Pool | undefined;
  const tables: string[] = [];
  beforeAll(async () => {
    database = await useTestPostgres();
    pool = new pg.Pool({ connectionString: database.url, max });
    pool.on('error', () => {});
  }, 60_000);
  afterAll(async () => {
    if (pool) {
      await dropTables(pool, tables);
      // Claims a test left open end with their lease: no need to wait for them.
      await Promise.race([pool.end(), new Promise((resolve) => setTimeout(resolve, 1000))]);
    }
    await database?.close();
  });
  return {
    get pool() {
      if (pool === undefined) throw new Error('the pool is made in beforeAll');
      return pool;
    },
    get url() {
      if (database === undefined) throw new Error('the database is opened in beforeAll');
      return database.url;
    },
    table(tablePrefix = prefix) {
      const name = uniqueTable(tablePrefix);
      tables.push(name);
      return name;
    },
  };
}

/**
 * A schema name of the calling test's own (`<prefix>_<random>`), whose schema `cleanups` drops
 * after the test (pg-boss makes its tables in it).
 */
export function testSchema(
  url: string,
  cleanups: (() => Promise<unknown>)[],
  prefix = 'pgb',
): string {
  const schema = uniqueTable(prefix);
  cleanups.push(async () => {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => admin.end());
  });
  return schema;
}

/** The test database of one test file, what each test opened (closed after it), and its schemas. */
export interface TestDatabase {
  /** The database's URL (known in beforeAll). */
  readonly url: string;
  /** Run after each test, last first, whatever happened. */
  readonly cleanups: (() => Promise<unknown>)[];
  /** A schema name of this test's own, dropped after it. */
  schema(prefix?: string): string;
}

/** Registers this file's hooks: the test database, and each test's cleanups run after it. */
export function useTestDatabase(prefix = 'pgb'): TestDatabase {
  let database: TestPostgres | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    database = await useTestPostgres();
  }, 60_000);
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  });
  afterAll(async () => {
    await database?.close();
  });
  const url = (): string => {
    if (database === undefined) throw new Error('the database is opened in beforeAll');
    return database.url;
  };
  return {
    get url() {
      return url();
    },
    cleanups,
    schema: (schemaPrefix = prefix) => testSchema(url(), cleanups, schemaPrefix),
  };
}
