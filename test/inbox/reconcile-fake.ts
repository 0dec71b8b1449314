/**
 * A fake reconciler for the inboxes' `reconcile` tests: it counts its runs, how many ran at
 * once (across every inbox it is given to), and can throw or hold a run.
 */

import type { ReconcileReport, ReconcileRunOptions } from '../../src/reconcile/types.js';
import type { Logger } from '../../src/index.js';

/** What a fake reconciler saw. */
export interface FakeReconciler {
  run(options: ReconcileRunOptions): Promise<ReconcileReport>;
  /** Runs started, in order, with their options. */
  readonly calls: ReconcileRunOptions[];
  /** The most runs that were running at once. */
  readonly maxAtOnce: () => number;
  /** Runs running now. */
  readonly running: () => number;
}

/** A report with `n` checked invoices. */
export function reportOf(n: number): ReconcileReport {
  return {
    window: { from: '2026-11-24T00:00:00.000Z', to: '2026-11-26T00:00:00.000Z' },
    checked: { invoice: n, access: 0, certificate: 0, user: 0 },
    handled: n,
    recovered: 0,
    missing: [],
    failed: [],
    inFlight: [],
    unrecorded: [],
    complete: true,
  };
}

/**
 * A reconciler whose run takes `holdMs` (ending early when its signal aborts, with the
 * signal's reason) and throws when `fails(callNumber)` says so.
 */
export function fakeReconciler({
  holdMs = 0,
  fails = () => false,
}: { holdMs?: number; fails?: (call: number) => boolean } = {}): FakeReconciler {
  const calls: ReconcileRunOptions[] = [];
  let running = 0;
  let maxAtOnce = 0;
  return {
    calls,
    maxAtOnce: () => maxAtOnce,
    running: () => running,
    async run(options) {
      calls.push(options);
      const call = calls.length;
      running++;
      maxAtOnce = Math.max(maxAtOnce, running);
      try {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, holdMs);
          options.signal?.addEventListener('abort', () => {
            clearTimeout(timer);
            reject(options.signal!.reason as Error);
          });
        });
        if (fails(call)) throw new Error(`run ${call} failed`);
        return reportOf(call);
      } finally {
        running--;
      }
    },
  };
}

/** A logger that keeps what it is told at each level. */
export function recordingLogger(): Logger & {
  lines: { level: string; obj: Record<string, unknown>; msg?: string | undefined }[];
} {
  const lines: { level: string; obj: Record<string, unknown>; msg?: string | undefined }[] = [];
  const at = (level: string) => (obj: Record<string, unknown>, msg?: string) =>
    void lines.push({ level, obj, msg });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
