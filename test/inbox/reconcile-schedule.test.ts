/**
 * The rules every inbox's `reconcile` shares (src/inbox/reconcile-schedule.ts), one at a time:
 * which `every` it takes, what it refuses and how it names it, the tick at each whole multiple
 * of `every`, one run handing its report or its failure to the right place, and the ticker's
 * close. The memory, BullMQ and pg-boss inboxes run them over time in test/inbox/reconcile-contract.ts.
 */

import { describe, expect, it, vi } from 'vitest';
import {
  checkReconcileOptions,
  durationMs,
  ReconcileTicker,
  runReconcile,
  untilNextTick,
} from '../../src/inbox/reconcile-schedule.js';
import type { ReconcileReport } from '../../src/reconcile/index.js';
import { configRefusal as refusal } from '../helpers/failure-of.js';

const reconciler = { run: () => Promise.resolve(report()) };
const DAY = 86_400_000;

function report(): ReconcileReport {
  return {
    window: { since: '2026-11-24T00:00:00.000Z', until: '2026-11-26T00:00:00.000Z' },
    checked: 3,
    handled: 2,
    recovered: 1,
    missing: [],
    failed: [],
  } as unknown as ReconcileReport;
}

/** A logger that keeps its lines. */
function lines() {
  const kept: { level: string; message: string }[] = [];
  const at =
    (level: string) =>
    (_fields: object, message: string): void =>
      void kept.push({ level, message });
  return {
    kept,
    logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
  };
}

describe('durationMs', () => {
  it('takes whole positive ms and durations, trimmed, and nothing else', () => {
    expect(durationMs(1000)).toBe(1000);
    expect(durationMs(' 90m ')).toBe(5_400_000);
    expect(durationMs('1h')).toBe(3_600_000);
    for (const value of [0, -1, 1.5, Number.NaN, '0s', '0h', '1.5h', 'hourly', '', ' ']) {
      expect(durationMs(value)).toBeUndefined();
    }
  });
});

describe('checkReconcileOptions', () => {
  it('gives back the schedule of options that can work, up to 24 days apart', () => {
    const onReport = () => {};
    expect(
      checkReconcileOptions('memoryInbox', reconciler, {
        every: '24d',
        since: '48h',
        kinds: ['invoice'],
        onReport,
      }),
    ).toEqual({
      everyMs: 24 * DAY,
      since: '48h',
      kinds: ['invoice'],
      onReport,
      onError: undefined,
    });
  });

  it('refuses each option that cannot work, naming the inbox and the option', () => {
    const check =
      (options: object, given: unknown = reconciler) =>
      () =>
        checkReconcileOptions(
          'bullmqInbox',
          given as typeof reconciler,
          {
            every: '1h',
            since: '48h',
            ...options,
          } as Parameters<typeof checkReconcileOptions>[2],
        );
    expect(refusal(check({}, null)).message).toBe(
      'bullmqInbox: reconcile needs a reconciler (createReconciler)',
    );
    expect(refusal(check({}, { run: 'no' })).message).toMatch(/needs a reconciler/);
    for (const every of [24 * DAY + 1, '25d', 0, '1.5h']) {
      expect(refusal(check({ every })).message).toBe(
        "bullmqInbox: reconcile's every must be a positive whole number of ms, or a duration such as '1h', '30m' or '90s', of at most 24 days",
      );
    }
    expect(refusal(check({ since: undefined })).message).toBe(
      "bullmqInbox: reconcile needs since (e.g. '48h'): the window of each run",
    );
    expect(refusal(check({ onReport: 'log' })).message).toBe(
      "bullmqInbox: reconcile's onReport must be a function",
    );
    expect(refusal(check({ onError: {} })).message).toBe(
      "bullmqInbox: reconcile's onError must be a function",
    );
  });
});

describe('untilNextTick', () => {
  it('waits until the next whole multiple of every since the epoch', () => {
    expect(untilNextTick(3_600_000 * 5 + 1, 3_600_000)).toBe(3_599_999);
    expect(untilNextTick(3_600_000 * 5, 3_600_000)).toBe(3_600_000);
    expect(untilNextTick(1_250, 1_000)).toBe(750);
  });
});

describe('runReconcile', () => {
  const schedule = {
    everyMs: 1000,
    since: '48h',
    kinds: undefined,
    onReport: undefined,
    onError: undefined,
  };
  const log = (logger?: ReturnType<typeof lines>['logger']) => ({ logger, queue: 'q' });

  it('runs over the window and kinds of the schedule, handing its report to onReport', async () => {
    const seen: unknown[] = [];
    const run = vi.fn((_options: object) => Promise.resolve(report()));
    const outcome = await runReconcile(
      { run },
      { ...schedule, kinds: ['access'], onReport: (r) => void seen.push(r) },
      new AbortController().signal,
      log(),
    );
    expect(outcome).toEqual({ ok: true, report: report() });
    expect(seen).toEqual([report()]);
    expect(run).toHaveBeenCalledWith(expect.objectContaining({ since: '48h', kinds: ['access'] }));
    const quiet = lines();
    await runReconcile({ run }, schedule, new AbortController().signal, log(quiet.logger));
    expect(Object.keys(run.mock.calls[1]![0])).not.toContain('kinds');
    // Without onReport, a run that succeeded says nothing.
    expect(quiet.kept).toEqual([]);
  });

  it('hands a failure to onError, or logs it, and a stopped run is only a warning', async () => {
    const failing = { run: () => Promise.reject(new Error('API down')) };
    const errors: unknown[] = [];
    const withOnError = await runReconcile(
      failing,
      { ...schedule, onError: (error) => void errors.push(error) },
      new AbortController().signal,
      log(),
    );
    expect(withOnError.ok).toBe(false);
    expect((errors[0] as Error).message).toBe('API down');

    const logged = lines();
    await runReconcile(failing, schedule, new AbortController().signal, log(logged.logger));
    expect(logged.kept).toEqual([
      { level: 'error', message: 'reconcile run failed; the next runs at the next tick' },
    ]);

    const stopped = lines();
    const controller = new AbortController();
    controller.abort(new Error('closed'));
    await runReconcile(failing, schedule, controller.signal, log(stopped.logger));
    expect(stopped.kept).toEqual([{ level: 'warn', message: 'reconcile run stopped' }]);
  });

  it('logs a callback that throws instead of throwing it', async () => {
    const logged = lines();
    const outcome = await runReconcile(
      reconciler,
      {
        ...schedule,
        onReport: () => {
          throw new Error('dashboard down');
        },
      },
      new AbortController().signal,
      log(logged.logger),
    );
    expect(outcome.ok).toBe(true);
    expect(logged.kept).toEqual([{ level: 'error', message: 'reconcile callback threw' }]);
  });
});

describe('ReconcileTicker', () => {
  it('ticks at once, skips a tick while one runs, and stops ticking once closed', async () => {
    vi.useFakeTimers();
    try {
      vi.setSystemTime(10_000);
      let release: () => void = () => {};
      const signals: AbortSignal[] = [];
      const tick = vi.fn((signal: AbortSignal) => {
        signals.push(signal);
        return new Promise<void>((resolve) => (release = resolve));
      });
      const forgotten = vi.fn();
      const ticker = new ReconcileTicker(1_000, tick, forgotten);
      expect(tick).toHaveBeenCalledTimes(1);
      await vi.advanceTimersByTimeAsync(2_500);
      expect(tick).toHaveBeenCalledTimes(1);
      release();
      await vi.advanceTimersByTimeAsync(1_000);
      expect(tick).toHaveBeenCalledTimes(2);
      const closing = ticker.close();
      expect(signals[1]!.aborted).toBe(true);
      expect((signals[1]!.reason as Error).message).toBe('the reconcile worker was closed');
      release();
      await closing;
      expect(forgotten).toHaveBeenCalledTimes(1);
      await vi.advanceTimersByTimeAsync(5_000);
      expect(tick).toHaveBeenCalledTimes(2);
    } finally {
      vi.useRealTimers();
    }
  });
});
