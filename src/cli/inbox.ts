/**
 * `schoolhooks inbox`: what a BullMQ or pg-boss inbox holds, one job in detail, and replay of
 * dead letters. bullmq and ioredis (or pg and pg-boss, with --postgres) are loaded only when this
 * command runs, so the rest of the CLI works without them.
 * @module
 */

import type { Redis } from 'ioredis';
import type { Client } from 'pg';
import type { InboxAdmin, InboxJob, InboxJobAdmin, InboxJobState } from '../inbox/managed.js';
import type { BullmqInboxJob } from '../inbox/bullmq.js';
import type { PgBossLike } from '../inbox/pg-boss.js';
import { didYouMean } from '../utils/nearest-name.js';
import {
  CliFailure,
  defineCommand,
  errorLine,
  EXIT,
  messageOf,
  UsageError,
  type CliIo,
} from './command.js';
import { CONNECT_TIMEOUT_MS, connectRedis, withoutCredentials } from './connections.js';
import { checkEventOption } from './event-names.js';
import { BULLMQ_DEFAULTS, PG_BOSS_DEFAULTS, QUEUE_DEFAULTS } from '../defaults.js';

const STATES: readonly InboxJobState[] = ['waiting', 'delayed', 'active', 'failed', 'completed'];
const ACTIONS = ['list', 'show', 'retry'] as const;
/** Where the inbox is when neither --redis nor REDIS_URL says. */
const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** The `inbox` command. */
export const inboxCommand = defineCommand({
  name: 'inbox',
  summary: 'List, show and retry the jobs of a BullMQ or pg-boss inbox',
  usage: [
    'list [--state STATE] [--json]',
    'show <id> [--json]',
    'retry <id>... | --all [--event NAME]',
  ],
  description: `What a bullmqInbox (schoolhooks/bullmq) holds, or with --postgres a pgBossInbox
(schoolhooks/postgres). Needs bullmq and ioredis installed, or pg and pg-boss.

  list     Every job, or those in one state: id, state, attempts, event, when it was received, and why its last run failed
  show     One job, by its id or by its idempotencyKey: also its outcome and when it ended
  retry    Put dead letters back in the queue to run again, with all their attempts: the ones named, or --all of them (of one --event). Exit code 1 if a named job is not a dead letter.

A job's body and signature are never printed.`,
  options: {
    redis: {
      type: 'string',
      value: 'URL',
      help: `Redis of the inbox (default: the REDIS_URL variable, else ${DEFAULT_REDIS_URL})`,
    },
    postgres: {
      type: 'string',
      value: 'URL',
      help: 'Postgres of a pg-boss inbox (instead of Redis)',
    },
    queue: {
      type: 'string',
      value: 'NAME',
      default: QUEUE_DEFAULTS.queueName,
      help: 'Queue name; a queue that is not there is a usage error that lists the ones there',
    },
    prefix: {
      type: 'string',
      value: 'P',
      default: BULLMQ_DEFAULTS.prefix,
      help: 'BullMQ key prefix',
    },
    schema: {
      type: 'string',
      value: 'NAME',
      default: PG_BOSS_DEFAULTS.schema,
      help: "--postgres: the schema of pg-boss's tables",
    },
    state: { type: 'string', value: 'STATE', help: `list: ${STATES.join(', ')}` },
    all: { type: 'boolean', help: 'retry: every dead letter' },
    event: { type: 'string', value: 'NAME', help: 'retry --all: only dead letters of this event' },
    json: { type: 'boolean', help: 'list, show: print JSON' },
  },
  positionals: true,
  async run({ values, positionals }, io) {
    const [word, ...ids] = positionals;
    const { action, state } = checkArguments(word, ids, values);
    const inbox = await openReader(values, io.env);
    try {
      return await runAction({ action, state, ids, values }, inbox, io);
    } finally {
      await inbox.close();
    }
  },
});

type Action = (typeof ACTIONS)[number];

/** The parsed options of the command (see its definition above). */
interface InboxValues {
  redis: string | undefined;
  postgres: string | undefined;
  queue: string;
  prefix: string;
  schema: string;
  state: string | undefined;
  all: boolean | undefined;
  event: string | undefined;
  json: boolean | undefined;
}

/** What to do, once the arguments are checked. */
interface Request {
  action: Action;
  /** list --state. */
  state: InboxJobState | undefined;
  ids: readonly string[];
  values: InboxValues;
}

/**
 * Refuse, before connecting anywhere, an action and options that do not go together; the action
 * and the state list filters on.
 */
function checkArguments(
  action: string | undefined,
  ids: readonly string[],
  values: InboxValues,
): Pick<Request, 'action' | 'state'> {
  if (action !== 'list' && action !== 'show' && action !== 'retry') {
    throw new UsageError(
      action === undefined
        ? 'name an action: list, show or retry'
        : `unknown action '${action}'${didYouMean(action, ACTIONS)}`,
    );
  }
  const state = values.state;
  if (state !== undefined && (action !== 'list' || !isState(state))) {
    throw new UsageError(
      action === 'list'
        ? `--state must be one of ${STATES.join(', ')}${didYouMean(state, STATES)}`
        : '--state is for list',
    );
  }
  if (action === 'list' && ids.length > 0) throw new UsageError('list takes no job ids');
  if (action === 'show' && ids.length !== 1) throw new UsageError('show takes one job id');
  if (action === 'retry' && ids.length > 0 === (values.all === true)) {
    throw new UsageError('retry takes job ids, or --all');
  }
  if (values.event !== undefined && !(action === 'retry' && values.all)) {
    throw new UsageError('--event is for retry --all');
  }
  checkEventOption(values.event);
  return { action, state };
}

/**
 * Open the pg-boss inbox --postgres names, else the BullMQ one of --redis, $REDIS_URL or the
 * default Redis URL.
 */
async function openReader(values: InboxValues, env: CliIo['env']): Promise<InboxReader> {
  const queue = values.queue;
  if (values.postgres !== undefined) {
    if (values.redis !== undefined) throw new UsageError('--redis and --postgres: name one');
    checkServerUrl(values.postgres, ['postgres:', 'postgresql:'], '--postgres');
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(values.schema)) {
      throw new UsageError('--schema must be a name of letters, digits and "_"');
    }
    return openPgBossInbox(values.postgres, queue, values.schema);
  }
  const fromEnv = env['REDIS_URL'];
  const [url, source] =
    values.redis !== undefined
      ? [values.redis, '--redis']
      : fromEnv === undefined || fromEnv === ''
        ? [DEFAULT_REDIS_URL, 'the default Redis URL']
        : [fromEnv, '$REDIS_URL'];
  checkServerUrl(url, ['redis:', 'rediss:'], source);
  if (queue === '' || queue.includes(':'))
    throw new UsageError('--queue must be a name without ":"');
  return openInbox(url, queue, values.prefix);
}

/** Do the action on the open inbox; resolves to the exit code. */
async function runAction(
  { action, state, ids, values }: Request,
  inbox: InboxReader,
  io: CliIo,
): Promise<number> {
  if (action === 'list') {
    const jobs = await inbox.jobs(state === undefined ? {} : { state });
    io.out(values.json ? JSON.stringify(jobs, null, 2) : table(jobs));
    return EXIT.ok;
  }
  if (action === 'show') {
    const job = await inbox.getJob(ids[0]!);
    if (job === undefined) throw new CliFailure(`no job '${ids[0]}' in this inbox`);
    io.out(values.json ? JSON.stringify(job, null, 2) : details(job));
    return EXIT.ok;
  }
  if (values.all) {
    const count = await inbox.retryFailed(
      values.event === undefined ? {} : { event: values.event },
    );
    io.out(`${count} dead letter${count === 1 ? '' : 's'} back in the queue`);
    return EXIT.ok;
  }
  return retryEach(ids, inbox, io);
}

/** Retry the dead letters named; exit code 1 if any of them is not one. */
async function retryEach(ids: readonly string[], inbox: InboxReader, io: CliIo): Promise<number> {
  let missed = 0;
  for (const id of ids) {
    if (await inbox.retryJob(id)) {
      io.out(`retried ${id}`);
    } else {
      missed++;
      io.err(errorLine('inbox', `${id}: not a dead letter in this inbox`));
    }
  }
  return missed === 0 ? EXIT.ok : EXIT.failure;
}

/** What the command reads and does of an inbox, BullMQ's or pg-boss's: its admin, and one job's. */
interface InboxReader extends InboxAdmin, InboxJobAdmin<BullmqInboxJob> {
  close(): Promise<void>;
}

function isState(value: string): value is InboxJobState {
  return (STATES as readonly string[]).includes(value);
}

/** Connect (failing after a few seconds, never retrying) and open the inbox on that client. */
async function openInbox(url: string, queueName: string, prefix: string): Promise<InboxReader> {
  let modules;
  try {
    modules = await Promise.all([import('ioredis'), import('../inbox/bullmq.js')]);
  } catch (error) {
    throw new CliFailure(`the inbox command needs bullmq and ioredis: ${messageOf(error)}`);
  }
  const [{ Redis }, { bullmqInbox }] = modules;
  const client = await connectRedis(Redis, url);
  try {
    // Before BullMQ opens the queue: opening one writes its meta key, even for a mistyped name.
    await requireQueue(client, queueName, prefix);
  } catch (error) {
    client.disconnect();
    throw error;
  }
  const inbox = bullmqInbox({ connection: client, queueName, prefix });
  return {
    ...inbox,
    async close() {
      await inbox.close();
      client.disconnect();
    },
  };
}

/**
 * Connect to Postgres (failing after a few seconds), check the queue is one of pg-boss's there
 * (never installing pg-boss nor creating a queue for a mistyped name), and open the inbox on a
 * pg-boss of our own that neither migrates nor runs maintenance.
 */
async function openPgBossInbox(
  url: string,
  queueName: string,
  schema: string,
): Promise<InboxReader> {
  let modules;
  try {
    modules = await Promise.all([import('pg'), import('pg-boss'), import('../inbox/pg-boss.js')]);
  } catch (error) {
    throw new CliFailure(`inbox --postgres needs pg and pg-boss: ${messageOf(error)}`);
  }
  const [pgModule, bossModule, { pgBossInbox }] = modules;
  // pg is CommonJS: its classes are on `default` when imported, on the module when required.
  const { Client: PgClient } =
    (pgModule as { default?: { Client: typeof Client } }).default ?? pgModule;
  const client = new PgClient({
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    throw new CliFailure(
      `cannot reach Postgres at ${withoutCredentials(url)}: ${messageOf(error)}`,
    );
  }
  try {
    await requirePgBossQueue(client, queueName, schema);
  } finally {
    await client.end().catch(() => {});
  }
  const PgBoss = pgBossClass(bossModule);
  const boss = new PgBoss({
    connectionString: url,
    schema,
    migrate: false,
    supervise: false,
    schedule: false,
    max: 2,
  });
  boss.on('error', () => {});
  const inbox = pgBossInbox({ boss, schema, queueName });
  try {
    await inbox.start();
  } catch (error) {
    await boss.stop({ graceful: false, wait: true }).catch(() => {});
    throw error;
  }
  return {
    jobs: (filter) => inbox.jobs(filter),
    getJob: (idOrKey) => inbox.getJob(idOrKey),
    retryFailed: (filter) => inbox.retryFailed(filter),
    retryJob: (idOrKey) => inbox.retryJob(idOrKey),
    async close() {
      await inbox.close();
      await boss.stop({ graceful: false, wait: true }).catch(() => {});
    },
  };
}

/** pg-boss 12's named `PgBoss` export, or pg-boss 10's CommonJS class. */
function pgBossClass(loaded: unknown): new (options: object) => PgBossLike {
  const module = loaded as { PgBoss?: unknown; default?: unknown };
  const found =
    module.PgBoss ?? (module.default as { PgBoss?: unknown } | undefined)?.PgBoss ?? module.default;
  if (typeof found !== 'function')
    throw new CliFailure('the installed pg-boss has no PgBoss class');
  return found as new (options: object) => PgBossLike;
}

/**
 * A {@link UsageError} naming the queues of the pg-boss in `schema`, unless `queueName` is one
 * (or pg-boss is not there at all). Only reads.
 */
async function requirePgBossQueue(
  client: Client,
  queueName: string,
  schema: string,
): Promise<void> {
  const { rows } = await client.query<{ found: boolean }>(
    'SELECT to_regclass($1) IS NOT NULL AS found',
    [`"${schema}".queue`],
  );
  if (rows[0]?.found !== true) {
    throw new UsageError(
      `no pg-boss in the schema '${schema}' of this database (check --postgres and --schema)`,
    );
  }
  const queues = (
    await client.query<{ name: string }>(`SELECT name FROM "${schema}".queue ORDER BY name`)
  ).rows.map((row) => row.name);
  if (queues.includes(queueName)) return;
  const where = `no queue '${queueName}' in the pg-boss of the schema '${schema}'`;
  throw new UsageError(
    queues.length === 0
      ? `${where}, nor any other queue`
      : `${where}; the queues there: ${queues.join(', ')}`,
  );
}

/**
 * A {@link UsageError} naming the queues there are under `prefix`, unless `queueName` is one: it
 * has BullMQ's `<prefix>:<queue>:meta` key, or (a queue whose meta was removed) any other key of
 * its own. Only reads.
 */
async function requireQueue(client: Redis, queueName: string, prefix: string): Promise<void> {
  const own = `${prefix}:${queueName}:`;
  if ((await client.exists(`${own}meta`)) === 1) return;
  if ((await scanKeys(client, `${globEscape(own)}*`, 1)).length > 0) return;
  const metas = await scanKeys(client, `${globEscape(prefix)}:*:meta`);
  const names = metas
    .map((key) => key.slice(prefix.length + 1, -':meta'.length))
    .filter((name) => name !== '' && !name.includes(':'));
  const where = `no queue '${queueName}' under the prefix '${prefix}' in this Redis`;
  throw new UsageError(
    names.length === 0
      ? `${where}, nor any other queue (check --redis and --prefix)`
      : `${where}; the queues there: ${[...new Set(names)].sort().join(', ')}`,
  );
}

/** The keys matching the glob `pattern` (SCAN, never KEYS), stopping once `limit` are found. */
async function scanKeys(client: Redis, pattern: string, limit = Infinity): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    found.push(...keys);
    cursor = next;
  } while (cursor !== '0' && found.length < limit);
  return found;
}

/** `text` matched literally in a Redis glob pattern. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

function table(jobs: readonly InboxJob[]): string {
  const rows = jobs.map((job) => [
    job.id,
    job.state,
    String(job.attemptsMade),
    job.event,
    job.receivedAt,
    job.reason ?? '',
  ]);
  const header = ['ID', 'STATE', 'ATTEMPTS', 'EVENT', 'RECEIVED', 'REASON'];
  const widths = header.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => row[i]!.length)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const count = `${jobs.length} job${jobs.length === 1 ? '' : 's'}`;
  return jobs.length === 0 ? count : [line(header), ...rows.map(line), count].join('\n');
}

function details(job: BullmqInboxJob): string {
  const fields: [string, string | number | undefined][] = [
    ['id', job.id],
    ['event', job.event],
    ['idempotencyKey', job.idempotencyKey],
    ['state', job.state],
    ['attempts', job.attemptsMade],
    ['outcome', job.outcome],
    ['reason', job.reason],
    ['receivedAt', job.receivedAt],
    ['finishedAt', job.finishedAt],
  ];
  return fields
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `${`${name}:`.padEnd(16)}${value}`)
    .join('\n');
}

/**
 * A {@link UsageError} naming `source` (never the URL, which may hold a password) unless `url` is
 * a URL of one of `protocols` that parses: a port out of range or a bracket left open would
 * otherwise fail later as "Invalid URL" from the client, as if it were a failure of the server.
 */
function checkServerUrl(url: string, protocols: readonly string[], source: string): void {
  const kind = protocols.map((protocol) => `${protocol}//`).join(' or ');
  if (!protocols.some((protocol) => url.startsWith(`${protocol}//`))) {
    throw new UsageError(`${source} must be a ${kind} URL`);
  }
  if (!URL.canParse(url)) {
    throw new UsageError(
      `${source} is not a well-formed ${kind} URL: check its host and port, and that any ` +
        'special character of the user or password is %-encoded',
    );
  }
}
