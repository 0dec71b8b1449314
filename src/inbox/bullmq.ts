/**
 * The inbox on BullMQ and Redis: deliveries are acknowledged once they are jobs in Redis, and
 * workers in any number of processes run the handlers (docs/inbox.md). Importing this entry
 * loads bullmq and ioredis; the core never does.
 *
 * Retries are BullMQ's own: each job is stored with `attempts` and BullMQ's built-in
 * `backoff: { type: 'exponential', delay: backoffMs }`, whose wait after the n-th failed run is
 * `round(delay * 2^(n - 1))` (BullMQ passes n = `attemptsMade + 1` when a run fails; no jitter is
 * set): the one retry policy's curve (src/inbox/retry-policy.ts), rounded to the ms, with nothing for a
 * worker to register. Jobs stored by earlier versions of this inbox carry the custom type
 * {@link BACKOFF_STRATEGY}; every worker still answers it with the same curve, computed by
 * BullMQ's exponential strategy, so they are retried as they were stored.
 * @module schoolhooks/bullmq
 */

import { messageOf } from '../utils/message-of.js';
import {
  Backoffs,
  Queue,
  UnrecoverableError,
  Worker,
  type BackoffStrategy,
  type Job,
  type JobsOptions,
} from 'bullmq';
import { Redis, type Cluster, type RedisOptions } from 'ioredis';
import { BoundedCalls, type BoundedCall } from '../utils/bounded-calls.js';
import { ConfigError } from '../errors.js';
import { readinessOf } from '../stores/client-readiness.js';
import { storageKey } from '../stores/storage-key.js';
import type { Logger, Receiver } from '../receiving/receiver.js';
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
import type { StoredDelivery } from './types.js';
import {
  listJobs,
  retryDeadLetters,
  retryOne,
  shown,
  type InboxQueue,
  type InboxQueueJob,
} from './bullmq-jobs.js';
import { BULLMQ_DEFAULTS, QUEUE_DEFAULTS } from '../defaults.js';
import { deliveryKeyOf } from '../keys/delivery-key.js';
import { startBullmqTask, type BullmqScheduleSettings } from './bullmq-schedule.js';
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

/**
 * The custom backoff type earlier versions of bullmqInbox stored their jobs with. New jobs use
 * BullMQ's built-in `'exponential'` (the same curve); a worker of this version still retries a
 * job of this type on that curve, from the delay it was stored with.
 */
export const BACKOFF_STRATEGY = 'schoolhooks';
/** Options of {@link bullmqInbox}. */
export interface BullmqInboxOptions {
  /**
   * An ioredis `Redis` or `Cluster` (the inbox never closes it), or connection options or a
   * `redis://` URL (the inbox makes its own client and closes it in `close()`). Workers get
   * connections of their own, copied from it with `maxRetriesPerRequest: null` as BullMQ
   * requires, so the client itself may keep any ioredis options.
   */
  connection: Redis | Cluster | RedisOptions | string;
  /** BullMQ's queue name. Default `'schoolhooks'`. No `:`. */
  queueName?: string;
  /** BullMQ's key prefix. Default `'bull'`. On Redis Cluster, a hash tag such as `'{bull}'`. */
  prefix?: string;
  /** Runs of the handlers before a job is a dead letter. Default 10. */
  attempts?: number;
  /**
   * The first retry's delay, doubling each time (the one retry policy, as BullMQ's built-in
   * exponential backoff). Default 30 s.
   */
  backoffMs?: number;
  /** How long a completed job is kept. Default 1 day. */
  keepCompletedMs?: number;
  /** How long a dead letter is kept for `retryFailed`. Default 30 days. */
  keepFailedMs?: number;
  /**
   * The longest `enqueue` may take before it rejects (the receiver then answers 503
   * `inbox_unavailable`). Default 2000. While the client is reconnecting it rejects at once.
   */
  enqueueTimeoutMs?: number;
  /** Where connection errors of the queue and its workers are logged. Default: nowhere. */
  logger?: Logger;
}

/** Options of {@link BullmqInbox.work}: {@link InboxWorkOptions} and BullMQ's stalled detection. */
export interface BullmqWorkOptions extends InboxWorkOptions {
  /**
   * How long a running job's lock holds without being renewed (the worker renews it every half
   * of it). A worker that dies mid-job loses it after this long, and the job is *stalled*.
   * A positive integer of ms; default 30 s (BullMQ's).
   */
  lockDurationMs?: number;
  /**
   * How often a worker looks for stalled jobs and puts them back to run again (once; a job that
   * stalls twice is a dead letter). A positive integer of ms; default 30 s (BullMQ's). A job of
   * a crashed worker runs again within about `lockDurationMs + stalledIntervalMs`.
   */
  stalledIntervalMs?: number;
}

/** One job as {@link BullmqInbox.getJob} shows it: an {@link InboxJob} and how its last run ended. */
export interface BullmqInboxJob extends InboxJob {
  /** For a completed job: the run's outcome (`processed`, `duplicate` or `ignored`). */
  outcome?: string;
  /** When it completed or became a dead letter, ISO 8601. */
  finishedAt?: string;
}

/**
 * The BullMQ inbox: a {@link ManagedInbox}, its BullMQ queue, and single jobs by id. Its `reconcile`
 * and `watch` are BullMQ job schedulers, each on a queue of its own (`<queueName>.reconcile`,
 * `<queueName>.watch`) whose global concurrency is 1: one run a tick across every process that
 * calls it; each run's job keeps its summary. They need BullMQ 5.16 or later.
 */
export interface BullmqInbox extends ManagedInbox, InboxJobAdmin<BullmqInboxJob> {
  /** The BullMQ queue, e.g. for Bull Board (`new BullMQAdapter(inbox.queue)`). */
  readonly queue: Queue<StoredDelivery, string>;
  /** Run the receiver's handlers for the stored deliveries, in this process. */
  work(receiver: Receiver, options?: BullmqWorkOptions): InboxWorker;
}

const ESCAPES: Readonly<Record<string, string>> = { '%': '%25', ':': '%3A', '#': '%23' };

/**
 * The BullMQ job id of an idempotencyKey. BullMQ refuses custom ids that contain `:` or that are
 * integers (`"42"`), so `%`, `:` and `#` are written `%25`, `%3A` and `%23`, and a key that is an
 * integer gets a leading `#`. A key Redis cannot keep as it is (a lone surrogate, U+0000, over
 * 2 kB: src/stores/storage-key.ts) is first its `storageKey`. Any other key is its own id, so
 * Bull Board shows it as it is. Two keys never share an id.
 *
 * @example
 * ```ts
 * inboxJobId('8b0c6a4e-3f0e-4c43-9d59-2b7d0f1c9e11'); // the same string
 * inboxJobId('order:42'); // 'order%3A42'
 * inboxJobId('42'); // '#42'
 * ```
 */
export function inboxJobId(idempotencyKey: string): string {
  const escaped = storageKey(idempotencyKey).replace(/[%:#]/g, (c) => ESCAPES[c] ?? c);
  return `${parseInt(escaped, 10)}` === escaped ? `#${escaped}` : escaped;
}

/**
 * Create an inbox on BullMQ. `handle()` of a receiver created with it answers 202 `queued` once
 * the delivery is a job in Redis; `inbox.work(receiver)` runs the handlers, in this process or
 * in any other that creates the same inbox.
 *
 * - Each delivery is one job named after its event, with the whole {@link StoredDelivery} as
 *   its data (the raw body and its signature: workers verify it again) and the id
 *   {@link inboxJobId} of its idempotencyKey, so storing the same event twice keeps one job.
 * - `enqueue` never hangs: it rejects at once while the client is reconnecting or closed,
 *   waits for a client that is still connecting, and rejects after `enqueueTimeoutMs` in any
 *   case. An add that still reaches Redis after that (ioredis re-sends a command that was in
 *   flight when a connection dropped) is harmless: the job id makes it the same job the
 *   platform's retry stores, and the run lease in the receiver's store keeps it from running
 *   twice.
 * - A run that succeeds completes the job; one that cannot succeed (an invalid payload, a
 *   signature that no longer verifies) is a dead letter at once (BullMQ's `UnrecoverableError`);
 *   any other failure is retried after `backoffMs`, doubling, and is a dead letter after
 *   `attempts` runs. Completed jobs are kept `keepCompletedMs`, dead letters `keepFailedMs`.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { createReceiver } from 'schoolhooks';
 * import { redisStore } from 'schoolhooks/redis';
 * import { bullmqInbox } from 'schoolhooks/bullmq';
 *
 * const connection = new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: null });
 * const inbox = bullmqInbox({ connection, attempts: 10, backoffMs: 30_000 });
 * const receiver = createReceiver({ secret, store: redisStore({ client: connection }), inbox });
 * receiver.on('PaymentCompleted', grantAccess);
 * const worker = inbox.work(receiver, { concurrency: 10 });
 * // on shutdown:
 * await worker.close();
 * await inbox.close();
 * ```
 */
export function bullmqInbox(options: BullmqInboxOptions): BullmqInbox {
  const inbox = new BullmqQueueInbox(checkOptions(options), options.connection);
  // A plain object of the inbox's methods, so a copy or a wrapper ({ ...inbox }) keeps them.
  return {
    queue: inbox.queue,
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

/** {@link bullmqInbox}'s state: its client, its queue, its bounded enqueues and its workers. */
class BullmqQueueInbox implements BullmqInbox {
  readonly queue: InboxQueue;
  readonly #settings: InboxSettings;
  readonly #client: Redis | Cluster;
  /** True when the inbox made its client, and closes it. */
  readonly #owned: boolean;
  readonly #enqueue: (delivery: StoredDelivery) => Promise<void>;
  readonly #workers = new Set<InboxWorker>();
  #closed = false;
  /** True while a reconciler runs (one per inbox: its scheduler has one id). */
  #reconciling = false;
  /** True while a watchdog is checked (one per inbox, likewise). */
  #watching = false;
  readonly #onConnectionError = (error: unknown): void => {
    this.#settings.logger?.warn(
      { err: messageOf(error), queue: this.#settings.queueName },
      'inbox connection error',
    );
  };

  constructor(settings: InboxSettings, connection: BullmqInboxOptions['connection']) {
    this.#settings = settings;
    const { client, owned } = inboxClient(connection, this.#onConnectionError);
    this.#client = client;
    this.#owned = owned;
    this.queue = new Queue<StoredDelivery, string>(settings.queueName, {
      connection: client,
      prefix: settings.prefix,
    });
    this.queue.on('error', this.#onConnectionError);
    this.#enqueue = enqueuer(client, this.queue, settings);
  }

  enqueue(delivery: StoredDelivery): Promise<void> {
    if (this.#closed) return Promise.reject(inboxClosed());
    return this.#enqueue(delivery);
  }

  work(receiver: Receiver, workOptions: BullmqWorkOptions = {}): InboxWorker {
    if (this.#closed) throw closedForWork('bullmqInbox');
    const handle = startWorker(
      this.#client,
      receiver,
      this.#settings,
      workOptions,
      this.#onConnectionError,
      () => this.#workers.delete(handle),
    );
    this.#workers.add(handle);
    return handle;
  }

  reconcile(reconciler: ScheduledReconciler, options: InboxReconcileOptions): InboxWorker {
    if (this.#closed) throw closedForWork('bullmqInbox');
    const schedule = checkReconcileOptions('bullmqInbox', reconciler, options);
    if (this.#reconciling) {
      throw new ConfigError('bullmqInbox: reconcile runs one reconciler per inbox; close it first');
    }
    const log = {
      logger: this.#settings.logger,
      queue: reconcileQueueName(this.#settings.queueName),
    };
    // Marked once started: a BullMQ too old to reconcile throws here and leaves none running.
    const handle = startBullmqTask(
      this.#scheduleSettings(),
      reconcileTask(reconciler, schedule, log),
      () => {
        this.#workers.delete(handle);
        this.#reconciling = false;
      },
    );
    this.#reconciling = true;
    this.#workers.add(handle);
    return handle;
  }

  watch(watchdog: WatchedWatchdog, options: InboxWatchOptions): InboxWorker {
    if (this.#closed) throw closedForWork('bullmqInbox');
    const schedule = checkWatchOptions('bullmqInbox', watchdog, options);
    if (this.#watching) throw secondWatchdog('bullmqInbox');
    const { logger, queueName } = this.#settings;
    const log = { logger, queue: taskQueueName(queueName, 'watch') };
    const handle = startBullmqTask(
      this.#scheduleSettings(),
      watchTask(watchdog, schedule, log),
      () => {
        this.#workers.delete(handle);
        this.#watching = false;
      },
    );
    this.#watching = true;
    this.#workers.add(handle);
    return handle;
  }

  /** What a scheduled task's worker needs of this inbox (src/inbox/bullmq-schedule.ts). */
  #scheduleSettings(): BullmqScheduleSettings {
    return {
      ...this.#settings,
      client: this.#client,
      blockingClient: () => blockingTemplate(this.#client),
      onConnectionError: this.#onConnectionError,
    };
  }

  retryFailed({ event }: { event?: string } = {}): Promise<number> {
    return retryDeadLetters(this.queue, event);
  }

  jobs({ state }: { state?: InboxJobState } = {}): Promise<InboxJob[]> {
    return listJobs(this.queue, state);
  }

  async getJob(idOrKey: string, lookup?: InboxJobLookup): Promise<BullmqInboxJob | undefined> {
    const job = await findJob(this.queue, idOrKey, lookup?.tenant);
    return job === undefined ? undefined : shown(job);
  }

  async retryJob(idOrKey: string, lookup?: InboxJobLookup): Promise<boolean> {
    const job = await findJob(this.queue, idOrKey, lookup?.tenant);
    return job !== undefined && (await retryOne(job));
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#workers].map((worker) => worker.close()));
    await this.queue.close();
    if (this.#owned) await quit(this.#client);
  }
}

/**
 * A job by its id, or by the id its delivery's key has (as enqueue names it: the key of a
 * delivery without a tenant, or under `tenant`, which names a key only).
 */
async function findJob(
  queue: InboxQueue,
  idOrKey: string,
  tenant: string | undefined,
): Promise<InboxQueueJob | undefined> {
  const derived = inboxJobId(deliveryKeyOf(idOrKey, tenant));
  if (tenant !== undefined) return queue.getJob(derived);
  // Only a string Redis keeps as sent can be an id: ioredis would send a lone surrogate as
  // U+FFFD, the id of another key's job.
  const job = storageKey(idOrKey) === idOrKey ? await queue.getJob(idOrKey) : undefined;
  if (job !== undefined) return job;
  return derived === idOrKey ? undefined : queue.getJob(derived);
}

/** {@link BullmqInboxOptions} with every default filled in, checked. */
interface InboxSettings {
  readonly queueName: string;
  readonly prefix: string;
  readonly attempts: number;
  readonly backoffMs: number;
  readonly keepCompletedMs: number;
  readonly keepFailedMs: number;
  readonly enqueueTimeoutMs: number;
  readonly logger: Logger | undefined;
}

/** The options with their defaults, or a `ConfigError` naming the first that cannot work. */
function checkOptions(options: BullmqInboxOptions): InboxSettings {
  const {
    queueName = QUEUE_DEFAULTS.queueName,
    prefix = BULLMQ_DEFAULTS.prefix,
    enqueueTimeoutMs = QUEUE_DEFAULTS.enqueueTimeoutMs,
    logger,
  } = options;
  if (queueName === '' || queueName.includes(':')) {
    throw new ConfigError('bullmqInbox: queueName must be a non-empty name without ":"');
  }
  const policy = inboxPolicy('bullmqInbox', options);
  if (!(enqueueTimeoutMs > 0) || !Number.isFinite(enqueueTimeoutMs)) {
    throw new ConfigError('bullmqInbox: enqueueTimeoutMs must be a positive number of ms');
  }
  return { queueName, prefix, ...policy, enqueueTimeoutMs, logger };
}

/** The client given, or one made from options or a URL (`owned`: the inbox closes it). */
function inboxClient(
  connection: BullmqInboxOptions['connection'],
  onError: (error: unknown) => void,
): { client: Redis | Cluster; owned: boolean } {
  if (isClient(connection)) return { client: connection, owned: false };
  // ioredis reads a URL or options alike; the cast only picks one of its overloads for the union.
  const client = new Redis(connection as RedisOptions);
  client.on('error', onError);
  return { client, owned: true };
}

/**
 * The inbox's `enqueue`: the delivery as a job whose id is {@link inboxJobId} of its key, with
 * the inbox's attempts, backoff and retention, bounded by `enqueueTimeoutMs`.
 */
function enqueuer(
  client: Redis | Cluster,
  queue: InboxQueue,
  { attempts, backoffMs, keepCompletedMs, keepFailedMs, enqueueTimeoutMs }: InboxSettings,
): (delivery: StoredDelivery) => Promise<void> {
  const jobOptions: JobsOptions = {
    attempts,
    // The one retry policy is BullMQ's built-in exponential backoff (see the module comment).
    backoff: { type: 'exponential', delay: backoffMs },
    // BullMQ counts these ages in seconds; it drops old jobs as later ones finish.
    removeOnComplete: { age: Math.ceil(keepCompletedMs / 1000) },
    removeOnFail: { age: Math.ceil(keepFailedMs / 1000) },
  };
  // Every enqueue bounded by enqueueTimeoutMs, with one timer for all of them.
  const enqueues = new BoundedCalls(enqueueTimeoutMs, {
    timedOut: () => new Error(`Redis did not store the job within ${enqueueTimeoutMs} ms`),
    failed: (_name, error) => (error instanceof Error ? error : new Error(String(error))),
  });
  // Waits while the client connects, fails at once while it reconnects (never queues an add).
  const connected = readinessOf(
    client,
    () => new Error(`the Redis client of the inbox is not ready (status: ${client.status})`),
  );

  async function add(delivery: StoredDelivery, call: BoundedCall): Promise<void> {
    // connected() returns only for a call not aborted, and no timer runs before the add is sent.
    if (client.status !== 'ready') await connected(call);
    // A job with this id already there (a retry of the same event) is left as it is.
    await queue.add(delivery.event, delivery, {
      ...jobOptions,
      // The same key under two tenants is two jobs.
      jobId: inboxJobId(deliveryKeyOf(delivery.idempotencyKey, delivery.tenant)),
    });
  }
  return (delivery) => enqueues.run('enqueue', (call) => add(delivery, call));
}

/**
 * A BullMQ worker running {@link jobRunner} on connections copied from the inbox's client, able
 * to retry jobs stored by earlier versions ({@link legacyBackoff}); `forget` is called once it
 * has closed.
 */
function startWorker(
  client: Redis | Cluster,
  receiver: Receiver,
  { queueName, prefix, attempts, backoffMs }: InboxSettings,
  { concurrency = 1, lockDurationMs, stalledIntervalMs }: BullmqWorkOptions,
  onError: (error: unknown) => void,
  forget: () => void,
): InboxWorker {
  checkConcurrency('bullmqInbox', concurrency);
  // Checked before any connection: BullMQ refuses some (after connecting) and runs with others.
  checkWorkMs('lockDurationMs', lockDurationMs);
  checkWorkMs('stalledIntervalMs', stalledIntervalMs);
  const template = blockingTemplate(client);
  const worker = new Worker<StoredDelivery, string>(
    queueName,
    jobRunner(receiver, attempts, backoffMs),
    {
      connection: template,
      prefix,
      concurrency,
      settings: { backoffStrategy: legacyBackoff(backoffMs) },
      ...(lockDurationMs === undefined ? {} : { lockDuration: lockDurationMs }),
      ...(stalledIntervalMs === undefined ? {} : { stalledInterval: stalledIntervalMs }),
    },
  );
  worker.on('error', onError);
  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= worker.close().finally(() => {
        forget();
        template.disconnect();
      });
      return closing;
    },
  };
}

/** A time of BullMQ's stalled detection: left to BullMQ, or a positive integer of ms. */
function checkWorkMs(name: 'lockDurationMs' | 'stalledIntervalMs', ms: number | undefined): void {
  if (ms !== undefined && !(Number.isInteger(ms) && ms > 0)) {
    throw new ConfigError(`bullmqInbox: ${name} must be a positive integer of ms`);
  }
}

/**
 * One run of a job: the receiver's handlers on the stored delivery, and the policy's verdict as
 * BullMQ understands it (a return completes the job, `UnrecoverableError` makes it a dead letter
 * at once, any other error is retried).
 */
function jobRunner(
  receiver: Receiver,
  attempts: number,
  backoffMs: number,
): (job: Job<StoredDelivery, string>) => Promise<string> {
  return async (job) => {
    const attempt = job.attemptsMade + 1;
    const result = await receiver.processStored(job.data, { attempt });
    // The job's own runs, as the inbox that stored it set them. BullMQ waits as the job's
    // backoff says, on the same curve.
    const policy = { attempts: job.opts.attempts ?? attempts, backoffMs };
    const verdict = verdictOf(result, policy, attempt);
    if (verdict.done) return verdict.outcome;
    // A dead letter now (for retryFailed later), or a failure BullMQ retries.
    if (verdict.retryInMs === undefined) throw new UnrecoverableError(verdict.reason);
    throw new Error(verdict.reason);
  };
}

/** Closes a client the inbox made: QUIT, or a plain disconnect if it cannot be sent. */
async function quit(client: Redis | Cluster): Promise<void> {
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
}

/** An ioredis client rather than connection options or a URL (neither has a duplicate()). */
function isClient(connection: BullmqInboxOptions['connection']): connection is Redis | Cluster {
  return typeof (connection as Partial<Redis>).duplicate === 'function';
}

/**
 * A client for BullMQ to copy a worker's connections from: the inbox's client with
 * `maxRetriesPerRequest: null` (BullMQ blocks on them, and refuses anything else). It is made
 * lazy, so nothing connects before BullMQ takes it, and its options then say "connect at once":
 * BullMQ connects it as the worker's own connection, and its copies of it (`duplicate()` copies
 * the options) connect as they are made.
 */
function blockingTemplate(client: Redis | Cluster): Redis | Cluster {
  const template = client.isCluster
    ? (client as Cluster).duplicate(undefined, {
        lazyConnect: true,
        redisOptions: { ...(client as Cluster).options.redisOptions, maxRetriesPerRequest: null },
      })
    : (client as Redis).duplicate({ lazyConnect: true, maxRetriesPerRequest: null });
  template.options.lazyConnect = false;
  return template;
}

/**
 * What BullMQ asks of a worker only for a job whose `backoff.type` is none of its built-in ones:
 * the jobs of earlier versions of this inbox, of type {@link BACKOFF_STRATEGY}. Their wait is
 * BullMQ's own exponential curve (the one new jobs are stored with) from the delay the job was
 * stored with, or from this worker's `backoffMs` for one stored without any. Any other type is
 * refused as BullMQ refuses a type it does not know.
 */
function legacyBackoff(backoffMs: number): BackoffStrategy {
  return (attemptsMade, type, error, job) => {
    if (type !== BACKOFF_STRATEGY) throw new Error(`Unknown backoff strategy ${type ?? ''}`);
    const stored = job?.opts.backoff;
    const delay = typeof stored === 'object' ? (stored.delay ?? backoffMs) : backoffMs;
    return exponential(delay)(attemptsMade, type, error, job);
  };
}

/** BullMQ's built-in exponential strategy, as BullMQ computes it for a job of that type. */
function exponential(delay: number): BackoffStrategy {
  const builtin = Backoffs.builtinStrategies['exponential'];
  if (builtin === undefined) throw new Error('BullMQ has no exponential backoff strategy');
  return builtin(delay);
}
