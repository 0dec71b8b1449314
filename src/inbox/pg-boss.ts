/**
 * The inbox on pg-boss and Postgres: deliveries are acknowledged once their job row is
 * committed, and workers in any number of processes run the handlers (docs/postgres.md). pg-boss
 * stores, hands out and counts the runs; the waits between them are the one retry policy's,
 * written where pg-boss has no API for them (src/inbox/pg-boss-tables.ts says which). pg-boss is an optional peer: this module never imports it statically, and
 * loads it only when it is given a `connectionString` rather than a started `boss`.
 * @module
 */

import { BoundedCalls } from '../utils/bounded-calls.js';
import { ConfigError } from '../errors.js';
import { messageOf } from '../utils/message-of.js';
import type { Logger, Receiver } from '../receiving/receiver.js';
import { storageKey } from '../stores/storage-key.js';
import {
  type InboxJob,
  type InboxJobAdmin,
  type InboxJobLookup,
  type InboxJobState,
  type InboxWorker,
  type InboxWorkOptions,
  type ManagedInbox,
} from './managed.js';
import {
  checkConcurrency,
  closedForWork,
  secondWatchdog,
  inboxClosed,
  inboxPolicy,
  verdictOf,
} from './inbox-policy.js';
import { BossStarter, type Started } from './pg-boss-starter.js';
import {
  pgBossJobId,
  seconds,
  type PgBossDb,
  type PgBossJobRow,
  type PgBossTables,
} from './pg-boss-tables.js';
import { PgBossWorker } from './pg-boss-worker.js';
import { startPgBossTask } from './pg-boss-schedule.js';
import {
  checkReconcileOptions,
  reconcileQueueName,
  reconcileTask,
  type InboxReconcileOptions,
  type ScheduledReconciler,
} from './reconcile-schedule.js';
import { taskQueueName } from './scheduled-task.js';
import {
  checkWatchOptions,
  watchTask,
  type InboxWatchOptions,
  type WatchedWatchdog,
} from './watch-schedule.js';
import type { StoredDelivery } from './types.js';
import { PG_BOSS_DEFAULTS, QUEUE_DEFAULTS } from '../defaults.js';
import { deliveryKeyOf } from '../keys/delivery-key.js';

/** One job as pg-boss's `fetch` hands it out with its metadata (pg-boss 10, 11 and 12). */
export interface PgBossFetchedJob {
  id: string;
  data: unknown;
  retryCount: number;
  retryLimit: number;
}

/**
 * The part of a pg-boss instance the inbox uses, which pg-boss 10, 11 and 12 all have: pass a
 * `PgBoss` of any of them as `boss`.
 */
export interface PgBossLike {
  /** Starts the instance (the inbox calls it only on an instance it made or that is not started). */
  start(): Promise<unknown>;
  /** Stops the instance: only on one the inbox made. */
  stop(options?: { graceful?: boolean; wait?: boolean; timeout?: number }): Promise<void>;
  /** Stores a job. */
  send(name: string, data: object, options: object): Promise<string | null>;
  /** Takes jobs of a queue, with their metadata. */
  fetch(
    name: string,
    options: { batchSize: number; includeMetadata: true },
  ): Promise<PgBossFetchedJob[]>;
  /** Marks a job done. */
  complete(name: string, id: string, data?: object): Promise<unknown>;
  /**
   * Creates a queue (pg-boss 10 and later need one before `send`); `reconcile` makes its own
   * with the `stately` policy.
   */
  createQueue(name: string, options?: { policy?: string }): Promise<void>;
  /** The version of pg-boss's tables, to tell the layouts apart. */
  schemaVersion(): Promise<unknown>;
  /** What runs SQL on pg-boss's own connections. */
  getDb(): PgBossDb;
  /** Listens to the instance's errors. */
  on(event: 'error', listener: (error: Error) => void): unknown;
  /** Stops listening to the instance's errors. */
  off(event: 'error', listener: (error: Error) => void): unknown;
}

/** Options of {@link pgBossInbox}. */
export interface PgBossInboxOptions {
  /**
   * A pg-boss instance (10, 11 or 12), started or not: the inbox starts it if needed and never
   * stops it. With pg-boss 10, set its `archiveFailedAfterSeconds` to keep dead letters as
   * long as you want to replay them (pg-boss 10 moves finished jobs out of its job table after
   * 12 hours by default). One of `boss` and `connectionString`.
   */
  boss?: PgBossLike;
  /**
   * A `postgres://` URL: the inbox loads pg-boss, makes its own instance on it (with
   * `keepCompletedMs` and `keepFailedMs` as its archive settings) and stops it in `close()`.
   */
  connectionString?: string;
  /**
   * The Postgres schema of pg-boss's tables: the `schema` a given `boss` was made with, or the
   * one the inbox's own pg-boss installs itself in. Default `'pgboss'` (pg-boss's).
   */
  schema?: string;
  /** pg-boss's queue name: letters, digits, `_`, `-` and `.`. Default `'schoolhooks'`. */
  queueName?: string;
  /** Runs of the handlers before a job is a dead letter. Default 10. */
  attempts?: number;
  /** The first retry's delay, doubling each time (the one retry policy). Default 30 s. */
  backoffMs?: number;
  /** How long a completed job is kept. Default 1 day. */
  keepCompletedMs?: number;
  /** How long a dead letter is kept for `retryFailed`. Default 30 days. */
  keepFailedMs?: number;
  /**
   * How long a run may hold a job before pg-boss takes its worker for dead and hands the job
   * out again (a worker that crashed). Longer than the receiver's `handlerTimeoutMs`. Default
   * 15 minutes (pg-boss's). The inbox's own pg-boss looks for such runs every half of it (1 s
   * to 60 s); a `boss` you pass looks as often as you configured it.
   */
  expireInMs?: number;
  /**
   * The longest `enqueue` may take before it rejects (the receiver then answers 503
   * `inbox_unavailable`). Default 2000.
   */
  enqueueTimeoutMs?: number;
  /** Where pg-boss's errors and failed job updates are logged. Default: nowhere. */
  logger?: Logger;
}

/** Options of {@link PgBossInbox.work}. */
export interface PgBossWorkOptions extends InboxWorkOptions {
  /** How long a worker with nothing to run waits before it asks again. Default 1000 ms. */
  pollIntervalMs?: number;
}

/** One job as {@link PgBossInbox.getJob} shows it. */
export type PgBossInboxJob = PgBossJobRow;

/**
 * The pg-boss inbox: a {@link ManagedInbox}, its pg-boss instance, and single jobs by id. Its
 * `reconcile` and `watch` each run on a `stately` pg-boss queue of their own
 * (`<queueName>.reconcile`, `<queueName>.watch`): one run a tick across every process that calls
 * it, aborted after `expireInMs`; each run's job keeps its summary. They need no pg-boss cron.
 */
export interface PgBossInbox extends ManagedInbox, InboxJobAdmin<PgBossInboxJob> {
  /**
   * Resolves once pg-boss is started, the queue exists and its tables are of a version this
   * inbox knows; rejects with a `ConfigError` otherwise. Every other method waits for it too:
   * call it at start-up to fail there rather than at the first delivery.
   */
  start(): Promise<void>;
  /** Run the receiver's handlers for the stored deliveries, in this process. */
  work(receiver: Receiver, options?: PgBossWorkOptions): InboxWorker;
}

const QUEUE_NAME = /^[A-Za-z0-9_.-]{1,100}$/;

/**
 * Create an inbox on pg-boss. `handle()` of a receiver created with it answers 202 `queued`
 * once the delivery's job row is committed; `inbox.work(receiver)` runs the handlers, in this
 * process or in any other that creates the same inbox.
 *
 * - Each delivery is one job whose data is the whole {@link StoredDelivery} (the raw body and
 *   its signature: workers verify it again) and whose id is {@link pgBossJobId} of its
 *   idempotencyKey, so storing the same event twice keeps one job.
 * - `enqueue` rejects after `enqueueTimeoutMs` whatever the database does. An insert that still
 *   commits after that is harmless: the id makes it the job the platform's retry stores.
 * - A run that succeeds completes the job; one that cannot succeed (an invalid payload, a
 *   signature that no longer verifies) is a dead letter at once; any other failure waits
 *   `backoffMs`, doubling, and is a dead letter after `attempts` runs. A job whose worker died
 *   is handed out again after `expireInMs`. Completed jobs are kept `keepCompletedMs`, dead
 *   letters `keepFailedMs`.
 * - With `postgresStore`, each run is one transaction: the handlers' writes through
 *   `ctx.transaction` commit with the run's completion, or vanish with its failure.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { createReceiver } from 'schoolhooks';
 * import { postgresStore, pgBossInbox } from 'schoolhooks/postgres';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * // postgresStore listens to the pool's errors and tells each to onError.
 * const inbox = pgBossInbox({ connectionString: process.env.DATABASE_URL });
 * await inbox.start();
 * const receiver = createReceiver({ secret, store: postgresStore({ pool }), inbox });
 * receiver.on('PaymentCompleted', grantAccess);
 * const worker = inbox.work(receiver, { concurrency: 10 });
 * // on shutdown:
 * await worker.close();
 * await inbox.close();
 * ```
 */
export function pgBossInbox(options: PgBossInboxOptions): PgBossInbox {
  const inbox = new PgBossQueueInbox(checkOptions(options));
  // A plain object of the inbox's methods, so a copy or a wrapper ({ ...inbox }) keeps them.
  return {
    start: () => inbox.start(),
    enqueue: (delivery) => inbox.enqueue(delivery),
    work: (receiver, workOptions) => inbox.work(receiver, workOptions),
    retryFailed: (filter) => inbox.retryFailed(filter),
    jobs: (filter) => inbox.jobs(filter),
    getJob: (idOrKey, lookup) => inbox.getJob(idOrKey, lookup),
    retryJob: (idOrKey, lookup) => inbox.retryJob(idOrKey, lookup),
    reconcile: (reconciler, reconcileOptions) => inbox.reconcile(reconciler, reconcileOptions),
    watch: (watchdog, watchOptions) => inbox.watch(watchdog, watchOptions),
    close: () => inbox.close(),
  };
}

/** {@link pgBossInbox}'s state: its settings, its pg-boss, its bounded enqueues, its workers. */
class PgBossQueueInbox implements PgBossInbox {
  readonly #settings: InboxSettings;
  readonly #enqueues: BoundedCalls;
  readonly #boss: BossStarter;
  readonly #workers = new Set<PgBossWorker>();
  readonly #reconcilers = new Set<InboxWorker>();
  #watcher: InboxWorker | undefined;
  #closed = false;

  constructor(settings: InboxSettings) {
    const { enqueueTimeoutMs } = settings;
    this.#settings = settings;
    this.#enqueues = new BoundedCalls(enqueueTimeoutMs, {
      timedOut: () => new Error(`Postgres did not store the job within ${enqueueTimeoutMs} ms`),
      failed: (_name, error) => (error instanceof Error ? error : new Error(String(error))),
    });
    const { given, connectionString, schema, queueName, logger } = settings;
    const make = () => createBoss(connectionString!, settings);
    this.#boss = new BossStarter({ given, schema, queueName, logger, make });
  }

  async start(): Promise<void> {
    await this.#started();
  }

  enqueue(delivery: StoredDelivery): Promise<void> {
    if (this.#closed) return Promise.reject(inboxClosed());
    return this.#enqueues.run('enqueue', async (call) => {
      const { boss: ready, tables } = await this.#started();
      if (call.aborted) return;
      // The same key under two tenants is two jobs (a tenant holds no U+0000: isTenantName).
      const id = pgBossJobId(deliveryKeyOf(delivery.idempotencyKey, delivery.tenant));
      // jsonb holds no U+0000 and no lone surrogate: the row keeps such a key's storageKey
      // (the body, which workers read the key from, keeps it as sent).
      const data = { ...delivery, idempotencyKey: storageKey(delivery.idempotencyKey) };
      // null when a job with this id is already there (a retry of the same event).
      await ready.send(this.#settings.queueName, data, sendOptions(this.#settings, tables, id));
      this.#wakeWorkers();
    });
  }

  work(
    receiver: Receiver,
    { concurrency = 1, pollIntervalMs = PG_BOSS_DEFAULTS.pollIntervalMs }: PgBossWorkOptions = {},
  ) {
    if (this.#closed) throw closedForWork('pgBossInbox');
    checkConcurrency('pgBossInbox', concurrency);
    if (!(pollIntervalMs > 0) || !Number.isFinite(pollIntervalMs)) {
      throw new ConfigError('pgBossInbox: pollIntervalMs must be a positive number of ms');
    }
    const worker = new PgBossWorker({
      queueName: this.#settings.queueName,
      concurrency,
      pollIntervalMs,
      started: () => this.#started(),
      logger: this.#settings.logger,
      run: jobRunner(receiver, this.#settings),
    });
    this.#workers.add(worker);
    worker.closed.finally(() => this.#workers.delete(worker)).catch(() => {});
    return worker;
  }

  reconcile(reconciler: ScheduledReconciler, options: InboxReconcileOptions): InboxWorker {
    if (this.#closed) throw closedForWork('pgBossInbox');
    const schedule = checkReconcileOptions('pgBossInbox', reconciler, options);
    if (this.#reconcilers.size > 0) {
      throw new ConfigError('pgBossInbox: reconcile runs one reconciler per inbox; close it first');
    }
    const log = {
      logger: this.#settings.logger,
      queue: reconcileQueueName(this.#settings.queueName),
    };
    const handle = startPgBossTask(
      { ...this.#settings, started: () => this.#started() },
      reconcileTask(reconciler, schedule, log),
      () => this.#reconcilers.delete(handle),
    );
    this.#reconcilers.add(handle);
    return handle;
  }

  watch(watchdog: WatchedWatchdog, options: InboxWatchOptions): InboxWorker {
    if (this.#closed) throw closedForWork('pgBossInbox');
    const schedule = checkWatchOptions('pgBossInbox', watchdog, options);
    if (this.#watcher !== undefined) throw secondWatchdog('pgBossInbox');
    const { logger, queueName } = this.#settings;
    const handle = startPgBossTask(
      { ...this.#settings, started: () => this.#started() },
      watchTask(watchdog, schedule, { logger, queue: taskQueueName(queueName, 'watch') }),
      () => {
        if (this.#watcher === handle) this.#watcher = undefined;
      },
    );
    this.#watcher = handle;
    return handle;
  }

  async retryFailed({ event }: { event?: string } = {}): Promise<number> {
    const { tables } = await this.#started();
    const count = await tables.retryFailed({ event }, this.#settings.keepCompletedMs);
    this.#wakeWorkers();
    return count;
  }

  async jobs({ state }: { state?: InboxJobState } = {}): Promise<InboxJob[]> {
    const { tables } = await this.#started();
    return (await tables.list(state)).map(({ outcome: _o, finishedAt: _f, ...job }) => job);
  }

  async getJob(idOrKey: string, lookup?: InboxJobLookup): Promise<PgBossInboxJob | undefined> {
    const { tables } = await this.#started();
    return tables.get(idOrKey, lookup?.tenant);
  }

  async retryJob(idOrKey: string, lookup?: InboxJobLookup): Promise<boolean> {
    const { tables } = await this.#started();
    const { keepCompletedMs } = this.#settings;
    const count = await tables.retryFailed({ idOrKey, tenant: lookup?.tenant }, keepCompletedMs);
    this.#wakeWorkers();
    return count > 0;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const scheduled = [...this.#reconcilers, ...(this.#watcher ? [this.#watcher] : [])];
    await Promise.all([...this.#workers, ...scheduled].map((worker) => worker.close()));
    await this.#boss.stop();
  }

  #started(): Promise<Started> {
    return this.#boss.started();
  }

  #wakeWorkers(): void {
    for (const worker of this.#workers) worker.wake();
  }
}

/** {@link PgBossInboxOptions} with every default filled in, checked. */
interface InboxSettings {
  readonly given: PgBossLike | undefined;
  readonly connectionString: string | undefined;
  readonly schema: string;
  readonly queueName: string;
  readonly attempts: number;
  readonly backoffMs: number;
  readonly keepCompletedMs: number;
  readonly keepFailedMs: number;
  readonly expireInMs: number;
  readonly enqueueTimeoutMs: number;
  readonly logger: Logger | undefined;
}

/** The options with their defaults, or a `ConfigError` naming the first that cannot work. */
function checkOptions(options: PgBossInboxOptions): InboxSettings {
  const {
    boss: given,
    connectionString,
    schema = PG_BOSS_DEFAULTS.schema,
    queueName = QUEUE_DEFAULTS.queueName,
    expireInMs = PG_BOSS_DEFAULTS.expireInMs,
    enqueueTimeoutMs = QUEUE_DEFAULTS.enqueueTimeoutMs,
    logger,
  } = options;
  if ((given === undefined) === (connectionString === undefined)) {
    throw new ConfigError('pgBossInbox: pass either boss or connectionString');
  }
  if (connectionString !== undefined && !/^postgres(?:ql)?:\/\//.test(connectionString)) {
    throw new ConfigError('pgBossInbox: connectionString must be a postgres:// URL');
  }
  if (!QUEUE_NAME.test(queueName)) {
    throw new ConfigError('pgBossInbox: queueName must be letters, digits, "_", "-" or "."');
  }
  const policy = inboxPolicy('pgBossInbox', options);
  for (const [name, value] of Object.entries({ expireInMs, enqueueTimeoutMs })) {
    if (!(value > 0) || !Number.isFinite(value)) {
      throw new ConfigError(`pgBossInbox: ${name} must be a positive number of ms`);
    }
  }
  return {
    given,
    connectionString,
    schema,
    queueName,
    ...policy,
    expireInMs,
    enqueueTimeoutMs,
    logger,
  };
}

/** Per-job options pg-boss stores with the row (names pg-boss 10, 11 and 12 share). */
function sendOptions(
  { attempts, expireInMs, keepCompletedMs }: InboxSettings,
  tables: PgBossTables,
  id: string,
): object {
  return {
    id,
    // pg-boss counts the runs; it retries itself only a run whose worker died (it expired), at
    // once. Its retryDelay/retryBackoff count whole seconds with jitter, not the policy's curve:
    // every other retry is put back by pg-boss-tables.ts.
    retryLimit: attempts - 1,
    retryDelay: 0,
    retryBackoff: false,
    expireInSeconds: seconds(expireInMs),
    ...(tables.layout === 'pg-boss 10' ? {} : { deleteAfterSeconds: seconds(keepCompletedMs) }),
  };
}

/**
 * One run of a job: the receiver's handlers on the stored delivery, then the policy's verdict
 * written to the job's row (completed, a dead letter, or waiting for its retry).
 */
function jobRunner(
  receiver: Receiver,
  { queueName, backoffMs, keepFailedMs }: InboxSettings,
): (ready: Started, job: PgBossFetchedJob) => Promise<void> {
  return async ({ boss, tables }, job) => {
    const attempt = job.retryCount + 1;
    const result = await receiver.processStored(job.data as StoredDelivery, { attempt });
    // The job's own runs, as the inbox that stored it set them.
    const verdict = verdictOf(result, { attempts: job.retryLimit + 1, backoffMs }, attempt);
    if (verdict.done) await boss.complete(queueName, job.id, { outcome: verdict.outcome });
    else if (verdict.retryInMs === undefined) {
      await tables.deadLetter(job.id, verdict.reason, keepFailedMs);
    } else await tables.retryLater(job.id, verdict.reason, verdict.retryInMs);
  };
}

/** The pg-boss a `connectionString` asks for: loaded now, never by importing this module. */
async function createBoss(
  connectionString: string,
  settings: { schema: string; keepCompletedMs: number; keepFailedMs: number; expireInMs: number },
): Promise<PgBossLike> {
  let loaded: unknown;
  try {
    loaded = await import('pg-boss');
  } catch (error) {
    throw new ConfigError(
      `pgBossInbox: connectionString needs pg-boss installed (npm install pg-boss): ${messageOf(error)}`,
    );
  }
  const PgBoss = constructorOf(loaded);
  if (PgBoss === undefined) {
    throw new ConfigError('pgBossInbox: the installed pg-boss exports no PgBoss class');
  }
  return new PgBoss(bossOptions(connectionString, settings));
}

/**
 * The options of the pg-boss the inbox makes for a `connectionString` (not exported by the
 * package; a module export so a test can read them, as pg-boss keeps its own private).
 * @internal
 */
export function bossOptions(
  connectionString: string,
  settings: { schema: string; keepCompletedMs: number; keepFailedMs: number; expireInMs: number },
): Record<string, unknown> {
  // Expired runs (a worker that died) are looked for every half of expireInMs, 1 s to 60 s.
  const superviseSeconds = Math.min(60, seconds(settings.expireInMs / 2));
  return {
    connectionString,
    schema: settings.schema,
    // No cron: the inbox schedules nothing.
    schedule: false,
    // pg-boss 10 expires runs in its maintenance; 11 and 12 in their supervision.
    maintenanceIntervalSeconds: superviseSeconds,
    superviseIntervalSeconds: superviseSeconds,
    // pg-boss 10 moves finished jobs to its archive after these; 11 and 12 ignore them and use
    // each job's deleteAfterSeconds, which the inbox sets.
    archiveCompletedAfterSeconds: seconds(settings.keepCompletedMs),
    archiveFailedAfterSeconds: seconds(settings.keepFailedMs),
  };
}

type PgBossConstructor = new (options: object) => PgBossLike;

/** pg-boss 12's named `PgBoss` export, or pg-boss 10's CommonJS class, from either import. */
function constructorOf(loaded: unknown): PgBossConstructor | undefined {
  const candidates = [loaded, (loaded as { default?: unknown } | null)?.default];
  for (const candidate of candidates) {
    const named = (candidate as { PgBoss?: unknown } | null)?.PgBoss;
    if (typeof named === 'function') return named as PgBossConstructor;
  }
  for (const candidate of candidates) {
    if (typeof candidate === 'function') return candidate as PgBossConstructor;
  }
  return undefined;
}
