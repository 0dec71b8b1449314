/**
 * The receiver's store a CLI command reads (`reconcile`, `health`), from `--store` (redis:// or
 * postgres://) with `--prefix` or `--table`: opened on a client that fails fast rather than
 * retrying, read-only (a Postgres table that is not there is a usage error, never created), and
 * named in a failure without its user or password. ioredis (or pg) is loaded only when used.
 * @module
 */

import type { Pool } from 'pg';
import { POSTGRES_STORE_DEFAULTS } from '../defaults.js';
import { ConfigError } from '../errors.js';
import type { IdempotencyStore } from '../stores/types.js';
import { CliFailure, messageOf, UsageError } from './command.js';
import { CONNECT_TIMEOUT_MS, connectRedis, withoutCredentials } from './connections.js';

/** The options that name the store. */
export interface StoreValues {
  store: string | undefined;
  prefix: string | undefined;
  table: string | undefined;
}

/**
 * --store as a URL of Redis or Postgres, with only the options of its kind; a {@link UsageError}
 * that never repeats the URL (it may hold a password).
 *
 * @example
 * ```ts
 * const url = storeUrl({ store: 'redis://127.0.0.1:6379', prefix: undefined, table: undefined });
 * ```
 */
export function storeUrl(values: StoreValues): URL {
  if (values.store === undefined) {
    throw new UsageError('--store is required: the redis:// or postgres:// URL of the store');
  }
  const url = URL.canParse(values.store) ? new URL(values.store) : undefined;
  const kind = url === undefined ? undefined : storeKind(url);
  if (kind === undefined) {
    // Never the URL itself: it may hold a password.
    throw new UsageError(
      '--store must be a well-formed redis://, rediss://, postgres:// or postgresql:// URL',
    );
  }
  if (kind === 'redis' && values.table !== undefined) {
    throw new UsageError('--table is for a postgres:// store');
  }
  if (kind === 'postgres' && values.prefix !== undefined) {
    throw new UsageError('--prefix is for a redis:// store');
  }
  return url!;
}

function storeKind(url: URL): 'redis' | 'postgres' | undefined {
  if (url.protocol === 'redis:' || url.protocol === 'rediss:') return 'redis';
  if (url.protocol === 'postgres:' || url.protocol === 'postgresql:') return 'postgres';
  return undefined;
}

/** An open store and how to let go of it. */
export interface OpenStore {
  readonly store: IdempotencyStore;
  close(): Promise<void>;
}

/**
 * The store of --store (checked by {@link storeUrl}), on a client that fails fast rather than
 * retrying; `command` names the command in a failure.
 *
 * @example
 * ```ts
 * const store = await openStore(storeUrl(values), values, 'health');
 * try { … } finally { await store.close(); }
 * ```
 */
export async function openStore(
  url: URL,
  values: StoreValues,
  command: string,
): Promise<OpenStore> {
  return storeKind(url) === 'redis'
    ? openRedis(url, values.prefix, command)
    : openPostgres(url, values.table, command);
}

async function openRedis(
  url: URL,
  prefix: string | undefined,
  command: string,
): Promise<OpenStore> {
  let modules;
  try {
    modules = await Promise.all([import('ioredis'), import('../stores/redis.js')]);
  } catch (error) {
    throw new CliFailure(`${command} --store redis:// needs ioredis: ${messageOf(error)}`);
  }
  const [{ Redis: RedisClient }, { redisStore }] = modules;
  const client = await connectRedis(RedisClient, url.href);
  let store: IdempotencyStore;
  try {
    store = redisStore({ client, ...(prefix === undefined ? {} : { prefix }) });
  } catch (error) {
    client.disconnect();
    if (error instanceof ConfigError) throw new UsageError(`--prefix: ${error.message}`);
    throw error;
  }
  return { store, close: async () => client.disconnect() };
}

async function openPostgres(
  url: URL,
  table: string | undefined,
  command: string,
): Promise<OpenStore> {
  let modules;
  try {
    modules = await Promise.all([import('pg'), import('../stores/postgres.js')]);
  } catch (error) {
    throw new CliFailure(`${command} --store postgres:// needs pg: ${messageOf(error)}`);
  }
  const [pgModule, { postgresStore }] = modules;
  // pg is CommonJS: its classes are on `default` when imported, on the module when required.
  const { Pool: PgPool } = (pgModule as { default?: { Pool: typeof Pool } }).default ?? pgModule;
  const pool = new PgPool({
    connectionString: url.href,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    max: 2,
  });
  let store: IdempotencyStore;
  try {
    // Made before the first connection: from here on the store hears the pool's 'error' events
    // (an idle connection the server ended) and writes them to the console, one line a burst.
    store = postgresStore({
      pool,
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
      ...(table === undefined ? {} : { table }),
    });
  } catch (error) {
    await pool.end().catch(() => {});
    if (error instanceof ConfigError) throw new UsageError(`--table: ${error.message}`);
    throw error;
  }
  const close = async (): Promise<void> => {
    await pool.end().catch(() => {});
    await store.close?.();
  };
  try {
    await (await pool.connect()).release();
  } catch (error) {
    await close();
    throw new CliFailure(
      `cannot reach Postgres at ${withoutCredentials(url)}: ${messageOf(error)}`,
    );
  }
  try {
    await checkTableExists(pool, url, table ?? POSTGRES_STORE_DEFAULTS.table);
  } catch (error) {
    await close();
    throw error;
  }
  return { store, close };
}

/**
 * A command that reads the store creates nothing: a table that is not there is a mistyped `--table` (or the wrong
 * database), a usage error, rather than every entity reported missing.
 */
async function checkTableExists(pool: Pool, url: URL, name: string): Promise<void> {
  let found: boolean | undefined;
  try {
    const quoted = name
      .split('.')
      .map((part) => `"${part}"`)
      .join('.');
    const { rows } = await pool.query<{ found: boolean }>(
      'SELECT to_regclass($1) IS NOT NULL AS found',
      [quoted],
    );
    found = rows[0]?.found;
  } catch (error) {
    throw new CliFailure(`cannot read Postgres at ${withoutCredentials(url)}: ${messageOf(error)}`);
  }
  if (found !== true) {
    throw new UsageError(
      `--table: there is no table ${name} in ${withoutCredentials(url)}; give the table of the ` +
        "receiver's postgresStore",
    );
  }
}
