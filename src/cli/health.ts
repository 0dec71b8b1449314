/**
 * `schoolhooks health`: a receiver's health read from its store (Redis or Postgres) by the
 * watchdog (`schoolhooks/watchdog`, docs/watchdog.md), for a cron job or a monitoring check: the
 * exit code says the status. Read-only; ioredis (or pg) is loaded only when it runs.
 * @module
 */

import { ConfigError } from '../errors.js';
import { createWatchdog } from '../watchdog/create-watchdog.js';
import type { Health } from '../watchdog/health.js';
import { CliFailure, defineCommand, EXIT, messageOf, UsageError } from './command.js';
import { openStore, storeUrl } from './receiver-store.js';
import { optionalSchoolApiOf } from './school-api-env.js';
import { tenantNameProblem } from './tenants.js';

/** Exit code of a receiver whose endpoint is `silent`: the lists hold what no delivery recorded. */
export const EXIT_SILENT = 3;

/** The exit code of each status: 0 ok, 1 at_risk or failing, 3 silent. */
const EXIT_OF: Readonly<Record<Health['status'], number>> = {
  ok: EXIT.ok,
  at_risk: EXIT.failure,
  failing: EXIT.failure,
  silent: EXIT_SILENT,
};

/** The `health` command. */
export const healthCommand = defineCommand({
  name: 'health',
  summary: "Tell a receiver's health from its store: ok, at_risk, failing or silent",
  usage: '--store URL [--prefix P | --table NAME] [--tenant NAME] [--api-url URL] [--json]',
  description: `Reads what the receiver kept of its answers in its store (--store: the Redis of its
redisStore or the Postgres of its postgresStore, with the receiver's watch option on) and prints
its status: ok; at_risk (a delivery answered non-2xx whose retries are not over, with the attempts
seen and when the platform gives it up); failing (no 2xx answer for 30 minutes while attempts come
in); silent (with the API: paid invoices or accesses older than 30 minutes that no delivery
recorded). Then when the platform disables the endpoint unless a delivery succeeds (--json: the
whole report). Read-only: a --table that does not exist is a usage error.

With --api-url (or $SCHOOL_API_URL), the API key, seller id and school id come from
SCHOOL_API_KEY, SCHOOL_SELLER_ID and SCHOOL_ID only, never from an argument; the key is never
printed.

Exit codes: 0 ok, 1 at_risk or failing (or the store or the API failed), 3 silent, 2 usage.`,
  options: {
    store: {
      type: 'string',
      value: 'URL',
      help: "The receiver's store: redis://… or postgres://…",
    },
    prefix: { type: 'string', value: 'P', help: 'redis://: its prefix (default schoolhooks:)' },
    table: {
      type: 'string',
      value: 'NAME',
      help: 'postgres://: its table (default schoolhooks_deliveries)',
    },
    tenant: {
      type: 'string',
      value: 'NAME',
      help: 'The school, on a receiver of many (its tenant)',
    },
    'api-url': {
      type: 'string',
      value: 'URL',
      help: "The school API's root, to tell silent (default: $SCHOOL_API_URL, else none)",
    },
    json: { type: 'boolean', help: 'Print the report as JSON' },
  },
  async run({ values }, io) {
    const url = storeUrl(values);
    const problem = values.tenant === undefined ? undefined : tenantNameProblem(values.tenant);
    if (problem !== undefined) throw new UsageError(`--tenant: ${problem}`);
    const api = optionalSchoolApiOf(values['api-url'], io.env);
    const store = await openStore(url, values, 'health');
    try {
      let health: Health;
      try {
        const watchdog = createWatchdog({
          store: store.store,
          ...(api === undefined ? {} : { api }),
          ...(values.tenant === undefined ? {} : { tenant: values.tenant }),
        });
        health = await watchdog.check();
      } catch (error) {
        // A store that keeps no notes, a store or an API that failed: the check could not run.
        const what = error instanceof ConfigError ? error.message : messageOf(error);
        throw new CliFailure(`cannot tell the receiver's health: ${what}`);
      }
      io.out(values.json ? JSON.stringify(health, null, 2) : summary(health));
      if (health.lastAttemptAt === undefined) {
        // Nothing kept reads ok: a mistyped --prefix, --table or --tenant would never alert.
        io.err(
          'no answer is kept there yet: check that --prefix, --table and --tenant are the ' +
            "receiver's, and that its watch option is on",
        );
      }
      return EXIT_OF[health.status];
    } finally {
      await store.close();
    }
  },
});

/** The status line, the deliveries at risk as a table, then the times. */
function summary(health: Health): string {
  const lines = [`status  ${health.status}${statusNote(health)}`];
  if (health.atRisk.length > 0) {
    const eventWidth = Math.max(5, ...health.atRisk.map(({ event }) => event.length));
    lines.push('', `${'EVENT'.padEnd(eventWidth)}  ATTEMPTS  GIVES UP AT               KEY`);
    for (const delivery of health.atRisk) {
      lines.push(
        `${delivery.event.padEnd(eventWidth)}  ${String(delivery.attemptsSeen).padEnd(8)}  ` +
          `${delivery.givesUpAt.padEnd(24)}  ${delivery.idempotencyKey}`,
      );
    }
    lines.push('');
  }
  lines.push(`last success  ${health.lastSuccessAt ?? 'none kept'}`);
  lines.push(`last attempt  ${health.lastAttemptAt ?? 'none kept'}`);
  if (health.disablesAt !== undefined) {
    lines.push(`disables at   ${health.disablesAt} (unless a delivery succeeds before)`);
  }
  return lines.join('\n');
}

/** What the status line adds to the status. */
function statusNote(health: Health): string {
  switch (health.status) {
    case 'at_risk': {
      const count = health.atRisk.length;
      return ` (${count} ${count === 1 ? 'delivery' : 'deliveries'} at risk: lost once the platform gives up)`;
    }
    case 'failing':
      return ` (no 2xx answer since ${health.failingSince ?? 'long ago'})`;
    case 'silent':
      return ` (${health.silent?.entities ?? 0} paid invoices or accesses no delivery recorded, the oldest ${health.silent?.oldestAt ?? 'unknown'}: reconcile them)`;
    default:
      return '';
  }
}
