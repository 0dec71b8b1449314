/**
 * What every inbox's `reconcile` does, on the inbox a suite makes: runs at once and then every
 * `every`, one at a time (across two inboxes on one queue: two processes), stops on close(),
 * logs a run that throws and runs again at the next tick.
 */

import { describe, expect, it, vi } from 'vitest';
import { ConfigError, type Logger, type ManagedInbox } from '../../src/index.js';
import { fakeReconciler, recordingLogger, reportOf, sleep } from './reconcile-fake.js';

/** How a suite makes its inboxes. */
export interface ReconcileContractOptions {
  /** `count` inboxes on one queue (for count > 1: as two processes would), closed after the test. */
  inboxes(count: number, logger?: Logger): ManagedInbox[];
  /** Whether two inboxes share a queue (false: the memory inbox, one process by nature). */
  processes: boolean;
  /** Whether the inbox logs to the logger given (false: the memory inbox logs to console). */
  logs: boolean;
}

const waiting = { timeout: 5000, interval: 20 };

export function describeReconcileContract(name: string, options: ReconcileContractOptions): void {
  const { inboxes } = options;

  describe(`${name}.reconcile`, () => {
    it('runs the reconciler at once and then every `every`, with the window and kinds given', async () => {
      const [inbox] = inboxes(1);
      const reconciler = fakeReconciler();
      const reports: unknown[] = [];
      const worker = inbox!.reconcile(reconciler, {
        every: 200,
        since: '48h',
        kinds: ['invoice', 'access'],
        onReport: (report) => reports.push(report),
      });
      await vi.waitFor(() => expect(reconciler.calls.length).toBeGreaterThanOrEqual(3), waiting);
      await worker.close();
      expect(reconciler.calls[0]).toMatchObject({ since: '48h', kinds: ['invoice', 'access'] });
      expect(reconciler.calls[0]!.signal).toBeInstanceOf(AbortSignal);
      expect(reports.slice(0, 2)).toEqual([reportOf(1), reportOf(2)]);
      // Not one of the inbox's deliveries.
      expect(await inbox!.jobs()).toEqual([]);
    });

    if (options.processes) {
      it('two processes on one queue never run it at once, even when a run outlasts `every`', async () => {
        const reconciler = fakeReconciler({ holdMs: 250 });
        const [a, b] = inboxes(2);
        a!.reconcile(reconciler, { every: 100, since: '48h' });
        b!.reconcile(reconciler, { every: 100, since: '48h' });
        await vi.waitFor(() => expect(reconciler.calls.length).toBeGreaterThanOrEqual(4), waiting);
        expect(reconciler.maxAtOnce()).toBe(1);
      });
    }

    if (options.processes) {
      it('two processes on one queue run each tick once between them', async () => {
        const reconciler = fakeReconciler();
        const [a, b] = inboxes(2);
        a!.reconcile(reconciler, { every: 200, since: '48h' });
        b!.reconcile(reconciler, { every: 200, since: '48h' });
        await vi.waitFor(() => expect(reconciler.calls.length).toBeGreaterThanOrEqual(1), waiting);
        const before = reconciler.calls.length;
        await sleep(1000);
        // 5 ticks in 1 s: each process running every tick would make about twice as many.
        const more = reconciler.calls.length - before;
        expect(more).toBeGreaterThanOrEqual(3);
        expect(more).toBeLessThanOrEqual(7);
      });
    }

    it('a run that outlasts `every` is not joined by the next tick', async () => {
      const reconciler = fakeReconciler({ holdMs: 250 });
      const [inbox] = inboxes(1);
      inbox!.reconcile(reconciler, { every: 100, since: '48h' });
      await vi.waitFor(() => expect(reconciler.calls.length).toBeGreaterThanOrEqual(3), waiting);
      expect(reconciler.maxAtOnce()).toBe(1);
    });

    it('close() stops the runs: a run in progress is aborted, and no run starts after', async () => {
      const [inbox] = inboxes(1);
      const reconciler = fakeReconciler({ holdMs: 60_000 });
      const worker = inbox!.reconcile(reconciler, { every: 100, since: '48h' });
      await vi.waitFor(() => expect(reconciler.running()).toBe(1), waiting);
      const started = Date.now();
      await worker.close();
      expect(Date.now() - started).toBeLessThan(2000);
      expect(reconciler.calls[0]!.signal!.aborted).toBe(true);
      const calls = reconciler.calls.length;
      await sleep(400);
      expect(reconciler.calls.length).toBe(calls);
    });

    it('closing the inbox stops its reconciler', async () => {
      const [inbox] = inboxes(1);
      const reconciler = fakeReconciler({ holdMs: 60_000 });
      inbox!.reconcile(reconciler, { every: 100, since: '48h' });
      await vi.waitFor(() => expect(reconciler.running()).toBe(1), waiting);
      await inbox!.close();
      expect(reconciler.running()).toBe(0);
      expect(() => inbox!.reconcile(reconciler, { every: 100, since: '48h' })).toThrow(ConfigError);
    });

    if (options.logs) {
      it('a run that throws is logged, and the next tick runs again', async () => {
        const logger = recordingLogger();
        const [inbox] = inboxes(1, logger);
        const reconciler = fakeReconciler({ fails: (call) => call === 1 });
        const reports: unknown[] = [];
        inbox!.reconcile(reconciler, {
          every: 150,
          since: '48h',
          onReport: (report) => reports.push(report),
        });
        await vi.waitFor(() => expect(reports.length).toBeGreaterThanOrEqual(1), waiting);
        expect(reports[0]).toEqual(reportOf(2));
        expect(logger.lines.filter((line) => line.level === 'error')).toEqual([
          {
            level: 'error',
            obj: { err: 'run 1 failed', queue: expect.stringMatching(/\.reconcile$/) },
            msg: 'reconcile run failed; the next runs at the next tick',
          },
        ]);
      });
    }

    it('onError gets each failed run instead of the logger, and the ticks go on', async () => {
      const logger = recordingLogger();
      const [inbox] = inboxes(1, logger);
      const errors: unknown[] = [];
      const reconciler = fakeReconciler({ fails: () => true });
      inbox!.reconcile(reconciler, { every: 150, since: '48h', onError: (e) => errors.push(e) });
      await vi.waitFor(() => expect(errors.length).toBeGreaterThanOrEqual(2), waiting);
      expect((errors[0] as Error).message).toBe('run 1 failed');
      expect(logger.lines.filter((line) => line.level === 'error')).toEqual([]);
    });

    it('refuses an every it cannot keep, a missing since or reconciler, and a second reconciler', async () => {
      const [inbox] = inboxes(1);
      const reconciler = fakeReconciler();
      for (const every of [0, -5, 1.5, '1.5h', '1 h', 'hourly', '25d', Number.NaN]) {
        expect(() => inbox!.reconcile(reconciler, { every, since: '48h' })).toThrow(ConfigError);
        // Each error names the inbox it comes from.
        expect(() => inbox!.reconcile(reconciler, { every, since: '48h' })).toThrow(
          new RegExp(`^${name}: `),
        );
      }
      type Options = Parameters<ManagedInbox['reconcile']>[1];
      expect(() => inbox!.reconcile(reconciler, { every: '1h' } as Options)).toThrow(/since/);
      expect(() =>
        inbox!.reconcile({} as typeof reconciler, { every: '1h', since: '48h' }),
      ).toThrow(ConfigError);
      const worker = inbox!.reconcile(reconciler, { every: '1h', since: '48h' });
      if (options.processes) {
        expect(() => inbox!.reconcile(reconciler, { every: '1h', since: '48h' })).toThrow(
          /one reconciler per inbox/,
        );
      }
      await worker.close();
      // Once that one is closed, the inbox takes a reconciler again.
      await inbox!.reconcile(reconciler, { every: '1h', since: '48h' }).close();
      // A closed inbox takes none, and says which inbox it is.
      await inbox!.close();
      expect(() => inbox!.reconcile(reconciler, { every: '1h', since: '48h' })).toThrow(
        `${name}: the inbox is closed`,
      );
    });
  });
}
