/**
 * What `pgBossInbox` does in pg-boss's own tables, where pg-boss has no API for it. Everything
 * pg-boss's API does express stays with the API: jobs are stored with `send` (`retryLimit:
 * attempts - 1`, so pg-boss counts the runs and hands out again a run whose worker died), taken
 * with `fetch`, completed with `complete`. What has no API in pg-boss 10, 11 and 12 alike:
 *
 * - **A retry after the one retry policy's wait** (`backoffMs * 2^(n-1)` after the n-th failed
 *   run, in ms). pg-boss's own retry after `fail()` waits whole seconds: `retryDelay` each time,
 *   or with `retryBackoff` `retryDelay * 2^(n-1) * (1 + random())` (the `failJobs` SQL of
 *   pg-boss 10.4 and 12.38; 12 floors `retryDelay` at 1 and caps the wait at `retryDelayMax`):
 *   anywhere up to twice the policy's wait, and whole seconds. So a failed run is put back here,
 *   its `start_after` the policy's wait away ({@link PgBossTables.retryLater}).
 * - **A dead letter at once** for a run that cannot succeed: `fail()` retries while runs are left.
 *   Here the job is failed whatever runs it had left, and kept `keepFailedMs`
 *   ({@link PgBossTables.deadLetter}). pg-boss's `deadLetter` option copies a failed job to
 *   another queue under a new id, where `getJob(key)` and `retryJob` would not find it.
 * - **Dead letters back with all their runs**, of one event or by key: `retry()` adds one run to
 *   `retry_limit` and takes ids only ({@link PgBossTables.retryFailed}).
 * - **Listing a queue's jobs by state**, and one job by id or key with how it ended: pg-boss 10
 *   has `getJobById` only ({@link PgBossTables.list}, {@link PgBossTables.get}).
 *
 * The one module that knows pg-boss's table layout, and which versions of it it knows:
 *
 * - pg-boss 10: schema versions 21–24 (a `job` table partitioned by queue, an `archive` table);
 * - pg-boss 11 and 12: schema versions 25–46 (the same `job` columns, plus `deletion_seconds`,
 *   which replaces the archive).
 *
 * Any other version is refused with a `ConfigError` at start-up, unless it is newer than 46 and
 * its `job` table still has every column used here (a later pg-boss 12 release).
 * @module
 */

import { createHash } from 'node:crypto';
import { ConfigError } from '../errors.js';
import { deliveryKeyOf } from '../keys/delivery-key.js';
import { storageKey } from '../stores/storage-key.js';
import type { InboxJob, InboxJobState } from './managed.js';

/** What runs SQL on pg-boss's own connections: `boss.getDb()` of pg-boss 10, 11 and 12. */
export interface PgBossDb {
  /** Runs one statement with its parameters. */
  executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

/** The table layouts this module knows. */
export type PgBossLayout = 'pg-boss 10' | 'pg-boss 11/12';

/** The schema versions of each layout, and the newest one known. */
const LAYOUTS: readonly { layout: PgBossLayout; from: number; to: number }[] = [
  { layout: 'pg-boss 10', from: 21, to: 24 },
  { layout: 'pg-boss 11/12', from: 25, to: 46 },
];
const NEWEST_KNOWN = 46;

/** The columns of pg-boss's `job` table the statements below read or write. */
const COLUMNS = [
  'id',
  'name',
  'data',
  'state',
  'retry_count',
  'start_after',
  'started_on',
  'completed_on',
  'created_on',
  'keep_until',
  'output',
] as const;

/** How long a job put back to wait may wait before pg-boss's retention removes it. */
const WAITING_RETENTION = "interval '14 days'";

/** A pg-boss schema name: what Postgres takes unquoted. */
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** One job as listed: an {@link InboxJob} and how its last run ended. */
export interface PgBossJobRow extends InboxJob {
  /** For a completed job: the run's outcome. */
  outcome?: string;
  /** When it completed or became a dead letter, ISO 8601. */
  finishedAt?: string;
}

/** pg-boss's job states behind each state an inbox lists (a `created` or `retry` job waits). */
const STATES_OF: Readonly<Record<InboxJobState, readonly string[]>> = {
  waiting: ['created', 'retry'],
  delayed: ['created', 'retry'],
  active: ['active'],
  completed: ['completed'],
  failed: ['failed'],
};

/**
 * The job id of an idempotencyKey: pg-boss ids are UUIDs, so the SHA-256 of the key (of its
 * `storageKey` when it has a lone surrogate or U+0000, or is over 2 kB) made a UUID
 * (version 8, RFC 9562's form for a name hashed with another algorithm than SHA-1). The same key
 * always gives the same id, so a second enqueue of one event is the same row.
 *
 * @example
 * ```ts
 * pgBossJobId('8b0c6a4e-3f0e-4c43-9d59-2b7d0f1c9e11'); // always the same UUID for this key
 * ```
 */
export function pgBossJobId(idempotencyKey: string): string {
  // Hashed as UTF-8, which has no lone surrogate: its storageKey tells every key apart.
  const bytes = createHash('sha256')
    .update(storageKey(idempotencyKey), 'utf8')
    .digest()
    .subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80; // version 8
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // RFC 9562 variant
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The ids a job named by `idOrKey` may have: the id of its delivery's key as enqueue derives it
 * (the key of a delivery without a tenant, or under `tenant`, which names a key only), and
 * `idOrKey` itself when it is a UUID, first.
 */
function idsOf(idOrKey: string, tenant: string | undefined): string[] {
  const derived = pgBossJobId(deliveryKeyOf(idOrKey, tenant));
  return tenant === undefined && UUID.test(idOrKey) ? [idOrKey.toLowerCase(), derived] : [derived];
}

/** Statements on the jobs of one queue, in one pg-boss schema of a known layout. */
export class PgBossTables {
  readonly #db: PgBossDb;
  readonly #job: string;
  readonly #queue: string;
  readonly layout: PgBossLayout;

  /** `job` is the job table's name, quoted: `"<schema>".job`. */
  private constructor(db: PgBossDb, job: string, queue: string, layout: PgBossLayout) {
    this.#db = db;
    this.#job = job;
    this.#queue = queue;
    this.layout = layout;
  }

  /**
   * The tables of `schema` (pg-boss installed there: call after `boss.start()`), once their
   * layout is known. A `ConfigError` for a schema name Postgres would not take unquoted, a
   * pg-boss that is not installed there, or a version this module does not know.
   */
  static async open(
    db: PgBossDb,
    schema: string,
    queue: string,
    schemaVersion: number | null,
  ): Promise<PgBossTables> {
    if (!SCHEMA_NAME.test(schema)) {
      throw new ConfigError('pgBossInbox: schema must be a name of letters, digits and "_"');
    }
    if (schemaVersion === null || !Number.isInteger(schemaVersion)) {
      throw new ConfigError(`pgBossInbox: pg-boss is not installed in the schema "${schema}"`);
    }
    const { rows: tables } = await db.executeSql('SELECT to_regclass($1) IS NOT NULL AS found', [
      `"${schema}".job`,
    ]);
    if ((tables[0] as { found?: boolean } | undefined)?.found !== true) {
      throw new ConfigError(
        `pgBossInbox: no pg-boss job table in the schema "${schema}": pass the schema your boss was made with`,
      );
    }
    const known = LAYOUTS.find(({ from, to }) => schemaVersion >= from && schemaVersion <= to);
    if (known !== undefined) return new PgBossTables(db, `"${schema}".job`, queue, known.layout);
    const supported = 'pg-boss 10, 11 and 12 (schema versions 21–46)';
    if (schemaVersion < LAYOUTS[0]!.from) {
      throw new ConfigError(
        `pgBossInbox: pg-boss schema version ${schemaVersion} is older than ${supported}`,
      );
    }
    // Newer than the newest known: a later pg-boss 12 release keeps these columns; a pg-boss
    // that changed them is refused rather than written to blindly.
    const { rows } = await db.executeSql(
      'SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2',
      [schema, 'job'],
    );
    const present = new Set(rows.map((row) => (row as { column_name: string }).column_name));
    const missing = [...COLUMNS, 'deletion_seconds'].filter((column) => !present.has(column));
    if (missing.length > 0) {
      throw new ConfigError(
        `pgBossInbox: pg-boss schema version ${schemaVersion} is newer than ${NEWEST_KNOWN} and its ` +
          `job table has no ${missing.join(', ')}: this schoolhooks knows ${supported}`,
      );
    }
    return new PgBossTables(db, `"${schema}".job`, queue, 'pg-boss 11/12');
  }

  /** The same statements on the jobs of another queue of the same pg-boss. */
  ofQueue(queue: string): PgBossTables {
    return new PgBossTables(this.#db, this.#job, queue, this.layout);
  }

  /** The queue's jobs in one state, or in every state, oldest first. */
  async list(state?: InboxJobState): Promise<PgBossJobRow[]> {
    const states =
      state === undefined
        ? ['created', 'retry', 'active', 'completed', 'failed']
        : STATES_OF[state];
    const timing =
      state === 'waiting'
        ? " AND NOT (state IN ('created', 'retry') AND start_after > now())"
        : state === 'delayed'
          ? ' AND start_after > now()'
          : '';
    const { rows } = await this.#db.executeSql(
      `${SELECT} FROM ${this.#job} WHERE name = $1 AND state::text = ANY($2::text[])${timing} ` +
        'ORDER BY created_on, id',
      [this.#queue, states],
    );
    return rows.map((row) => listed(row as Row));
  }

  /** One job, by its id or by the idempotencyKey it was derived from (under `tenant`, if given). */
  async get(idOrKey: string, tenant?: string): Promise<PgBossJobRow | undefined> {
    const ids = idsOf(idOrKey, tenant);
    const { rows } = await this.#db.executeSql(
      `${SELECT} FROM ${this.#job} WHERE name = $1 AND id = ANY($2::uuid[]) ` +
        "AND state::text <> 'cancelled' ORDER BY id = $3::uuid DESC LIMIT 1",
      [this.#queue, ids, ids[0]],
    );
    return rows[0] === undefined ? undefined : listed(rows[0] as Row);
  }

  /**
   * A run that failed and may succeed later: the job waits `delayMs` (the one retry policy's
   * delay) and runs again; pg-boss counts the run when it hands the job out again.
   */
  async retryLater(id: string, reason: string, delayMs: number): Promise<void> {
    await this.#db.executeSql(
      `UPDATE ${this.#job} SET state = 'retry', output = $3::jsonb, ` +
        "start_after = now() + $4::float8 * interval '1 millisecond', " +
        `keep_until = GREATEST(keep_until, now() + $4::float8 * interval '1 millisecond' + ${WAITING_RETENTION}) ` +
        "WHERE name = $1 AND id = $2::uuid AND state = 'active'",
      [this.#queue, id, JSON.stringify({ reason }), delayMs],
    );
  }

  /** A dead letter now, whatever runs it had left, kept `keepFailedMs` (pg-boss 11/12). */
  async deadLetter(id: string, reason: string, keepFailedMs: number): Promise<void> {
    const deletion = this.layout === 'pg-boss 10' ? '' : ', deletion_seconds = $4::int';
    await this.#db.executeSql(
      `UPDATE ${this.#job} SET state = 'failed', completed_on = now(), output = $3::jsonb${deletion} ` +
        "WHERE name = $1 AND id = $2::uuid AND state = 'active'",
      [
        this.#queue,
        id,
        JSON.stringify({ reason }),
        ...(this.layout === 'pg-boss 10' ? [] : [seconds(keepFailedMs)]),
      ],
    );
  }

  /**
   * Dead letters back to wait, with all their runs again: every one (of one event), or the one
   * of `idOrKey` (under `tenant`, if given). Resolves to how many; kept `keepCompletedMs` once
   * they complete (pg-boss 11/12).
   */
  async retryFailed(
    filter: {
      event?: string | undefined;
      idOrKey?: string | undefined;
      tenant?: string | undefined;
    },
    keepCompletedMs: number,
  ): Promise<number> {
    const ids = filter.idOrKey === undefined ? null : idsOf(filter.idOrKey, filter.tenant);
    const deletion = this.layout === 'pg-boss 10' ? '' : ', deletion_seconds = $4::int';
    const { rows } = await this.#db.executeSql(
      `UPDATE ${this.#job} SET state = 'retry', retry_count = 0, started_on = NULL, ` +
        `completed_on = NULL, output = NULL, start_after = now(), ` +
        `keep_until = GREATEST(keep_until, now() + ${WAITING_RETENTION})${deletion} ` +
        "WHERE name = $1 AND state = 'failed' AND ($2::text IS NULL OR data->>'event' = $2) " +
        'AND ($3::uuid[] IS NULL OR id = ANY($3::uuid[])) RETURNING id',
      [
        this.#queue,
        filter.event ?? null,
        ids,
        ...(this.layout === 'pg-boss 10' ? [] : [seconds(keepCompletedMs)]),
      ],
    );
    return rows.length;
  }
}

/** Whole seconds, at least 1 (pg-boss takes 0 as "keep for ever"). */
export function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** The columns a listing reads: never the body nor the signature in `data`. */
const SELECT =
  "SELECT id::text AS id, data->>'event' AS event, data->>'idempotencyKey' AS key, " +
  "data->>'tenant' AS tenant, " +
  "data->>'receivedAt' AS received_at, state::text AS state, retry_count, " +
  'started_on IS NOT NULL AS started, start_after > now() AS later, ' +
  "COALESCE(output->>'reason', output->>'message', output->'value'->>'message') AS reason, " +
  "output->>'outcome' AS outcome, created_on, completed_on";

interface Row {
  id: string;
  event: string | null;
  key: string | null;
  tenant: string | null;
  received_at: string | null;
  state: string;
  retry_count: number;
  started: boolean;
  later: boolean;
  reason: string | null;
  outcome: string | null;
  created_on: Date;
  completed_on: Date | null;
}

function listed(row: Row): PgBossJobRow {
  const state: InboxJobState =
    row.state === 'created' || row.state === 'retry'
      ? row.later
        ? 'delayed'
        : 'waiting'
      : (row.state as InboxJobState);
  // pg-boss counts a run when it hands the job out again: a job that ran holds one run more
  // than its retry_count, unless it is running now.
  const attemptsMade = !row.started ? 0 : row.retry_count + (state === 'active' ? 0 : 1);
  const job: PgBossJobRow = {
    id: row.id,
    event: row.event ?? '',
    idempotencyKey: row.key ?? '',
    state,
    attemptsMade,
    receivedAt: row.received_at ?? new Date(row.created_on).toISOString(),
  };
  if (state !== 'completed' && row.reason !== null) job.reason = row.reason;
  if (row.tenant !== null) job.tenant = row.tenant;
  if (state === 'completed' && row.outcome !== null) job.outcome = row.outcome;
  if (row.completed_on !== null) job.finishedAt = new Date(row.completed_on).toISOString();
  return job;
}
