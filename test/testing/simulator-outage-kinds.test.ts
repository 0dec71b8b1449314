// The kinds of outage (`takeDown(endpoint, { as })`) against a real receiver on a real node:http
// server that counts every request it gets, on the virtual clock: the platform signing with a
// wrong secret (answered 401), a gateway answering an error status (the server never reached),
// and answers that come after the platform stopped waiting. Whatever the kind, a failed attempt
// is retried 11, 33, 77 and 165 minutes after the failed attempt before it, 5 attempts in all,
// then never again; a timeout counts as failed once the platform's 15 s wait is over
// (docs/platform.md#retries and #the-request).
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/index.js';
import type { OutageOptions, PlatformSimulator } from '../../src/testing/index.js';
import { configRefusal } from '../helpers/failure-of.js';
import { useCountedEndpoint } from './counted-endpoint.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const SECRET = 'kinds-secret-kinds-secret-kinds-secret-kinds-secret-kinds-secre';
/** When each of the 5 attempts goes out, in minutes after the first, when each fails at once. */
const SCHEDULE = [0, 11, 44, 121, 286];

/**
 * The minutes after `start` of every attempt the platform made (no test delivery), with the
 * status it saw and the receiver's outcome.
 */
function attempts(
  simulator: PlatformSimulator,
  start: number,
): [number, number | null, string | undefined][] {
  return simulator.log
    .filter((entry) => !entry.test)
    .map((entry) => [(entry.at - start) / MINUTE, entry.status, entry.outcome]);
}

describe('kinds of outage (takeDown with `as`)', () => {
  /** A receiver on a real port, the simulator's clock, and a count of what reached the server. */
  const setUp = useCountedEndpoint(SECRET, { logger: false });

  describe("as: 'wrong_secret' (a secretKey rotation gone wrong)", () => {
    it('reaches the receiver, which answers 401; the first retry after the window is processed', async () => {
      const { simulator, seen, processed, start } = await setUp();
      simulator.takeDown('shop', { forMs: 2 * HOUR, as: 'wrong_secret' });
      const sent = simulator.send('PaymentCompleted');
      await simulator.run();
      expect(attempts(simulator, start)).toEqual([
        [0, 401, 'invalid_signature'],
        [11, 401, 'invalid_signature'],
        [44, 401, 'invalid_signature'],
        [121, 200, 'processed'],
      ]);
      expect(simulator.log.map((entry) => entry.outage)).toEqual([
        'wrong_secret',
        'wrong_secret',
        'wrong_secret',
        undefined,
      ]);
      // Every attempt reached the server: the platform did send them, signed wrong.
      expect(seen.requests).toBe(4);
      expect(processed).toEqual([sent.idempotencyKey]);
      expect(simulator.deliveries[0]).toMatchObject({ state: 'delivered', attempts: 4 });
    });

    it('for longer than the retry span: 5 attempts, all 401, then never again', async () => {
      const { clock, simulator, seen, processed, start } = await setUp();
      simulator.takeDown('shop', { forMs: 6 * HOUR, as: 'wrong_secret' });
      simulator.send('PaymentCompleted');
      await simulator.run();
      await clock.advance(3 * DAY);
      expect(attempts(simulator, start)).toEqual(
        SCHEDULE.map((minute) => [minute, 401, 'invalid_signature']),
      );
      expect(seen.requests).toBe(5);
      expect(processed).toEqual([]);
      expect(simulator.deliveries[0]).toMatchObject({ state: 'failed', attempts: 5 });
    });

    it('signs with the secret given (the one before a rotation, say), which the receiver refuses', async () => {
      const { simulator, processed } = await setUp();
      const old = 'old-secret-old-secret-old-secret-old-secret-old-secret-old-secre';
      simulator.takeDown('shop', { forMs: HOUR, as: 'wrong_secret', secret: old });
      const test = await simulator.sendTestDelivery('shop');
      // The receiver knows SECRET only: the old secret is refused.
      expect(test).toMatchObject({ status: 401, ok: false, outage: 'wrong_secret', test: true });
      expect(processed).toEqual([]);
    });
  });

  describe("as: 'status' (a gateway answering an error)", () => {
    it('answers 502 by default and reaches nothing; the receiver gets the first retry after it', async () => {
      const { simulator, seen, processed, start } = await setUp();
      simulator.takeDown('shop', { forMs: HOUR, as: 'status' });
      const sent = simulator.send('PaymentCompleted');
      await simulator.run();
      expect(attempts(simulator, start)).toEqual([
        [0, 502, undefined],
        [11, 502, undefined],
        [44, 502, undefined],
        [121, 200, 'processed'],
      ]);
      expect(seen.requests).toBe(1);
      expect(processed).toEqual([sent.idempotencyKey]);
    });

    it('answers the status given, 5 times over the retry span, then never again', async () => {
      const { clock, simulator, seen, start } = await setUp();
      simulator.takeDown('shop', { forMs: 5 * HOUR, as: 'status', status: 500 });
      const test = await simulator.sendTestDelivery('shop');
      expect(test).toMatchObject({ status: 500, ok: false, outage: 'status', test: true });
      simulator.send('PaymentCompleted');
      await simulator.run();
      await clock.advance(3 * DAY);
      expect(attempts(simulator, start)).toEqual(
        SCHEDULE.map((minute) => [minute, 500, undefined]),
      );
      expect(seen.requests).toBe(0);
      expect(simulator.deliveries[0]).toMatchObject({ state: 'failed', attempts: 5 });
    });
  });

  describe("as: 'timeout' (an answer after the platform stopped waiting)", () => {
    it('reaches the receiver, which processes the event once; counted failed after 15 s', async () => {
      const { simulator, seen, processed, start } = await setUp();
      simulator.takeDown('shop', { forMs: 30 * MINUTE, as: 'timeout' });
      const sent = simulator.send('PaymentCompleted');
      await simulator.run();
      // Each retry 11 (then 33) minutes after the attempt before it failed: at the end of the
      // platform's 15 s wait.
      expect(attempts(simulator, start)).toEqual([
        [0, null, 'processed'],
        [11.25, null, 'duplicate'],
        [44.5, 200, 'duplicate'],
      ]);
      expect(simulator.log[0]).toMatchObject({ ok: false, outage: 'timeout' });
      expect(simulator.log[0]!.error).toMatch(/^no answer within 15000 ms/);
      expect(seen.requests).toBe(3);
      // The work was done by the first attempt; the platform's retries were duplicates.
      expect(processed).toEqual([sent.idempotencyKey]);
      expect(simulator.deliveries[0]).toMatchObject({ state: 'delivered', attempts: 3 });
    });

    it('for longer than the retry span: 5 attempts, every one too late, then never again', async () => {
      const { clock, simulator, seen, processed, start } = await setUp();
      simulator.takeDown('shop', { forMs: 6 * HOUR, as: 'timeout' });
      simulator.send('PaymentCompleted');
      await simulator.run();
      await clock.advance(3 * DAY);
      // 11, 33, 77 and 165 minutes, each after the 15 s the attempt before it was waited for.
      expect(attempts(simulator, start).map(([minute, status]) => [minute, status])).toEqual([
        [0, null],
        [11.25, null],
        [44.5, null],
        [121.75, null],
        [287, null],
      ]);
      expect(seen.requests).toBe(5);
      expect(processed).toHaveLength(1);
      expect(simulator.deliveries[0]).toMatchObject({ state: 'failed', attempts: 5 });
    });
  });

  it('keeps the first outage added where two cover an instant, and bringUp ends every kind', async () => {
    const { clock, simulator, start } = await setUp();
    simulator.takeDown('shop', { forMs: HOUR, as: 'status', status: 503 });
    simulator.takeDown('shop', { forMs: 2 * HOUR, as: 'wrong_secret' });
    simulator.send('PaymentCompleted');
    await clock.advance(20 * MINUTE);
    simulator.bringUp('shop');
    await simulator.run();
    expect(attempts(simulator, start)).toEqual([
      [0, 503, undefined],
      [11, 503, undefined],
      [44, 200, 'processed'],
    ]);
  });

  it('refuses options that do not check, with a ConfigError that shows no secret', async () => {
    const { simulator } = await setUp();
    const wrong: unknown[] = [
      { forMs: HOUR, as: 'slow' },
      { forMs: HOUR, as: 'status', status: 200 },
      { forMs: HOUR, as: 'status', status: 202 },
      { forMs: HOUR, as: 'status', status: 600 },
      { forMs: HOUR, as: 'status', status: 502.5 },
      { forMs: HOUR, as: 'status', status: '502' },
      { forMs: HOUR, as: 'timeout', status: 502 },
      { forMs: HOUR, as: 'wrong_secret', secret: '' },
      { forMs: HOUR, as: 'wrong_secret', secret: SECRET },
      { forMs: HOUR, as: 'status', secret: 'x' },
      { forMs: 0, as: 'timeout' },
    ];
    for (const options of wrong) {
      const error = configRefusal(() => simulator.takeDown('shop', options as OutageOptions));
      expect(error).toBeInstanceOf(ConfigError);
      expect(error).toMatchObject({ code: 'config' });
      expect((error as Error).message).not.toContain(SECRET);
    }
    // Nothing refused was kept: the endpoint is up.
    simulator.send('PaymentCompleted');
    await simulator.run();
    expect(simulator.log.map((entry) => entry.status)).toEqual([200]);
  });
});
