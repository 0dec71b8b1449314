/**
 * postgresStore's `watch`: the watchdog's notes (src/watchdog/types.ts) in the table `<table>_watch`,
 * kept by the steps memoryStore takes (src/stores/memory-watch.ts) on the rows of each tenant, which
 * one short transaction locks, reads and writes back.
 *
 * A row a tenant (`tenant_row`): its last success, last attempt and failing time; a row a delivery
 * answered non-2xx: its first attempt, attempts seen, last attempt, and its key and event as they
 * came (`sent`, JSON: a lone surrogate or U+0000 is a `\u` escape there, which text holds). Tenants
 * and keys are their `storageKey` (src/stores/storage-key.ts). A tenant's row expires keepSummaryMs
 * after its last write (longer than the platform's disable span, src/platform/platform-contract.ts: an
 * endpoint that hears nothing for days still knows its last success), a delivery's row keepMs after
 * its last write; the store's sweep deletes what expired. At most `maxFailing` failing deliveries a
 * tenant.
 *
 * The deliveries that succeeded lately (memoryStore's `succeeded`: a late note of an earlier
 * failure must not count one failing again) are kept with their latest success: in its row's
 * `success_at` for a delivery that also failed after it, else in the tenant row's `sent`, as the
 * JSON of `[[key, success], …]`. Not a row each: most deliveries only succeed, and a row inserted
 * for each and deleted 1 000 successes later cost Postgres about 23 µs of CPU a delivery, against
 * 1.7 µs in the tenant's row (docs/maintainers/benchmarks.md). They are forgotten as the failing
 * ones are: keepMs after their success, and past `maxFailing` successes a tenant, the earliest
 * first. A row of a delivery that only succeeded (`first_at`, `seen` and `last_at` NULL: the layout
 * before this one, never released) is read as such a success and moved into the tenant's row at
 * the next write. The tenant's row needs no other field: a late success moves the failing time to
 * the last attempt (src/stores/memory-watch.ts), which it keeps already.
 * @module
 */

// Types only: importing this file never loads pg.
import type { Pool, PoolClient } from 'pg';
import type { FailingDelivery, WatchBatch, WatchState } from '../watchdog/types.js';
import {
  emptyKept,
  keepNote,
  keepSuccess,
  pruneKept,
  stateOfKept,
  type Kept,
} from './memory-watch.js';
import type { TableName } from './postgres-table.js';
import { storageKey } from './storage-key.js';

/** A row of the watchdog's table, as read. */
interface WatchRow {
  scope: string;
  tenant_row: boolean;
  sent: string | null;
  first_at: number | null;
  seen: number | null;
  last_at: number | null;
  success_at: number | null;
  attempt_at: number | null;
  failing_since: number | null;
}

/** A tenant's rows loaded, and its deliveries as loaded (to write back only what changed). */
interface Loaded {
  readonly kept: Kept;
  readonly before: ReadonlyMap<string, FailingDelivery>;
  /** The successes of its deliveries' rows as loaded. */
  readonly beforeSucceeded: ReadonlyMap<string, number>;
  found: boolean;
}

/** The watchdog's table of one postgresStore. */
export class PostgresWatch {
  readonly #table: TableName;
  readonly #lockPrefix: string;

  constructor(table: TableName) {
    this.#table = table;
    // The table's name has no ':' (tableName checks it): no other lock text looks like this one.
    this.#lockPrefix = `schoolhooks:${table.plain}:`;
  }

  /** A read without notes: one statement, which neither locks nor writes. */
  async read(pool: Pool, { keepMs, maxFailing, now, read }: WatchBatch): Promise<WatchState> {
    const tenant = storageKey(read ?? '');
    const { rows } = await pool.query<WatchRow>(this.#select('$1::text[]'), [[tenant]]);
    const loaded = loadRows(rows).get(tenant);
    if (loaded === undefined || !loaded.found) return { failing: [] };
    pruneKept(loaded.kept, now - keepMs, maxFailing);
    return stateOfKept(loaded.kept);
  }

  /**
   * `batch`'s notes written on `client` (which the caller gives back): two round trips, `BEGIN`,
   * the tenants' locks (advisory, in one order, so two processes never deadlock) and their rows;
   * then what changed, and `COMMIT`. The read tenant's state, when asked.
   */
  async write(client: PoolClient, batch: WatchBatch): Promise<WatchState | undefined> {
    const { notes, keepMs, maxFailing, now, read } = batch;
    const touched = [...new Set(notes.map((note) => storageKey(note.scope)))].sort();
    const readKey = read === undefined ? undefined : storageKey(read);
    const tenants = readKey === undefined ? touched : [...new Set([...touched, readKey])];
    const literal = (text: string) => client.escapeLiteral(text);
    const list = `ARRAY[${tenants.map(literal).join(', ')}]::text[]`;
    const locks =
      'SELECT pg_advisory_xact_lock(hashtextextended(' +
      `${literal(this.#lockPrefix)} || t, 0)) FROM unnest(ARRAY[${touched.map(literal).join(', ')}]::text[]) AS t`;
    const results = (await client.query(
      `BEGIN ISOLATION LEVEL READ COMMITTED; ${locks}; ${this.#select(list)}`,
    )) as unknown as readonly [unknown, unknown, { rows: WatchRow[] }];
    const loaded = loadRows(results[2].rows);
    const at = (tenant: string): Loaded => {
      let one = loaded.get(tenant);
      if (one === undefined)
        loaded.set(
          tenant,
          (one = {
            kept: emptyKept(),
            before: new Map(),
            beforeSucceeded: new Map(),
            found: false,
          }),
        );
      return one;
    };
    for (const note of notes) keepNote(at(storageKey(note.scope)).kept, note);
    const writes = touched.map((tenant) => {
      const loadedTenant = at(tenant);
      pruneKept(loadedTenant.kept, now - keepMs, maxFailing);
      return this.#writeBack(tenant, loadedTenant, batch, literal);
    });
    await client.query(`${writes.join('; ')}; COMMIT`);
    if (readKey === undefined) return undefined;
    const state = at(readKey);
    if (!state.found && !touched.includes(readKey)) return { failing: [] };
    pruneKept(state.kept, now - keepMs, maxFailing);
    return stateOfKept(state.kept);
  }

  /** The live rows of the tenants `list` (an SQL array of their storage keys). */
  #select(list: string): string {
    return (
      'SELECT scope, tenant_row, sent, first_at, seen, last_at, success_at, attempt_at, ' +
      `failing_since FROM ${this.#table.quoted} WHERE scope = ANY(${list}) ` +
      'AND expires_at > clock_timestamp()'
    );
  }

  /** The statements that write a tenant's rows back: its own, and the deliveries that changed. */
  #writeBack(
    tenant: string,
    { kept, before, beforeSucceeded }: Loaded,
    { keepMs, keepSummaryMs }: WatchBatch,
    literal: (text: string) => string,
  ): string {
    const table = this.#table.quoted;
    const after = (ms: number) => `clock_timestamp() + ${Math.ceil(ms)} * interval '1 millisecond'`;
    const expires = after(keepMs);
    const scope = literal(tenant);
    // A delivery has a row while it fails; one that only succeeded is in the tenant's row.
    const gone = [...new Set([...before.keys(), ...beforeSucceeded.keys()])].filter(
      (key) => !kept.failing.has(key),
    );
    const changed = [...kept.failing.keys()].filter(
      (key) =>
        before.get(key) !== kept.failing.get(key) ||
        beforeSucceeded.get(key) !== kept.succeeded.get(key),
    );
    const succeededOnly: [string, number][] = [];
    for (const entry of kept.succeeded) {
      if (!kept.failing.has(entry[0])) succeededOnly.push(entry);
    }
    const sent = succeededOnly.length === 0 ? 'NULL' : literal(JSON.stringify(succeededOnly));
    const statements = [
      `INSERT INTO ${table} (scope, tenant_row, key, sent, success_at, attempt_at, failing_since, expires_at) ` +
        `VALUES (${scope}, true, '', ${sent}, ${numeral(kept.lastSuccessAt)}, ${numeral(kept.lastAttemptAt)}, ` +
        `${numeral(kept.failingSince)}, ${after(keepSummaryMs)}) ON CONFLICT (scope, tenant_row, key) DO UPDATE SET ` +
        'sent = excluded.sent, success_at = excluded.success_at, attempt_at = excluded.attempt_at, ' +
        'failing_since = excluded.failing_since, expires_at = excluded.expires_at',
    ];
    if (gone.length > 0) {
      statements.push(
        `DELETE FROM ${table} WHERE scope = ${scope} AND NOT tenant_row ` +
          `AND key = ANY(ARRAY[${gone.map((key) => literal(storageKey(key))).join(', ')}]::text[])`,
      );
    }
    if (changed.length > 0) {
      const values = changed.map((key) => {
        const { event, firstAttemptAt, attemptsSeen, lastAttemptAt } = kept.failing.get(key)!;
        return (
          `(${scope}, false, ${literal(storageKey(key))}, ` +
          `${literal(JSON.stringify([key, event]))}, ${numeral(firstAttemptAt)}, ` +
          `${numeral(attemptsSeen)}, ${numeral(lastAttemptAt)}, ` +
          `${numeral(kept.succeeded.get(key))}, ${expires})`
        );
      });
      statements.push(
        `INSERT INTO ${table} (scope, tenant_row, key, sent, first_at, seen, last_at, success_at, expires_at) ` +
          `VALUES ${values.join(', ')} ON CONFLICT (scope, tenant_row, key) DO UPDATE SET ` +
          'sent = excluded.sent, first_at = excluded.first_at, seen = excluded.seen, ' +
          'last_at = excluded.last_at, success_at = excluded.success_at, expires_at = excluded.expires_at',
      );
    }
    return statements.join('; ');
  }
}

/** The rows read, by tenant. */
function loadRows(rows: readonly WatchRow[]): Map<string, Loaded> {
  const loaded = new Map<string, Loaded>();
  for (const row of rows) {
    let one = loaded.get(row.scope);
    if (one === undefined) {
      one = { kept: emptyKept(), before: new Map(), beforeSucceeded: new Map(), found: true };
      loaded.set(row.scope, one);
    }
    if (row.tenant_row) {
      one.kept.lastSuccessAt = row.success_at ?? undefined;
      one.kept.lastAttemptAt = row.attempt_at ?? undefined;
      one.kept.failingSince = row.failing_since ?? undefined;
      for (const [key, at] of succeededOnlyOf(row.sent)) keepSuccess(one.kept, key, at);
      continue;
    }
    const [key, event] = JSON.parse(row.sent ?? '[]') as [string, string];
    if (row.success_at !== null) {
      keepSuccess(one.kept, key, row.success_at);
      (one.beforeSucceeded as Map<string, number>).set(key, row.success_at);
    }
    // A row of a delivery that only succeeded is no failing delivery.
    if (row.first_at === null) continue;
    const delivery: FailingDelivery = {
      key,
      event,
      firstAttemptAt: row.first_at,
      attemptsSeen: row.seen ?? 0,
      lastAttemptAt: row.last_at ?? 0,
    };
    one.kept.failing.set(key, delivery);
    (one.before as Map<string, FailingDelivery>).set(key, delivery);
  }
  return loaded;
}

/**
 * The deliveries that only succeeded, from a tenant row's `sent`: `[[key, success], …]` as written
 * here; none for NULL (nothing kept, or a tenant row of the layout before) or anything else: a row
 * changed by hand costs the watchdog its memory of recent successes, never every write after.
 */
function succeededOnlyOf(sent: string | null): [string, number][] {
  let entries: unknown;
  try {
    entries = JSON.parse(sent ?? '[]');
  } catch {
    return [];
  }
  if (!Array.isArray(entries)) return [];
  return entries.filter(
    (entry): entry is [string, number] =>
      Array.isArray(entry) && typeof entry[0] === 'string' && typeof entry[1] === 'number',
  );
}

/** A number as an SQL literal (`NULL` for none). */
function numeral(value: number | undefined): string {
  return value === undefined ? 'NULL' : String(value);
}
