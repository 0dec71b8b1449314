/**
 * The stores' listener on their client's `'error'` event (src/stores/connection-errors.ts): a
 * store with nobody subscribed writes the errors to the console, one line per burst, and never
 * lets one end the process; a subscriber is told of each; `close()` takes the listener off the
 * client, which stays open.
 */

import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { StoreUnavailableError } from '../../src/errors.js';
import { ConnectionErrors } from '../../src/stores/connection-errors.js';
import { postgresStore } from '../../src/stores/postgres.js';
import { redisStore } from '../../src/stores/redis.js';
import { uniqueTable, useTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { sleep, startRedisServer, type RedisServerProcess } from '../helpers/redis.js';

let database: TestPostgres;

beforeAll(async () => {
  database = await useTestPostgres();
});

afterAll(async () => {
  await database?.close();
});

afterEach(() => {
  vi.restoreAllMocks();
});

/** What the console was given, line by line, while `warn` was watched. */
function watchConsole(): string[] {
  const lines: string[] = [];
  vi.spyOn(console, 'warn').mockImplementation((line: unknown) => {
    lines.push(String(line));
  });
  return lines;
}

/** Ends the sessions of `applicationName`, as an administrator or a failover does. */
async function terminate(applicationName: string): Promise<void> {
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  try {
    await admin.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
      [applicationName],
    );
  } finally {
    await admin.end();
  }
}

/** `count` connections opened at once and left idle in `pool`, as after a burst of deliveries. */
async function warm(pool: pg.Pool, count: number): Promise<void> {
  await Promise.all(Array.from({ length: count }, () => pool.query('SELECT pg_sleep(0.05)')));
}

async function until(check: () => boolean, withinMs = 5000): Promise<void> {
  const end = Date.now() + withinMs;
  while (!check() && Date.now() < end) await sleep(20);
}

describe('postgresStore with no receiver (a reconciler, the CLI)', () => {
  it('hears an idle connection that Postgres ends, writes one console line, and lives', async () => {
    const lines = watchConsole();
    const name = `sh_errors_${randomUUID().slice(0, 8)}`;
    // No 'error' listener of its own: without the store's, this would end the test process.
    const pool = new pg.Pool({ connectionString: database.url, application_name: name, max: 3 });
    const store = postgresStore({ pool, table: uniqueTable('sh_errors') });
    try {
      await warm(pool, 3);
      expect(pool.idleCount).toBe(3);
      await terminate(name);
      await until(() => pool.idleCount === 0);
      await sleep(100);
      // Several idle connections ended at once: one burst, one line.
      expect(lines.filter((line) => line.includes('store connection failed'))).toHaveLength(1);
      expect(lines[0]).toMatch(/^schoolhooks: store connection failed: Postgres connection failed/);
      // The pool works again: a new connection for the next call.
      expect(await store.peek(['a'])).toEqual([{ state: 'free' }]);
    } finally {
      await store.close?.();
      await pool.end();
    }
  });

  it('tells a subscriber each error instead, and close() takes its listener off the pool', async () => {
    const lines = watchConsole();
    const name = `sh_errors_${randomUUID().slice(0, 8)}`;
    const pool = new pg.Pool({ connectionString: database.url, application_name: name, max: 3 });
    const listenersBefore = pool.listenerCount('error');
    const store = postgresStore({ pool, table: uniqueTable('sh_errors') });
    expect(pool.listenerCount('error')).toBe(listenersBefore + 1);
    const told: StoreUnavailableError[] = [];
    store.onError?.((error) => told.push(error));
    try {
      await warm(pool, 2);
      const idle = pool.idleCount;
      expect(idle).toBe(2);
      await terminate(name);
      await until(() => told.length >= idle);
      expect(told).toHaveLength(idle);
      for (const error of told) {
        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect(error.code).toBe('store_unavailable');
      }
      expect(lines).toEqual([]);
    } finally {
      await store.close?.();
      expect(pool.listenerCount('error')).toBe(listenersBefore);
      await pool.end();
    }
  });
});

describe('many stores on one client', () => {
  it('hear it through one listener: no leak warning, every store told, the last close() takes it off', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning);
    };
    process.on('warning', onWarning);
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    const client = new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379', {
      lazyConnect: true,
    });
    const poolBefore = pool.listenerCount('error');
    const clientBefore = client.listenerCount('error');
    // Past Node's default of ten listeners an event, where a listener each would warn of a leak.
    const stores = Array.from({ length: 12 }, (_, i) => [
      postgresStore({ pool, table: uniqueTable('sh_many') }),
      redisStore({ client, prefix: `sh-many-${randomUUID()}-${i}:` }),
    ]).flat();
    const told = stores.map(() => 0);
    stores.forEach((store, i) => store.onError?.(() => told[i]!++));
    try {
      expect(pool.listenerCount('error')).toBe(poolBefore + 1);
      expect(client.listenerCount('error')).toBe(clientBefore + 1);
      pool.emit('error', new Error('idle connection ended'));
      client.emit('error', new Error('connection reset'));
      // Each store hears its own client's error, and only its own.
      expect(told).toEqual(stores.map(() => 1));
      await stores[0]!.close?.();
      await stores[1]!.close?.();
      expect(pool.listenerCount('error')).toBe(poolBefore + 1);
      expect(client.listenerCount('error')).toBe(clientBefore + 1);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      await Promise.all(stores.map((store) => store.close?.()));
      process.off('warning', onWarning);
      expect(pool.listenerCount('error')).toBe(poolBefore);
      expect(client.listenerCount('error')).toBe(clientBefore);
      client.disconnect();
      await pool.end();
    }
  });
});

describe('redisStore with no receiver', () => {
  let redis: RedisServerProcess;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.close();
  });

  it('writes one line for a burst of failed reconnections, and close() leaves the client', async () => {
    const lines = watchConsole();
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
    const store = redisStore({ client, prefix: `sh-errors-${randomUUID()}:` });
    const errors: unknown[] = [];
    // A counter of ours, to know how many errors the client emitted (it prints nothing).
    client.on('error', (error) => errors.push(error));
    try {
      expect(await store.peek(['a'])).toEqual([{ state: 'free' }]);
      await redis.stop();
      await until(() => errors.length >= 3);
      expect(errors.length).toBeGreaterThanOrEqual(3);
      expect(lines.filter((line) => line.includes('store connection failed'))).toHaveLength(1);
      expect(lines[0]).toMatch(/Redis connection failed/);
    } finally {
      await store.close?.();
      expect(client.listenerCount('error')).toBe(1);
      client.disconnect();
      await redis.start();
    }
  });
});

describe('ConnectionErrors', () => {
  it('counts the errors of a burst in one line a period, then starts a new burst', async () => {
    const lines = watchConsole();
    const emitter = new EventEmitter();
    const errors = new ConnectionErrors('Postgres', emitter, 200);
    try {
      for (let i = 0; i < 5; i++) emitter.emit('error', new Error(`gone ${i}`));
      expect(lines).toHaveLength(1);
      await until(() => lines.length === 2, 1000);
      expect(lines[1]).toMatch(/still failing: Postgres connection failed: gone 4 \(more=4 /);
      // A period without errors ends the burst: the next is written at once.
      await sleep(450);
      emitter.emit('error', new Error('gone again'));
      expect(lines).toHaveLength(3);
      expect(lines[2]).toMatch(/store connection failed: Postgres connection failed: gone again/);
    } finally {
      errors.close();
    }
    expect(emitter.listenerCount('error')).toBe(0);
  });

  it('writes what a listener throws, never lets it escape the event', () => {
    const lines = watchConsole();
    const emitter = new EventEmitter();
    const errors = new ConnectionErrors('Redis', emitter);
    const stop = errors.subscribe(() => {
      throw new Error('listener broke');
    });
    expect(() => emitter.emit('error', new Error('connection reset'))).not.toThrow();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/listener broke/);
    stop();
    errors.close();
  });
});
