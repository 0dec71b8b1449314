/**
 * What every inbox's `watch` does, on the inbox a suite makes: checks the watchdog at once and
 * then every `every`; hands `onAlert` the health of each check that is not `ok` (a delivery whose
 * handler failed is `at_risk` within a tick, and again at each tick while it is), never for
 * `ok`; one check a tick across two inboxes on one queue (two processes); a check that throws
 * goes to `onError` or the log; closing the inbox stops it; a second watch is refused.
 */

import { describe, expect, it, vi } from 'vitest';
import {
  ConfigError,
  createReceiver,
  memoryStore,
  type Logger,
  type ManagedInbox,
} from '../../src/index.js';
import { createWatchdog, type Health } from '../../src/watchdog/index.js';
import { createTestDelivery, SECRET } from '../helpers/deliveries.js';
import { recordingLogger, sleep } from './reconcile-fake.js';

/** How a suite makes its inboxes. */
export interface WatchContractOptions {
  /** `count` inboxes on one queue (for count > 1: as two processes would), closed after the test. */
  inboxes(count: number, logger?: Logger): ManagedInbox[];
  /** Whether two inboxes share a queue (false: the memory inbox, one process by nature). */
  processes: boolean;
  /** Whether the inbox logs to the logger given (false: the memory inbox logs to console). */
  logs: boolean;
}

const waiting = { timeout: 5000, interval: 20 };
const MINUTE = 60_000;
/** The platform's retries come 11, 33, 77 and 165 minutes after the first attempt (docs/platform.md). */
const RETRY_SPAN_MS = (11 + 33 + 77 + 165) * MINUTE;

/**
 * A receiver on a memoryStore whose handler fails while `failing`, its watchdog, and a count of
 * the checks made.
 */
export function watchedReceiver() {
  const receiver = createReceiver({ secret: SECRET, store: memoryStore(), logger: false });
  const state = { failing: false, checks: 0 };
  receiver.on('UserSignedIn', () => {
    if (state.failing) throw new Error('crm down');
  });
  receiver.onError(() => {});
  const watchdog = createWatchdog({ receiver });
  return {
    state,
    watchdog: {
      check: () => {
        state.checks++;
        return watchdog.check();
      },
    },
    /** One delivery, answered: its status and its key. */
    async deliver() {
      const delivery = createTestDelivery();
      const answer = await receiver.handle({ method: 'POST', ...delivery });
      return { status: answer.status, idempotencyKey: delivery.idempotencyKey };
    },
  };
}

export function describeWatchContract(name: string, options: WatchContractOptions): void {
  const { inboxes } = options;

  describe(`${name}.watch`, () => {
    it('hands onAlert an at_risk health within a tick of a delivery answered 500, and again each tick', async () => {
      const [inbox] = inboxes(1);
      const watched = watchedReceiver();
      watched.state.failing = true;
      const before = Date.now();
      const { status, idempotencyKey } = await watched.deliver();
      expect(status).toBe(500);
      const alerts: Health[] = [];
      const worker = inbox!.watch(watched.watchdog, {
        every: 200,
        onAlert: (h) => void alerts.push(h),
      });
      await vi.waitFor(() => expect(alerts.length).toBeGreaterThanOrEqual(2), waiting);
      await worker.close();
      const [health] = alerts;
      expect(health).toMatchObject({ status: 'at_risk' });
      expect(health!.atRisk).toHaveLength(1);
      const [delivery] = health!.atRisk;
      expect(delivery).toMatchObject({ idempotencyKey, event: 'UserSignedIn', attemptsSeen: 1 });
      const first = Date.parse(delivery!.firstAttemptAt);
      expect(first).toBeGreaterThanOrEqual(before - 1000);
      // Lost unless a retry succeeds by the platform's last attempt.
      expect(Date.parse(delivery!.givesUpAt) - first).toBe(RETRY_SPAN_MS);
      // A pager's repeat: the same at_risk at the next tick.
      expect(alerts[1]!.status).toBe('at_risk');
    });

    it('never calls onAlert while the receiver is ok', async () => {
      const [inbox] = inboxes(1);
      const watched = watchedReceiver();
      expect((await watched.deliver()).status).toBe(200);
      const onAlert = vi.fn();
      const worker = inbox!.watch(watched.watchdog, { every: 150, onAlert });
      await vi.waitFor(() => expect(watched.state.checks).toBeGreaterThanOrEqual(3), waiting);
      await worker.close();
      expect(onAlert).not.toHaveBeenCalled();
    });

    if (options.processes) {
      it('two processes on one queue check once a tick between them', async () => {
        const watched = watchedReceiver();
        const [a, b] = inboxes(2);
        a!.watch(watched.watchdog, { every: 200, onAlert: () => {} });
        b!.watch(watched.watchdog, { every: 200, onAlert: () => {} });
        await vi.waitFor(() => expect(watched.state.checks).toBeGreaterThanOrEqual(1), waiting);
        const before = watched.state.checks;
        await sleep(1000);
        // 5 ticks in 1 s: each process checking every tick would make about twice as many.
        const more = watched.state.checks - before;
        expect(more).toBeGreaterThanOrEqual(3);
        expect(more).toBeLessThanOrEqual(7);
      });
    }

    it('hands a check that throws, and an onAlert that fails, to onError; the ticks go on', async () => {
      const logger = recordingLogger();
      const [inbox] = inboxes(1, logger);
      const errors: unknown[] = [];
      let calls = 0;
      const watchdog = {
        check: async (): Promise<Health> => {
          calls++;
          if (calls === 1) throw new Error('store down');
          return { status: 'failing', atRisk: [] };
        },
      };
      inbox!.watch(watchdog, {
        every: 150,
        onAlert: () => Promise.reject(new Error('pager down')),
        onError: (error) => errors.push(error),
      });
      await vi.waitFor(() => expect(errors.length).toBeGreaterThanOrEqual(2), waiting);
      expect((errors[0] as Error).message).toBe('store down');
      expect((errors[1] as Error).message).toBe('pager down');
      expect(logger.lines.filter((line) => line.level === 'error')).toEqual([]);
    });

    if (options.logs) {
      it('without onError, a check that throws is logged by the inbox, and the next tick checks again', async () => {
        const logger = recordingLogger();
        const [inbox] = inboxes(1, logger);
        let calls = 0;
        const watchdog = {
          check: async (): Promise<Health> => {
            if (++calls === 1) throw new Error('store down');
            return { status: 'ok', atRisk: [] };
          },
        };
        inbox!.watch(watchdog, { every: 150, onAlert: () => {} });
        await vi.waitFor(() => expect(calls).toBeGreaterThanOrEqual(2), waiting);
        expect(logger.lines.filter((line) => line.level === 'error')).toEqual([
          {
            level: 'error',
            obj: { err: 'store down', queue: expect.stringMatching(/\.watch$/) },
            msg: 'watchdog check failed; the next check runs at the next tick',
          },
        ]);
      });
    }

    it('closing the inbox stops its watch, and a closed inbox takes none', async () => {
      const [inbox] = inboxes(1);
      const watched = watchedReceiver();
      inbox!.watch(watched.watchdog, { every: 100, onAlert: () => {} });
      await vi.waitFor(() => expect(watched.state.checks).toBeGreaterThanOrEqual(1), waiting);
      await inbox!.close();
      const checks = watched.state.checks;
      await sleep(400);
      expect(watched.state.checks).toBe(checks);
      expect(() => inbox!.watch(watched.watchdog, { every: 100, onAlert: () => {} })).toThrow(
        `${name}: the inbox is closed`,
      );
    });

    it('refuses an every it cannot keep, a missing onAlert or watchdog, and a second watchdog', async () => {
      const [inbox] = inboxes(1);
      const { watchdog } = watchedReceiver();
      const onAlert = () => {};
      for (const every of [0, -5, 1.5, '1.5h', '5 m', 'hourly', '25d', Number.NaN]) {
        const refused = () => inbox!.watch(watchdog, { every, onAlert });
        expect(refused).toThrow(ConfigError);
        expect(refused).toThrow(new RegExp(`^${name}: watch's every`));
      }
      type Options = Parameters<ManagedInbox['watch']>[1];
      expect(() => inbox!.watch(watchdog, { every: '5m' } as Options)).toThrow(ConfigError);
      expect(() => inbox!.watch(watchdog, { every: '5m' } as Options)).toThrow(/onAlert/);
      const notOne = {} as typeof watchdog;
      expect(() => inbox!.watch(notOne, { every: '5m', onAlert })).toThrow(
        /watch needs a watchdog/,
      );
      const worker = inbox!.watch(watchdog, { every: '5m', onAlert });
      const second = () => inbox!.watch(watchdog, { every: '5m', onAlert });
      expect(second).toThrow(ConfigError);
      expect(second).toThrow(`${name}: watch runs one watchdog per inbox; close it first`);
      await worker.close();
      // Once that one is closed, the inbox takes a watchdog again.
      await inbox!.watch(watchdog, { every: '5m', onAlert }).close();
    });
  });
}
