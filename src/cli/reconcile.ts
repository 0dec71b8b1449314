/**
 * `schoolhooks reconcile`: what the platform's lists hold that no webhook handled, read from the
 * receiver's store (Redis or Postgres). A dry run of `createReconciler`: the CLI has no
 * handlers, so it reports and changes nothing. ioredis (or pg) is loaded only when it runs.
 * @module
 */

import type { Pool } from 'pg';
import { createSchoolApi } from '../api/create-school-api.js';
import { ConfigError } from '../errors.js';
import { createReconciler } from '../reconcile/create-reconciler.js';
import type { ReconcileKind, ReconcileReport } from '../reconcile/types.js';
import type { IdempotencyStore } from '../stores/types.js';
import { isHttpUrl } from '../testing/endpoint-config.js';
import { durationOf } from '../duration.js';
import { didYouMean } from '../nearest-name.js';
import { CliFailure, defineCommand, EXIT, messageOf, UsageError, type CliIo } from './command.js';
import { CONNECT_TIMEOUT_MS, connectRedis, withoutCredentials } from './connections.js';
import { tenantNameProblem } from './tenants.js';
import { POSTGRES_STORE_DEFAULTS } from '../defaults.js';

/** The kinds, in the order the report lists them. */
const KINDS: readonly ReconcileKind[] = ['invoice', 'access', 'certificate', 'user'];
const PLURALS: Readonly<Record<ReconcileKind, string>> = {
  invoice: 'invoices',
  access: 'accesses',
  certificate: 'certificates',
  user: 'users',
};
/** Exit code of a run that found entities no webhook handled. */
export const EXIT_MISSING = 3;
/** An ISO 8601 date, or date and time. */
const ISO_DATE =
  /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/** The `reconcile` command. */
export const reconcileCommand = defineCommand({
  name: 'reconcile',
  summary: "List what the platform's lists hold that no webhook handled",
  usage:
    '--since D --store URL --api-url URL [--until DATE] [--kinds LIST] [--tenant NAME] [--dry-run] [--json]',
  description: `Reads the platform's lists (paid invoices, product accesses, certificates, users) over
a window, checks each entity against the receiver's store (--store: the Redis of its redisStore or
the Postgres of its postgresStore), and prints those no webhook handled: kind and id, then the
counts (--json: the report). A dry run: no handler runs and nothing is written (a --table that does
not exist is a usage error); a page of entities is checked in one read, progress on stderr.
Entities younger than 5h 1m are left to their webhooks; paid invoices are listed 7 days further
back than --since.

The API key, seller id and school id come from SCHOOL_API_KEY, SCHOOL_SELLER_ID and SCHOOL_ID
only, never from an argument; the key is never printed.

Exit codes: 0 nothing missing, 3 something missing, 1 failure (the store, the API, an item that
could not be checked), 2 usage.`,
  options: {
    since: {
      type: 'string',
      value: 'D',
      help: 'Window start: 90m, 48h, 7d before now, or an ISO date',
    },
    until: { type: 'string', value: 'DATE', help: 'End of the window, an ISO date (default: now)' },
    store: {
      type: 'string',
      value: 'URL',
      help: "The receiver's store: redis://… or postgres://…",
    },
    prefix: {
      type: 'string',
      value: 'P',
      help: 'redis://: its prefix (default schoolhooks:)',
    },
    table: {
      type: 'string',
      value: 'NAME',
      help: 'postgres://: its table (default schoolhooks_deliveries)',
    },
    'api-url': {
      type: 'string',
      value: 'URL',
      help: "The school API's root (default: $SCHOOL_API_URL)",
    },
    tenant: {
      type: 'string',
      value: 'NAME',
      help: 'The school, on a receiver of many (its tenant)',
    },
    kinds: {
      type: 'string',
      value: 'LIST',
      help: `Kinds to check: ${KINDS.join(',')} (default all)`,
    },
    'dry-run': {
      type: 'boolean',
      help: 'Always on: it lists what is missing and runs no handler',
    },
    json: { type: 'boolean', help: 'Print the report as JSON' },
  },
  async run({ values }, io) {
    const request = checkArguments(values, io.env);
    const store = await openStore(request.store, values);
    try {
      const reconciler = createReconciler({
        api: request.api,
        store: store.store,
        ...(request.tenant === undefined ? {} : { tenant: request.tenant }),
      });
      let report: ReconcileReport;
      try {
        report = await reconciler.run({
          since: request.since,
          ...(request.until === undefined ? {} : { until: request.until }),
          kinds: request.kinds,
          dryRun: true,
          onProgress: ({ kind, checked }) =>
            io.err(`checked ${checked[kind]} ${checked[kind] === 1 ? kind : PLURALS[kind]}…`),
        });
      } catch (error) {
        // The window (an empty one, one past what the store keeps) is the user's input.
        if (error instanceof ConfigError) throw new UsageError(error.message);
        throw new CliFailure(messageOf(error));
      }
      io.out(values.json ? JSON.stringify(jsonOf(report), null, 2) : summary(report));
      // An item that could not be checked (one the list gave unreadable) is a failure.
      if (report.failed.length > 0) return EXIT.failure;
      return report.missing.length === 0 ? EXIT.ok : EXIT_MISSING;
    } finally {
      await store.close();
    }
  },
});

/** The parsed options of the command (see its definition above). */
interface ReconcileValues {
  since: string | undefined;
  until: string | undefined;
  store: string | undefined;
  prefix: string | undefined;
  table: string | undefined;
  'api-url': string | undefined;
  tenant: string | undefined;
  kinds: string | undefined;
  json: boolean | undefined;
}

/** What to run, once the arguments and the environment are checked. */
interface Request {
  since: string | Date;
  until: Date | undefined;
  store: URL;
  kinds: ReconcileKind[];
  tenant: string | undefined;
  api: ReturnType<typeof createSchoolApi>;
}

/** Every input checked before anything is opened: a {@link UsageError} naming the first wrong. */
function checkArguments(values: ReconcileValues, env: CliIo['env']): Request {
  if (values.since === undefined) throw new UsageError('--since is required (e.g. --since 48h)');
  const since =
    durationOf(values.since) === undefined ? dateOf(values.since, '--since') : values.since;
  const until = values.until === undefined ? undefined : dateOf(values.until, '--until');
  const store = storeUrl(values);
  const kinds = kindsOf(values.kinds);
  let tenant: string | undefined;
  if (values.tenant !== undefined) {
    const problem = tenantNameProblem(values.tenant);
    if (problem !== undefined) throw new UsageError(`--tenant: ${problem}`);
    tenant = values.tenant;
  }
  return { since, until, store, kinds, tenant, api: schoolApi(values['api-url'], env) };
}

/** An ISO date, or a {@link UsageError} naming `option`. */
function dateOf(text: string, option: string): Date {
  const ms = ISO_DATE.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new UsageError(
      option === '--since'
        ? '--since must be a duration before now (90m, 48h, 7d) or an ISO date (2026-11-20T09:00:00Z)'
        : `${option} must be an ISO date (2026-11-20T09:00:00Z)`,
    );
  }
  return new Date(ms);
}

/** --kinds as a list of known kinds, every one by default. */
function kindsOf(list: string | undefined): ReconcileKind[] {
  if (list === undefined) return [...KINDS];
  const kinds = list.split(',').map((kind) => kind.trim());
  for (const kind of kinds) {
    if (!(KINDS as readonly string[]).includes(kind)) {
      throw new UsageError(
        kind === ''
          ? `--kinds is a comma-separated list of ${KINDS.join(', ')}`
          : `--kinds: unknown kind '${kind}'${didYouMean(kind, KINDS) || `; the kinds: ${KINDS.join(', ')}`}`,
      );
    }
  }
  return [...new Set(kinds as ReconcileKind[])];
}

/** --store as a URL of Redis or Postgres, with only the options of its kind. */
function storeUrl(values: ReconcileValues): URL {
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

/** The API client of --api-url and the environment's credentials. */
function schoolApi(
  apiUrl: string | undefined,
  env: CliIo['env'],
): ReturnType<typeof createSchoolApi> {
  const url = apiUrl ?? nonEmpty(env['SCHOOL_API_URL']);
  if (url === undefined) {
    throw new UsageError('--api-url is required (or the SCHOOL_API_URL variable)');
  }
  const source = apiUrl === undefined ? '$SCHOOL_API_URL' : '--api-url';
  if (!isHttpUrl(url)) throw new UsageError(`${source} must be an http:// or https:// URL`);
  const apiKey = nonEmpty(env['SCHOOL_API_KEY']);
  if (apiKey === undefined) {
    throw new UsageError(
      'the SCHOOL_API_KEY variable is required: the API key (never an argument)',
    );
  }
  const sellerId = positiveInteger(env['SCHOOL_SELLER_ID'], 'SCHOOL_SELLER_ID');
  const schoolId = positiveInteger(env['SCHOOL_ID'], 'SCHOOL_ID');
  try {
    return createSchoolApi({ baseUrl: url, apiKey, sellerId, schoolId });
  } catch (error) {
    // Its messages name the option (baseUrl, apiKey), never the key's value.
    if (error instanceof ConfigError) throw new UsageError(`the API's options: ${error.message}`);
    throw error;
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

function positiveInteger(value: string | undefined, name: string): number {
  const number = /^\d+$/.test(value?.trim() ?? '') ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number) || number < 1) {
    throw new UsageError(
      value === undefined || value.trim() === ''
        ? `the ${name} variable is required`
        : `the ${name} variable must be a positive integer`,
    );
  }
  return number;
}

/** An open store and how to let go of it. */
interface OpenStore {
  readonly store: IdempotencyStore;
  close(): Promise<void>;
}

/** The store of --store, on a client that fails fast rather than retrying. */
async function openStore(url: URL, values: ReconcileValues): Promise<OpenStore> {
  return storeKind(url) === 'redis'
    ? openRedis(url, values.prefix)
    : openPostgres(url, values.table);
}

async function openRedis(url: URL, prefix: string | undefined): Promise<OpenStore> {
  let modules;
  try {
    modules = await Promise.all([import('ioredis'), import('../stores/redis.js')]);
  } catch (error) {
    throw new CliFailure(`reconcile --store redis:// needs ioredis: ${messageOf(error)}`);
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

async function openPostgres(url: URL, table: string | undefined): Promise<OpenStore> {
  let modules;
  try {
    modules = await Promise.all([import('pg'), import('../stores/postgres.js')]);
  } catch (error) {
    throw new CliFailure(`reconcile --store postgres:// needs pg: ${messageOf(error)}`);
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
  return { store, close: () => pool.end().finally(() => store.close?.()) };
}

/**
 * A dry run creates nothing: a table that is not there is a mistyped `--table` (or the wrong
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

/** The report as JSON: a failure's error as its message (an Error has no JSON of its own). */
function jsonOf(report: ReconcileReport): unknown {
  return {
    ...report,
    failed: report.failed.map(({ kind, id, error }) => ({ kind, id, error: error.message })),
    unrecorded: report.unrecorded.map(({ kind, id, error }) => ({
      kind,
      id,
      error: error.message,
    })),
  };
}

/** The missing entities as a table of kind and id, then the window and the counts. */
function summary(report: ReconcileReport): string {
  const lines: string[] = [];
  if (report.missing.length > 0) {
    const width = Math.max(4, ...report.missing.map(({ kind }) => kind.length));
    lines.push(`${'KIND'.padEnd(width)}  ID`);
    for (const { kind, id } of report.missing) lines.push(`${kind.padEnd(width)}  ${id}`);
    lines.push('');
  }
  const checked = KINDS.filter((kind) => report.checked[kind] !== undefined)
    .map((kind) => `${report.checked[kind]} ${report.checked[kind] === 1 ? kind : PLURALS[kind]}`)
    .join(', ');
  lines.push(`window   ${report.window.from} to ${report.window.to}`);
  lines.push(`checked  ${checked === '' ? 'nothing' : checked}`);
  lines.push(`handled  ${report.handled} (by a webhook or an earlier run)`);
  lines.push(`missing  ${report.missing.length}`);
  for (const { kind, id } of report.inFlight) {
    lines.push(`in flight  ${kind} ${id} (another claim holds it: check again later)`);
  }
  for (const { kind, id, error } of report.failed) {
    lines.push(`failed   ${kind} ${id}: ${error.message}`);
  }
  return lines.join('\n');
}
