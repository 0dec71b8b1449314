/**
 * What the inboxes share to run a watchdog on a schedule (`inbox.watch(watchdog, …)`): its
 * options, checked, and one check with its alert handed on and its failure logged, never thrown.
 * Types only from `schoolhooks/watchdog`: the inbox never loads the watchdog.
 * @module
 */

import { ConfigError } from '../errors.js';
import { messageOf } from '../utils/message-of.js';
import type { Logger } from '../receiving/receiver.js';
import type { Watchdog } from '../watchdog/create-watchdog.js';
import type { Health } from '../watchdog/health.js';
import { everyMsOf, type ScheduledTask, type TaskRunResult } from './scheduled-task.js';

/** What an inbox watches: any object with the watchdog's `check` (`createWatchdog(…)`). */
export type WatchedWatchdog = Pick<Watchdog, 'check'>;

/** Options of `inbox.watch(watchdog, options)`. */
export interface InboxWatchOptions {
  /**
   * How often the watchdog checks: ms, or a duration (`'5m'`, `'90s'`, `'1h'`). Checks start at
   * whole multiples of it since the epoch, one at a time across every process of the inbox.
   */
  every: string | number;
  /**
   * Gets the health of each check whose status is not `ok`: at every tick while it is not, as a
   * pager repeats, not only when it changes (compare `health.status` with the last one to page
   * once). A rejection, or a throw, goes to `onError`.
   */
  onAlert(health: Health): void | Promise<void>;
  /**
   * Gets the error of each check that threw, and of each `onAlert` that failed (the next check
   * comes at the next tick all the same). Default: logged at error level by the inbox's
   * `logger`, or `console` without one.
   */
  onError?: (error: unknown) => void;
}

/** {@link InboxWatchOptions}, checked, with `every` in ms. */
export interface WatchSchedule {
  readonly everyMs: number;
  readonly onAlert: (health: Health) => void | Promise<void>;
  readonly onError: ((error: unknown) => void) | undefined;
}

/** The options checked, or a `ConfigError` naming `factory` and the first that cannot work. */
export function checkWatchOptions(
  factory: string,
  watchdog: WatchedWatchdog,
  options: InboxWatchOptions,
): WatchSchedule {
  if (typeof (watchdog as Partial<WatchedWatchdog> | null)?.check !== 'function') {
    throw new ConfigError(`${factory}: watch needs a watchdog (createWatchdog)`);
  }
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError(`${factory}: watch needs options: { every, onAlert }`);
  }
  const everyMs = everyMsOf(options.every);
  if (everyMs === undefined) {
    throw new ConfigError(
      `${factory}: watch's every must be a positive whole number of ms, or a duration such as '5m' or '90s', of at most 24 days`,
    );
  }
  if (typeof options.onAlert !== 'function') {
    throw new ConfigError(`${factory}: watch needs onAlert, a function that gets the health`);
  }
  if (options.onError !== undefined && typeof options.onError !== 'function') {
    throw new ConfigError(`${factory}: watch's onError must be a function`);
  }
  return { everyMs, onAlert: options.onAlert, onError: options.onError };
}

/** Where a check's failures are told: the inbox's logger and the task's queue. */
interface WatchLog {
  readonly logger: Logger | undefined;
  readonly queue: string;
}

/**
 * What a check's job keeps as its result (BullMQ's return value, pg-boss's output): the status,
 * its times and the counts, never a delivery's idempotencyKey nor anything a secret could be in.
 *
 * @example
 * ```ts
 * healthSummary({ status: 'at_risk', atRisk: [delivery] }, true);
 * // { status: 'at_risk', atRisk: 1, silent: 0, alerted: true }
 * ```
 */
export function healthSummary(health: Health, alerted: boolean): Record<string, unknown> {
  const summary: Record<string, unknown> = {
    status: health.status,
    atRisk: health.atRisk.length,
    silent: health.silent?.entities ?? 0,
    alerted,
  };
  for (const time of ['lastSuccessAt', 'lastAttemptAt', 'failingSince', 'disablesAt'] as const) {
    if (health[time] !== undefined) summary[time] = health[time];
  }
  return summary;
}

/**
 * The watchdog on its schedule as a task an inbox runs (src/inbox/scheduled-task.ts): each run
 * checks, calls `onAlert` unless the status is `ok`, and its job keeps {@link healthSummary}; a
 * check that throws fails the run (its job), and goes to `onError` or the log.
 */
export function watchTask(
  watchdog: WatchedWatchdog,
  schedule: WatchSchedule,
  log: WatchLog,
): ScheduledTask {
  return {
    kind: 'watch',
    everyMs: schedule.everyMs,
    run: async (signal): Promise<TaskRunResult> => {
      let health: Health;
      try {
        health = await watchdog.check();
      } catch (error) {
        if (signal.aborted) {
          log.logger?.warn({ err: messageOf(signal.reason), queue: log.queue }, 'watch stopped');
        } else {
          failed(
            schedule,
            error,
            log,
            'watchdog check failed; the next check runs at the next tick',
          );
        }
        return { ok: false, error };
      }
      const alerted = health.status !== 'ok';
      if (alerted) {
        try {
          await schedule.onAlert(health);
        } catch (error) {
          failed(schedule, error, log, 'watch onAlert failed');
        }
      }
      return { ok: true, summary: healthSummary(health, alerted) };
    },
  };
}

/** An error handed to `onError` (whose own throw is logged), or logged at error level. */
function failed(schedule: WatchSchedule, error: unknown, log: WatchLog, message: string): void {
  const logger = log.logger ?? console;
  if (schedule.onError === undefined) {
    logger.error({ err: messageOf(error), queue: log.queue }, message);
    return;
  }
  try {
    schedule.onError(error);
  } catch (thrown) {
    logger.error({ err: messageOf(thrown), queue: log.queue }, 'watch onError threw');
  }
}
