/**
 * The tables of `postgresStore` (the keys', and the entities' beside it): their names checked and
 * quoted, their DDL, the statements the store runs on them, and their upkeep (created once on
 * first use, expired rows swept at most once a minute).
 * @module
 */

// Types only: importing this file never loads pg.
import { createHash } from 'node:crypto';
import type { Pool } from 'pg';
import { ConfigError } from '../errors.js';
import { noop } from '../noop.js';
import { POSTGRES_STORE_DEFAULTS } from '../defaults.js';

/** How many expired keys one statement deletes, and how many statements one sweep runs. */
const SWEEP_BATCH = 500;
const SWEEP_BATCHES = 10;

/** One part of a table name: what Postgres accepts unquoted, in any letter case. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

/** The validated parts of a table name, each double-quoted, and the name of its index. */
export interface TableName {
  /** `"name"` or `"schema"."name"`. */
  readonly quoted: string;
  /** The expiry index, `"name_expires_at"` (in the table's schema). */
  readonly index: string;
  /** The table as written (for the advisory lock's key and for messages). */
  readonly plain: string;
}

/** The keys' table and, beside it, the entities' (the ordering guard's newest versions). */
export interface StoreTables extends TableName {
  /** `name_entities` in the same schema (see {@link entityTableOf}). */
  readonly entities: TableName;
}

/** The longest identifier Postgres keeps whole (it cuts longer ones to 63 bytes). */
const MAX_IDENTIFIER = 63;
const ENTITIES_SUFFIX = '_entities';

/** `table` checked (a name or schema.name) and quoted, or a `ConfigError` naming `factory`. */
export function tableName(table: string, factory: string): StoreTables {
  const parts = table.split('.');
  if (parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) {
    throw new ConfigError(
      `${factory}: table must be a name or schema.name of letters, digits, "_" and "$"`,
    );
  }
  const entities = [...parts.slice(0, -1), entityTableOf(parts[parts.length - 1]!)];
  return { ...quotedName(parts), entities: quotedName(entities) };
}

/** The parts of a checked name, quoted, and its expiry index. */
function quotedName(parts: readonly string[]): TableName {
  const name = parts[parts.length - 1]!;
  return {
    quoted: parts.map((part) => `"${part}"`).join('.'),
    index: `"${`${name}_expires_at`.slice(0, MAX_IDENTIFIER)}"`,
    plain: parts.join('.'),
  };
}

/**
 * The entities' table of the keys' table `name`: `name_entities`, or, when that would be cut
 * past 63 characters, the name's first 45 characters, `_`, 8 hex digits of its SHA-256 and
 * `_entities` (two long names that share their start still get two tables).
 */
export function entityTableOf(name: string): string {
  if (name.length + ENTITIES_SUFFIX.length <= MAX_IDENTIFIER) return name + ENTITIES_SUFFIX;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  const head = name.slice(0, MAX_IDENTIFIER - ENTITIES_SUFFIX.length - hash.length - 1);
  return `${head}_${hash}${ENTITIES_SUFFIX}`;
}

/**
 * The statements that create the keys' table and the entities' beside it, with their expiry
 * indexes, `IF NOT EXISTS`.
 */
export function tableDdl({ quoted, index, entities }: StoreTables): string {
  return (
    `CREATE TABLE IF NOT EXISTS ${quoted} (\n` +
    '  key text PRIMARY KEY,\n' +
    '  fingerprint text NOT NULL,\n' +
    '  expires_at timestamptz NOT NULL\n' +
    ');\n' +
    `CREATE INDEX IF NOT EXISTS ${index} ON ${quoted} (expires_at);\n` +
    `CREATE TABLE IF NOT EXISTS ${entities.quoted} (\n` +
    '  key text PRIMARY KEY,\n' +
    '  version_ms double precision NOT NULL,\n' +
    '  expires_at timestamptz NOT NULL\n' +
    ');\n' +
    `CREATE INDEX IF NOT EXISTS ${entities.index} ON ${entities.quoted} (expires_at);\n`
  );
}

/** The statements a claim and a completion run on the tables. */
export interface KeyStatements {
  /** The text of a key's advisory lock is this prefix and the key. */
  readonly lockPrefix: string;
  /** $1 the key: its fingerprint, while it has not expired. */
  readonly selectDone: string;
  /** $1 the key, $2 its fingerprint, $3 how long it is kept in ms. */
  readonly upsertDone: string;
  /** The text of an entity's advisory lock is this prefix and the entity. */
  readonly entityLockPrefix: string;
  /** $1 the entity, $2 a version: `superseded`, true while a newer one is recorded. */
  readonly selectSuperseded: string;
  /** $1 the entity, $2 its version, $3 how long it is kept in ms; a newer one recorded stays. */
  readonly upsertEntity: string;
}

/** The statements on the tables `name`. */
export function keyStatements(name: StoreTables): KeyStatements {
  const { entities } = name;
  return {
    // The lock's key is a 64-bit hash of the table and the idempotency key, so two tables never
    // share locks. The table name has no ':' (tableName checks it), so the text is unambiguous.
    lockPrefix: `schoolhooks:${name.plain}:`,
    selectDone:
      `SELECT fingerprint FROM ${name.quoted} ` +
      'WHERE key = $1 AND expires_at > clock_timestamp()',
    upsertDone:
      `INSERT INTO ${name.quoted} (key, fingerprint, expires_at) ` +
      "VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond') " +
      'ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, ' +
      'expires_at = excluded.expires_at',
    // The entities' table name has no ':' either, and its own prefix: a key never shares a lock
    // with an entity.
    entityLockPrefix: `schoolhooks:${entities.plain}:`,
    selectSuperseded:
      `SELECT version_ms > $2 AS superseded FROM ${entities.quoted} ` +
      'WHERE key = $1 AND expires_at > clock_timestamp()',
    upsertEntity:
      `INSERT INTO ${entities.quoted} AS t (key, version_ms, expires_at) ` +
      "VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond') " +
      'ON CONFLICT (key) DO UPDATE SET version_ms = excluded.version_ms, ' +
      'expires_at = excluded.expires_at ' +
      'WHERE t.version_ms <= excluded.version_ms OR t.expires_at <= clock_timestamp()',
  };
}

/** The table, created once on first use, and its expired keys deleted now and then. */
export class TableUpkeep {
  readonly #pool: Pool;
  readonly #name: StoreTables;
  /** One statement per table: the keys', the entities'. */
  readonly #deleteExpired: readonly string[];
  #ready: Promise<void> | undefined;
  #made = false;
  #lastSweep = 0;

  constructor(pool: Pool, name: StoreTables) {
    this.#pool = pool;
    this.#name = name;
    this.#deleteExpired = [name.quoted, name.entities.quoted].map(
      (quoted) =>
        `DELETE FROM ${quoted} WHERE key IN (SELECT key FROM ${quoted} ` +
        `WHERE expires_at <= clock_timestamp() LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED)`,
    );
  }

  /** True once the table is known to exist. */
  get made(): boolean {
    return this.#made;
  }

  /** Creates the table once (callers bound the wait); a failure is retried by the next call. */
  ensure(): Promise<void> {
    this.#ready ??= this.#pool.query(tableDdl(this.#name)).then(
      () => void (this.#made = true),
      (error: unknown) => {
        // Two processes creating it at once: the loser sees a duplicate; the table is there.
        if (isDuplicateObject(error)) return void (this.#made = true);
        this.#ready = undefined;
        throw error;
      },
    );
    return this.#ready;
  }

  /** Deletes expired keys in small batches, at most once a minute, never holding up a claim. */
  sweep(): void {
    const now = Date.now();
    if (now - this.#lastSweep < POSTGRES_STORE_DEFAULTS.sweepEveryMs) return;
    this.#lastSweep = now;
    for (const deleteExpired of this.#deleteExpired) {
      void (async () => {
        for (let batch = 0; batch < SWEEP_BATCHES; batch++) {
          const { rowCount } = await this.#pool.query(deleteExpired);
          if ((rowCount ?? 0) < SWEEP_BATCH) return;
        }
      })().catch(noop);
    }
  }
}

/**
 * `CREATE … IF NOT EXISTS` racing another session: 23505 on pg_type, 42P07 (the relation), or
 * 42710 (its row type, "type … already exists").
 */
function isDuplicateObject(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === '42P07' || code === '42710';
}
