/**
 * A scheduled task of a `pgBossInbox` (its reconciler, its watchdog) on a queue of its own
 * (`<queueName>.reconcile`, `<queueName>.watch`): at each whole multiple of `every`, each
 * process stores that tick's job under one id derived from the tick (so every process stores the
 * same one), then asks for a job. pg-boss hands a job to one process only, and the queue's
 * `stately` policy holds at most one job waiting and one running, so runs never overlap and never
 * pile up.
 *
 * The ticks are our own timer rather than pg-boss's `schedule()`, which cannot express `every`:
 * it takes a cron expression, so whole minutes at best (its timekeeper sends a due cron job at
 * most once a minute, `singletonSeconds: 60`, looking every `cronMonitorIntervalSeconds`), and
 * only the periods a calendar divides evenly ('90s', '45m' or '7h' have no cron); `every` is any
 * whole number of ms up to 24 days, on the multiples since the epoch. It would also need the
 * boss to run its cron (the inbox's own runs with `schedule: false`; a `boss` passed in may too).
 * @module
 */

import { ConfigError } from '../errors.js';
import { messageOf } from '../utils/message-of.js';
import type { Logger } from '../receiving/receiver.js';
import type { InboxWorker } from './managed.js';
import type { Started } from './pg-boss-starter.js';
import { pgBossJobId, seconds, type PgBossTables } from './pg-boss-tables.js';
import { ScheduleTicker, taskQueueName, type ScheduledTask } from './scheduled-task.js';

/** What a scheduled task's worker needs of its inbox. */
export interface PgBossScheduleSettings {
  readonly queueName: string;
  /** How long a run may take: pg-boss takes a job held longer for dead, so a run is aborted then. */
  readonly expireInMs: number;
  readonly keepCompletedMs: number;
  readonly keepFailedMs: number;
  readonly logger: Logger | undefined;
  readonly started: () => Promise<Started>;
}

/** Ready to tick: the started pg-boss, with the task's queue made, and its tables. */
interface Prepared {
  readonly boss: Started['boss'];
  readonly tables: PgBossTables;
}

/**
 * Run the task at once (unless another process ran this tick's job), then at every tick, in
 * this process, until `close()`, which aborts a run in progress. Each job keeps its run's
 * summary, or fails with its error.
 */
export function startPgBossTask(
  settings: PgBossScheduleSettings,
  task: ScheduledTask,
  forget: () => void,
): InboxWorker {
  const { kind } = task;
  const name = taskQueueName(settings.queueName, kind);
  if (!/^[A-Za-z0-9_.-]{1,100}$/.test(name)) {
    throw new ConfigError(
      `pgBossInbox: ${kind}'s queue "<queueName>.${kind}" must be at most 100 characters`,
    );
  }
  let preparing: Promise<Prepared> | undefined;
  const prepare = (): Promise<Prepared> => {
    preparing ??= (async () => {
      const { boss, tables } = await settings.started();
      // stately: one job waiting and one running at the most, whatever each process stores.
      await boss.createQueue(name, { policy: 'stately' });
      return { boss, tables: tables.ofQueue(name) };
    })().catch((error: unknown) => {
      preparing = undefined;
      throw error;
    });
    return preparing;
  };

  async function tick(signal: AbortSignal): Promise<void> {
    let job;
    let prepared: Prepared;
    try {
      prepared = await prepare();
      const slot = Math.floor(Date.now() / task.everyMs);
      // null when this tick's job is there already, or when one is waiting (stately).
      await prepared.boss.send(
        name,
        { tick: slot },
        sendOptions(settings, prepared, kind, name, slot),
      );
      [job] = await prepared.boss.fetch(name, { batchSize: 1, includeMetadata: true });
    } catch (error) {
      if (!signal.aborted) {
        settings.logger?.warn(
          { err: messageOf(error), queue: name },
          `${kind} tick failed; the next tick tries again`,
        );
      }
      return;
    }
    if (job === undefined) return;
    const outcome = await withTimeout(signal, settings.expireInMs, kind, (runSignal) =>
      task.run(runSignal),
    );
    try {
      if (outcome.ok) {
        await prepared.boss.complete(name, job.id, outcome.summary);
      } else {
        const reason = messageOf(outcome.error);
        await prepared.tables.deadLetter(job.id, reason, settings.keepFailedMs);
      }
    } catch (error) {
      // The job stays active until pg-boss expires it; the next tick's job waits until then.
      settings.logger?.warn({ err: messageOf(error), queue: name }, 'inbox job update failed');
    }
  }

  return new ScheduleTicker(task.everyMs, tick, forget, kind);
}

/** The job of one tick: its id derived from the tick, run once, held at most `expireInMs`. */
function sendOptions(
  { expireInMs, keepCompletedMs }: PgBossScheduleSettings,
  { tables }: Prepared,
  kind: string,
  name: string,
  slot: number,
): object {
  return {
    id: pgBossJobId(`${kind}:${name}:${slot}`),
    // A failed run is not run again: the next tick runs anew.
    retryLimit: 0,
    expireInSeconds: seconds(expireInMs),
    ...(tables.layout === 'pg-boss 10' ? {} : { deleteAfterSeconds: seconds(keepCompletedMs) }),
  };
}

/**
 * `run` with a signal aborted by `signal` or after `ms`, whichever comes first. A timer and a
 * listener rather than `AbortSignal.any([signal, AbortSignal.timeout(ms)])`, which would not do
 * the same: its timeout aborts with a `TimeoutError` ("The operation was aborted due to
 * timeout"), where the run's job keeps a reason naming `expireInMs`; and here the listener on the
 * worker's signal, which lives as long as the worker, goes as soon as the run ends.
 */
async function withTimeout<T>(
  signal: AbortSignal,
  ms: number,
  kind: string,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const abort = (): void => controller.abort(signal.reason);
  if (signal.aborted) abort();
  signal.addEventListener('abort', abort);
  const timer = setTimeout(
    () => controller.abort(new Error(`the ${kind} run took longer than ${ms} ms (expireInMs)`)),
    ms,
  );
  try {
    return await run(controller.signal);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', abort);
  }
}
