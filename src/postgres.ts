/**
 * Postgres: the idempotency store whose claim is a transaction the handlers write through
 * (`postgresStore`), and the inbox on pg-boss (`pgBossInbox`). Importing this entry loads neither
 * pg nor pg-boss: the caller passes a pool, and pg-boss is loaded only for a `connectionString`.
 * @module schoolhooks/postgres
 */

export { postgresStore, postgresStoreSql } from './stores/postgres.js';
export type { PostgresStoreOptions, PostgresStoreSqlOptions } from './stores/postgres.js';
export { pgBossInbox } from './inbox/pg-boss.js';
export type {
  PgBossFetchedJob,
  PgBossInbox,
  PgBossInboxJob,
  PgBossInboxOptions,
  PgBossLike,
  PgBossWorkOptions,
} from './inbox/pg-boss.js';
export { pgBossJobId } from './inbox/pg-boss-tables.js';
export type { PgBossDb } from './inbox/pg-boss-tables.js';
