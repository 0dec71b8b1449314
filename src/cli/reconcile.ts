/**
 * `schoolhooks reconcile`: what the platform's lists hold that no webhook handled, read from the
 * receiver's store (Redis or Postgres). A dry run of `createReconciler`: the CLI has no
 * handlers, so it reports and changes nothing. ioredis (or pg) is loaded only when it runs.
 * @module
 */

import { ConfigError } from '../errors.js';
import { createReconciler } from '../reconcile/create-reconciler.js';
import type { ReconcileKind, ReconcileReport } from '../reconcile/types.js';
import { durationOf } from '../utils/duration.js';
import { didYouMean } from '../utils/nearest-name.js';
import { CliFailure, defineCommand, EXIT, messageOf, UsageError, type CliIo } from './command.js';
import { openStore, storeUrl } from './receiver-store.js';
import { schoolApiOf, type CliSchoolApi } from './school-api-env.js';
import { tenantNameProblem } from './tenants.js';

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
    const store = await openStore(request.store, values, 'reconcile');
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
  api: CliSchoolApi;
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
  return { since, until, store, kinds, tenant, api: schoolApiOf(values['api-url'], env) };
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
