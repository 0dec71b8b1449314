/**
 * What the inboxes share to run a reconciler on a schedule (`inbox.reconcile(reconciler, …)`):
 * its options, checked, and one run with its report handed on and its failure logged, never
 * thrown. Types only from `schoolhooks/reconcile`: the inbox never loads the reconciler.
 * @module
 */

import type { RunResult } from '../utils/run-result.js';
import { ConfigError } from '../errors.js';
import { messageOf } from '../utils/message-of.js';
import type {
  ReconcileReport,
  ReconcileRunOptions,
  Reconciler,
  TenantsReconcileReport,
} from '../reconcile/types.js';
import type { Logger } from '../receiving/receiver.js';
import {
  everyMsOf,
  ScheduleTicker,
  taskQueueName,
  type ScheduledTask,
  type TaskRunResult,
} from './scheduled-task.js';

export { durationMs, untilNextTick } from './scheduled-task.js';

/**
 * A scheduled task in one process (src/inbox/scheduled-task.ts), by its name of before the
 * watchdog's schedule shared it.
 */
export const ReconcileTicker = ScheduleTicker;
/** An instance of {@link ReconcileTicker}. */
export type ReconcileTicker = ScheduleTicker;

/**
 * What an inbox runs: any object with the reconciler's `run` (`createReconciler(…)`), whose runs
 * resolve to an `R` (a `TenantsReconcileReport` for a reconciler of many schools).
 */
export type ScheduledReconciler<R extends ReconcileReport = ReconcileReport> = Pick<
  Reconciler<R>,
  'run'
>;

/**
 * Options of `inbox.reconcile(reconciler, options)`; `R` is what the reconciler's runs resolve to
 * (a `TenantsReconcileReport` for a reconciler of many schools: one run, one job, every school).
 */
export interface InboxReconcileOptions<R extends ReconcileReport = ReconcileReport> {
  /**
   * How often the reconciler runs: ms, or a duration (`'1h'`, `'30m'`, `'90s'`, `'1d'`,
   * `'500ms'`). Runs start at whole multiples of it since the epoch (`'1h'`: on the hour), one
   * at a time across every process of the inbox.
   */
  every: string | number;
  /** The window of each run (`reconciler.run({ since })`): `'48h'`, a Date or ms. */
  since: ReconcileRunOptions['since'];
  /** The kinds each run checks. Default: the reconciler's (those with a handler). */
  kinds?: ReconcileRunOptions['kinds'];
  /** Gets the report of each run this process made. */
  onReport?(report: R): void;
  /**
   * Gets the error of each run that threw (the next run comes at the next tick all the same).
   * Default: logged at error level by the inbox's `logger`, or `console` without one.
   */
  onError?: (error: unknown) => void;
}

/** {@link InboxReconcileOptions}, checked, with `every` in ms. */
export interface ReconcileSchedule {
  readonly everyMs: number;
  readonly since: ReconcileRunOptions['since'];
  readonly kinds: ReconcileRunOptions['kinds'];
  readonly onReport: ((report: ReconcileReport) => void) | undefined;
  readonly onError: ((error: unknown) => void) | undefined;
}

/** The options checked, or a `ConfigError` naming `factory` and the first that cannot work. */
export function checkReconcileOptions(
  factory: string,
  reconciler: ScheduledReconciler,
  options: InboxReconcileOptions,
): ReconcileSchedule {
  if (typeof (reconciler as Partial<ScheduledReconciler> | null)?.run !== 'function') {
    throw new ConfigError(`${factory}: reconcile needs a reconciler (createReconciler)`);
  }
  const everyMs = everyMsOf(options.every);
  if (everyMs === undefined) {
    throw new ConfigError(
      `${factory}: reconcile's every must be a positive whole number of ms, or a duration such as '1h', '30m' or '90s', of at most 24 days`,
    );
  }
  if (options.since === undefined) {
    throw new ConfigError(`${factory}: reconcile needs since (e.g. '48h'): the window of each run`);
  }
  for (const name of ['onReport', 'onError'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw new ConfigError(`${factory}: reconcile's ${name} must be a function`);
    }
  }
  return {
    everyMs,
    since: options.since,
    kinds: options.kinds,
    onReport: options.onReport,
    onError: options.onError,
  };
}

/** How one run ended: its report, or what it threw. */
export type ReconcileRunResult = RunResult<{ report: ReconcileReport }>;

/**
 * One run of the reconciler over the schedule's window: the report handed to `onReport`, a
 * failure to `onError` (or logged). Never rejects; resolves to how the run ended.
 */
export async function runReconcile(
  reconciler: ScheduledReconciler,
  schedule: ReconcileSchedule,
  signal: AbortSignal,
  log: { logger: Logger | undefined; queue: string },
): Promise<ReconcileRunResult> {
  let report: ReconcileReport;
  try {
    report = await reconciler.run({
      since: schedule.since,
      ...(schedule.kinds === undefined ? {} : { kinds: schedule.kinds }),
      signal,
    });
  } catch (error) {
    // Stopped by close() (or, on pg-boss, after expireInMs): what it recovered stays recovered.
    if (signal.aborted) {
      log.logger?.warn(
        { err: messageOf(signal.reason), queue: log.queue },
        'reconcile run stopped',
      );
    } else if (schedule.onError !== undefined) {
      call(schedule.onError, error, log);
    } else {
      (log.logger ?? console).error(
        { err: messageOf(error), queue: log.queue },
        'reconcile run failed; the next runs at the next tick',
      );
    }
    return { ok: false, error };
  }
  if (schedule.onReport !== undefined) call(schedule.onReport, report, log);
  return { ok: true, report };
}

/** A callback of the user's, whose own failure is logged rather than thrown. */
function call<T>(
  callback: (value: T) => void,
  value: T,
  log: { logger: Logger | undefined; queue: string },
): void {
  try {
    callback(value);
  } catch (error) {
    (log.logger ?? console).error(
      { err: messageOf(error), queue: log.queue },
      'reconcile callback threw',
    );
  }
}

/**
 * The name of the queue an inbox of `queueName` runs its reconciler on, beside its deliveries'
 * (`<queueName>.reconcile`): the same for every inbox, so `schoolhooks inbox` and the docs name one.
 */
export function reconcileQueueName(queueName: string): string {
  return taskQueueName(queueName, 'reconcile');
}

/**
 * What a run's job keeps as its result (BullMQ's return value, pg-boss's output): the counts,
 * never an error's cause or an item. A run of many schools adds how many it read (`tenants`) and
 * how many of them ended early (`tenantsFailed`); its other counts are already its totals.
 */
export function reportSummary(report: ReconcileReport): Record<string, unknown> {
  const summary: Record<string, unknown> = {
    window: report.window,
    checked: report.checked,
    handled: report.handled,
    recovered: report.recovered,
    missing: report.missing.length,
    failed: report.failed.length,
    inFlight: report.inFlight.length,
    unrecorded: report.unrecorded.length,
    complete: report.complete,
  };
  const { tenants, tenantErrors } = report as Partial<TenantsReconcileReport>;
  if (tenants !== undefined && tenantErrors !== undefined) {
    summary['tenants'] = Object.keys(tenants).length;
    summary['tenantsFailed'] = tenantErrors.length;
  }
  return summary;
}

/**
 * The reconciler on its schedule as a task an inbox runs (src/inbox/scheduled-task.ts): each run
 * hands its report to `onReport` and its job keeps {@link reportSummary}.
 */
export function reconcileTask(
  reconciler: ScheduledReconciler,
  schedule: ReconcileSchedule,
  log: { logger: Logger | undefined; queue: string },
): ScheduledTask {
  return {
    kind: 'reconcile',
    everyMs: schedule.everyMs,
    run: async (signal): Promise<TaskRunResult> => {
      const outcome = await runReconcile(reconciler, schedule, signal, log);
      return outcome.ok ? { ok: true, summary: reportSummary(outcome.report) } : outcome;
    },
  };
}
