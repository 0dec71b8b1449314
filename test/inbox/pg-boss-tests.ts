/**
 * What the tests of pgBossInbox share: a real Postgres, a pool to read pg-boss's tables with,
 * inboxes on one queue standing for processes (each with a pg-boss of its own, as the scheduled
 * tasks' tests use them), a pg-boss schema of their own per test, and everything they opened
 * closed or dropped after each test.
 * @module
 */

import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { Logger } from '../../src/index.js';
import { pgBossInbox, type PgBossInbox } from '../../src/postgres.js';
import { uniqueTable, useTestPostgres, type TestPostgres } from '../helpers/postgres.js';

/** Registers the file's hooks; call once, at the top of a test file. */
export function usePgBossTests({ poolMax = 4 }: { poolMax?: number } = {}) {
  let database: TestPostgres | undefined;
  let pool: pg.Pool | undefined;
  let schema = '';
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    database = await useTestPostgres();
    pool = new pg.Pool({ connectionString: database.url, max: poolMax });
    pool.on('error', () => {});
  }, 60_000);
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  });
  afterAll(async () => {
    await pool?.end();
    await database?.close();
  });

  /** A pg-boss schema for this test, dropped after it; {@link schema} names it from then on. */
  function freshSchema(): string {
    const made = uniqueTable('pgb');
    schema = made;
    cleanups.push(() => pool!.query(`DROP SCHEMA IF EXISTS "${made}" CASCADE`));
    return made;
  }

  /** `count` inboxes on one queue of a fresh schema, each with a pg-boss of its own. */
  function inboxes(count: number, logger?: Logger): PgBossInbox[] {
    const ofSchema = freshSchema();
    const queueName = `inbox-${randomUUID().slice(0, 8)}`;
    return Array.from({ length: count }, () => {
      const inbox = pgBossInbox({
        connectionString: database!.url,
        schema: ofSchema,
        queueName,
        ...(logger ? { logger } : {}),
      });
      cleanups.push(() => inbox.close());
      return inbox;
    });
  }

  return {
    inboxes,
    freshSchema,
    cleanups,
    /** The test database (set once the hooks ran). */
    get database(): TestPostgres {
      return database!;
    },
    /** A pool on it. */
    get pool(): pg.Pool {
      return pool!;
    },
    /** The schema made last. */
    get schema(): string {
      return schema;
    },
  };
}
