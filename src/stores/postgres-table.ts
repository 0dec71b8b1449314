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
import { noop } from '../utils/noop.js';
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
  /** `name_watch` in the same schema, the watchdog's notes (see {@link watchTableOf}). */
  readonly watch: TableName;
}

/** The longest identifier Postgres keeps whole (it cuts longer ones to 63 bytes). */
const MAX_IDENTIFIER = 63;
const ENTITIES_SUFFIX = '_entities';
const WATCH_SUFFIX = '_watch';

/** `table` checked (a name or schema.name) and quoted, or a `ConfigError` naming `factory`. */
export function tableName(table: string, factory: string): StoreTables {
  const parts = table.split('.');
  if (parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) {
    throw new ConfigError(
      `${factory}: table must be a name or schema.name of letters, digits, "_" and "$"`,
    );
  }
  const beside = (name: string) => quotedName([...parts.slice(0, -1), name]);
  const last = parts[parts.length - 1]!;
  return {
    ...quotedName(parts),
    entities: beside(entityTableOf(last)),
    watch: beside(watchTableOf(last)),
  };
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
  return besideTableOf(name, ENTITIES_SUFFIX);
}

/**
 * The watchdog's table of the keys' table `name`: `name_watch`, shortened past 63 characters as
 * {@link entityTableOf} shortens.
 */
export function watchTableOf(name: string): string {
  return besideTableOf(name, WATCH_SUFFIX);
}

/** `name` and `suffix`, or the name's head, `_`, 8 hex digits of its SHA-256 and `suffix`. */
function besideTableOf(name: string, suffix: string): string {
  if (name.length + suffix.length <= MAX_IDENTIFIER) return name + suffix;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  const head = name.slice(0, MAX_IDENTIFIER - suffix.length - hash.length - 1);
  return `${head}_${hash}${suffix}`;
}

/**
 * The statements that create the keys' table and the entities' and the watchdog's beside it,
 * with their expiry indexes, `IF NOT EXISTS`. The watchdog's has a row a tenant (`tenant_row`,
 * `key` '', `sent` the JSON of the deliveries that only succeeded lately) and one a delivery
 * answered non-2xx (`key` its storage key, `sent` the JSON of its key and event as they came,
 * `success_at` its latest success).
 */
export function tableDdl({ quoted, index, entities, watch }: StoreTables): string {
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
    `CREATE INDEX IF NOT EXISTS ${entities.index} ON ${entities.quoted} (expires_at);\n` +
    watchTableDdl(watch)
  );
}

/** The statements that create the watchdog's table and its expiry index, `IF NOT EXISTS`. */
export function watchTableDdl(watch: TableName): string {
  return (
    `CREATE TABLE IF NOT EXISTS ${watch.quoted} (\n` +
    '  scope text NOT NULL,\n' +
    '  tenant_row boolean NOT NULL,\n' +
    '  key text NOT NULL,\n' +
    '  sent text,\n' +
    '  first_at double precision,\n' +
    '  seen integer,\n' +
    '  last_at double precision,\n' +
    '  success_at double precision,\n' +
    '  attempt_at double precision,\n' +
    '  failing_since double precision,\n' +
    '  expires_at timestamptz NOT NULL,\n' +
    '  PRIMARY KEY (scope, tenant_row, key)\n' +
    ');\n' +
    `CREATE INDEX IF NOT EXISTS ${watch.index} ON ${watch.quoted} (expires_at);\n`
  );
}

/** What a claim asks of the tables: its key, its records and its entity, as stored. */
export interface ClaimValues {
  readonly key: string;
  readonly records: readonly string[];
  /** The key's fingerprint and ttl once done, and its records'. */
  readonly done: { readonly fingerprint: string; readonly ttlMs: number };
  readonly recordsDone: { readonly fingerprint: string; readonly ttlMs: number };
  readonly entity?:
    { readonly key: string; readonly versionMs: number; readonly ttlMs: number } | undefined;
}

/** The statements a claim and a peek run on the tables. */
export interface KeyStatements {
  /**
   * A claim's one round trip: a simple query of three statements, its values written as
   * literals quoted by `escape` (pg's `escapeLiteral`; a parameter would take a round trip of
   * its own). `BEGIN`; then every lock the claim needs, tried without waiting (its key's, its
   * records', and its entity's unless a newer version is applied: a superseded claim takes no
   * entity), each a column `l0`, `l1`… and what they took noted in the transaction
   * (`schoolhooks.claim`: `none`, `keys` or `entity`); then, reading what the transactions that
   * held the locks before committed, what is done (`done`, `records`, `superseded`) and, only
   * when the locks were all taken, the rows the completion commits: the key, each record not
   * done yet, the version when the entity is taken. The parts about records, and about the
   * entity, are left out of a claim that has none: what Postgres parses and plans for them costs
   * more than the rest of the statement (a reconcile run's recovery has neither).
   */
  claim(values: ClaimValues, escape: (text: string) => string): string;
  /** $1 keys (text[]): those done, with their fingerprints. */
  readonly peekDone: string;
}

/** `clock_timestamp()` plus `ms` milliseconds. */
const expiresIn = (ms: string): string => `clock_timestamp() + ${ms} * interval '1 millisecond'`;

/** A number as a literal: finite, or a `ConfigError` (nothing but digits reaches the text). */
function numeral(value: number, what: string): string {
  if (!Number.isFinite(value)) {
    throw new ConfigError(`postgresStore: ${what} must be a finite number, not ${String(value)}`);
  }
  return String(value);
}

/** What a row that has not expired is. */
const LIVE = 'expires_at > clock_timestamp()';

/** The statements on the tables `name`. */
export function keyStatements(name: StoreTables): KeyStatements {
  const { entities } = name;
  const live = LIVE;
  const keys = name.quoted;
  // A lock's key is a 64-bit hash of its table and its key, so two tables never share locks, and a
  // key never shares one with an entity (the entities' table has a name of its own). The table
  // names have no ':' (tableName checks it), so the text is unambiguous.
  const lockOf = (table: string, key: string, escape: (text: string) => string) =>
    `pg_try_advisory_xact_lock(hashtextextended(${escape(`schoolhooks:${table}:${key}`)}, 0))`;
  return {
    claim({ key, records, done, recordsDone, entity }, escape) {
      const columns = [key, ...records].map((one) => lockOf(name.plain, one, escape));
      const allKeys = columns.map((_, i) => `l${i}`).join(' AND ');
      let entityHeld = 'false';
      const version =
        entity === undefined ? 'NULL::double precision' : numeral(entity.versionMs, 'versionMs');
      const entityKey = entity === undefined ? 'NULL::text' : escape(entity.key);
      if (entity !== undefined) {
        const newer =
          `SELECT 1 FROM ${entities.quoted} WHERE key = ${entityKey} ` +
          `AND version_ms > ${version} AND ${live}`;
        const lock = lockOf(entities.plain, entity.key, escape);
        columns.push(`CASE WHEN EXISTS (${newer}) THEN false ELSE ${lock} END`);
        entityHeld = `l${columns.length - 1}`;
      }
      const locks =
        `SELECT l.*, set_config('schoolhooks.claim', CASE WHEN ${allKeys} THEN ` +
        `CASE WHEN ${entityHeld} THEN 'entity' ELSE 'keys' END ELSE 'none' END, true) AS taken ` +
        `FROM (SELECT ${columns.map((column, i) => `${column} AS l${i}`).join(', ')}) AS l`;
      const taken = "current_setting('schoolhooks.claim')";
      const keyText = escape(key);
      const keyDone = 'NOT EXISTS (SELECT 1 FROM key_done)';
      // Only what the claim asks about is in the statement: one without records or without an
      // entity (a reconcile run's recovery has neither) neither plans nor runs their parts.
      const parts = [
        `key_done AS (SELECT fingerprint FROM ${keys} WHERE key = ${keyText} AND ${live})`,
        'write_key AS (' +
          `INSERT INTO ${keys} (key, fingerprint, expires_at) ` +
          `SELECT ${keyText}, ${escape(done.fingerprint)}, ${expiresIn(numeral(done.ttlMs, 'ttlMs'))} ` +
          `WHERE ${taken} <> 'none' AND ${keyDone} ` +
          'ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, ' +
          'expires_at = excluded.expires_at)',
      ];
      // NULL for a record not done: a fingerprint may be any text, '' too.
      const recordsPart =
        records.length === 0
          ? undefined
          : recordParts(keys, records, recordsDone, escape, taken, keyDone);
      const entityPart =
        entity === undefined
          ? undefined
          : entityParts(entities.quoted, entity, entityKey, version, taken, keyDone);
      parts.push(...(recordsPart?.parts ?? []), ...(entityPart?.parts ?? []));
      const recordsDoneOut = recordsPart?.out ?? 'NULL::text[]';
      const superseded = entityPart?.out ?? 'false';
      const state =
        `WITH ${parts.join(', ')} ` +
        'SELECT (SELECT fingerprint FROM key_done) AS done, ' +
        `${recordsDoneOut} AS records, ${superseded} AS superseded`;
      // Read committed: each statement sees what was committed before it began, so the state
      // read after the locks sees the commit of the transaction that held them before.
      return `BEGIN ISOLATION LEVEL READ COMMITTED; ${locks}; ${state}`;
    },
    peekDone: `SELECT key, fingerprint FROM ${keys} WHERE key = ANY($1::text[]) AND ${live}`,
  };
}

/** The parts of a claim's state: its statements (`WITH` parts) and what its row reads of them. */
interface StateParts {
  readonly parts: string[];
  readonly out: string;
}

/** The records a claim takes: read, written when free, and their fingerprints in order. */
function recordParts(
  keys: string,
  records: readonly string[],
  recordsDone: { fingerprint: string; ttlMs: number },
  escape: (text: string) => string,
  taken: string,
  keyDone: string,
): StateParts {
  return {
    parts: [
      'records AS (' +
        'SELECT r.key, r.n, d.fingerprint ' +
        `FROM unnest(ARRAY[${records.map(escape).join(', ')}]::text[]) WITH ORDINALITY AS r(key, n) ` +
        `LEFT JOIN ${keys} d ON d.key = r.key AND d.${LIVE})`,
      'write_records AS (' +
        `INSERT INTO ${keys} (key, fingerprint, expires_at) ` +
        `SELECT key, ${escape(recordsDone.fingerprint)}, ${expiresIn(numeral(recordsDone.ttlMs, 'ttlMs'))} ` +
        `FROM records WHERE fingerprint IS NULL AND ${taken} <> 'none' AND ${keyDone} ` +
        'ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, ' +
        'expires_at = excluded.expires_at)',
    ],
    out: '(SELECT array_agg(fingerprint ORDER BY n) FROM records)',
  };
}

/** The entity a claim takes: its newest version read, this one written unless older, superseded. */
function entityParts(
  table: string,
  entity: { ttlMs: number },
  entityKey: string,
  version: string,
  taken: string,
  keyDone: string,
): StateParts {
  return {
    parts: [
      `newest AS (SELECT version_ms FROM ${table} WHERE key = ${entityKey} AND ${LIVE})`,
      'write_version AS (' +
        `INSERT INTO ${table} AS t (key, version_ms, expires_at) ` +
        `SELECT ${entityKey}, ${version}, ${expiresIn(numeral(entity.ttlMs, 'version ttlMs'))} ` +
        `WHERE ${taken} = 'entity' AND ${keyDone} ` +
        `AND NOT EXISTS (SELECT 1 FROM newest WHERE version_ms > ${version}) ` +
        'ON CONFLICT (key) DO UPDATE SET version_ms = excluded.version_ms, ' +
        'expires_at = excluded.expires_at ' +
        'WHERE t.version_ms <= excluded.version_ms OR t.expires_at <= clock_timestamp())',
    ],
    out: `coalesce((SELECT version_ms > ${version} FROM newest), false)`,
  };
}

/** The table, created once on first use, and its expired keys deleted now and then. */
export class TableUpkeep {
  readonly #pool: Pool;
  readonly #name: StoreTables;
  /** One statement per table: the keys', the entities', the watchdog's. */
  readonly #deleteExpired: readonly string[];
  #ready: Promise<void> | undefined;
  #made = false;
  #watchReady: Promise<void> | undefined;
  #watchMade = false;
  #lastSweep = 0;

  constructor(pool: Pool, name: StoreTables) {
    this.#pool = pool;
    this.#name = name;
    const expired = (quoted: string, column: string) =>
      `DELETE FROM ${quoted} WHERE ${column} IN (SELECT ${column} FROM ${quoted} ` +
      `WHERE expires_at <= clock_timestamp() LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED)`;
    this.#deleteExpired = [
      expired(name.quoted, 'key'),
      expired(name.entities.quoted, 'key'),
      // The watchdog's table has no one-column key: its rows by their place.
      expired(name.watch.quoted, 'ctid'),
    ];
  }

  /** True once the table is known to exist. */
  get made(): boolean {
    return this.#made;
  }

  /** True once the watchdog's table is known to exist. */
  get watchMade(): boolean {
    return this.#watchMade;
  }

  /**
   * Creates the tables once (callers bound the wait); a failure is retried by the next call.
   * Tables and indexes that are all there already are left alone: `CREATE INDEX IF NOT EXISTS`
   * takes a share lock on its table before it finds the index, which would wait for every claim
   * in flight (each holds the rows it will commit), so a second process starting would stall.
   * Only the keys' and the entities' are checked: a claim never waits for the watchdog's table
   * (made with them, or by {@link ensureWatch}).
   */
  ensure(): Promise<void> {
    const { quoted, index, entities } = this.#name;
    this.#ready ??= this.#once(
      [quoted, this.#inSchema(index), entities.quoted, this.#inSchema(entities.index)],
      tableDdl(this.#name),
      () => void (this.#made = true),
      () => (this.#ready = undefined),
    );
    return this.#ready;
  }

  /**
   * Creates the watchdog's table once, apart from the others: a database that a migration made
   * before the watchdog existed (postgresStoreSql), whose role may not create tables, still
   * takes every claim; only the watchdog's notes fail, each call, until the table is there.
   */
  ensureWatch(): Promise<void> {
    const { watch } = this.#name;
    this.#watchReady ??= this.#once(
      [watch.quoted, this.#inSchema(watch.index)],
      watchTableDdl(watch),
      () => void (this.#watchMade = true),
      () => (this.#watchReady = undefined),
    );
    return this.#watchReady;
  }

  /** An index's name as `to_regclass` finds it: in the table's schema. */
  #inSchema(index: string): string {
    const { quoted } = this.#name;
    return quoted.includes('.') ? `${quoted.slice(0, quoted.indexOf('.'))}.${index}` : index;
  }

  /** `ddl` run unless every one of `names` exists; `made` once they do, `failed` to try again. */
  #once(names: string[], ddl: string, made: () => void, failed: () => void): Promise<void> {
    const create = async () => {
      const { rows } = await this.#pool.query<{ missing: boolean }>(
        'SELECT bool_or(to_regclass(name) IS NULL) AS missing FROM unnest($1::text[]) AS name',
        [names],
      );
      if (rows[0]?.missing !== false) await this.#pool.query(ddl);
    };
    return create().then(made, (error: unknown) => {
      // Two processes creating it at once: the loser sees a duplicate; the table is there.
      if (isDuplicateObject(error)) return made();
      failed();
      throw error;
    });
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
