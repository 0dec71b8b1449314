/**
 * Postgres only: the idempotency store whose claim is a transaction the handlers write through
 * (`postgresStore`), and the inbox on pg-boss (`pgBossInbox`). Importing this entry loads
 * neither pg nor pg-boss: the caller passes a pool, and pg-boss is loaded by the inbox when made.
 * @module schoolhooks/postgres
 */

export { postgresStore, postgresStoreSql } from './stores/postgres.js';
export type { PostgresStoreOptions, PostgresStoreSqlOptions } from './stores/postgres.js';
