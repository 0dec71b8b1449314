/**
 * Postgres: the idempotency store whose claim is a transaction the handlers write through
 * (`postgresStore`). Importing this entry does not load pg: the caller passes a pool.
 * @module schoolhooks/postgres
 */

export { postgresStore, postgresStoreSql } from './stores/postgres.js';
export type { PostgresStoreOptions, PostgresStoreSqlOptions } from './stores/postgres.js';
