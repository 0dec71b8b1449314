// Outages of the seller's server (`takeDown`, `bringUp`) against a real receiver on a real
// node:http server that counts every request it gets: the platform retries 5 times in all, 11, 33,
// 77 and 165 minutes after each failed attempt (docs/platform.md#retries), and an outage longer
// than that loses the event.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/index.js';
import type { PlatformSimulator, SimulatedEndpoint } from '../../src/testing/index.js';
import { configRefusal } from '../helpers/failure-of.js';
import { useCountedEndpoint } from './counted-endpoint.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const SECRET = 'outage-secret-outage-secret-outage-secret-outage-secret-outage-s';
const DOWN = 'endpoint down (simulated outage)';

/**
 * The minutes after `start` of every attempt the platform made (at the event `key`, if given; no
 * test delivery), with the status it saw.
 */
function attempts(
  simulator: PlatformSimulator,
  start: number,
  key?: string,
): [number, number | null][] {
  return simulator.log
    .filter((entry) => !entry.test && (key === undefined || entry.idempotencyKey === key))
    .map((entry) => [(entry.at - start) / MINUTE, entry.status]);
}

describe('an endpoint that is down (takeDown)', () => {
  /** A receiver on a real port, the simulator's clock, and a count of what reached the server. */
  const setUp = useCountedEndpoint(SECRET);

  it('down for 5 h, longer than the retry span: every event fails after 5 attempts and none reaches the server', async () => {
    const { clock, simulator, seen, processed, start } = await setUp();
    simulator.takeDown('shop', { forMs: 5 * HOUR });
    const sent = [simulator.send('PaymentCompleted'), simulator.send('PaymentCompleted')];
    await simulator.run();

    expect(simulator.deliveries.map(({ state, attempts }) => [state, attempts])).toEqual([
      ['failed', 5],
      ['failed', 5],
    ]);
    // The platform kept to its schedule for each event: 0, 11, 44, 121 and 286 minutes.
    for (const { idempotencyKey } of sent) {
      expect(attempts(simulator, start, idempotencyKey)).toEqual([
        [0, null],
        [11, null],
        [44, null],
        [121, null],
        [286, null],
      ]);
    }
    expect(simulator.log).toHaveLength(10);
    expect(simulator.log.every((entry) => !entry.ok && entry.error === DOWN)).toBe(true);
    expect(seen.requests).toBe(0);
    expect(processed).toEqual([]);

    // Once the window is over the server is reached again, but only by new events.
    await clock.advance(start + 5 * HOUR - clock.now());
    const later = simulator.send('PaymentCompleted');
    await simulator.run();
    expect(seen.requests).toBe(1);
    expect(processed).toEqual([later.idempotencyKey]);
  });

  it('down for 2 h: the event is delivered by the first retry after it, 2h 1m on', async () => {
    const { simulator, seen, processed, start } = await setUp();
    simulator.takeDown('shop', { forMs: 2 * HOUR });
    const sent = simulator.send('PaymentCompleted');
    await simulator.run();

    expect(attempts(simulator, start)).toEqual([
      [0, null],
      [11, null],
      [44, null],
      [121, 200],
    ]);
    expect(simulator.deliveries[0]).toMatchObject({ state: 'delivered', attempts: 4 });
    expect(seen.requests).toBe(1);
    expect(processed).toEqual([sent.idempotencyKey]);
  });

  it('applies no injected fault to an attempt that reached nothing', async () => {
    const { clock, simulator, seen } = await setUp();
    simulator.takeDown('shop', { forMs: HOUR });
    simulator.send('PaymentCompleted', undefined, { fault: 'duplicate' });
    await clock.advance(MINUTE);
    expect(simulator.log).toEqual([
      {
        endpoint: 'shop',
        event: 'PaymentCompleted',
        idempotencyKey: expect.any(String),
        attempt: 1,
        at: clock.now() - MINUTE,
        status: null,
        ok: false,
        error: DOWN,
        outage: 'down',
      },
    ]);
    expect(seen.requests).toBe(0);
  });

  it('ends at from + forMs: an attempt at that instant reaches the server', async () => {
    const { simulator, seen, start } = await setUp();
    simulator.takeDown('shop', { forMs: 11 * MINUTE });
    simulator.send('PaymentCompleted');
    await simulator.run();
    expect(attempts(simulator, start)).toEqual([
      [0, null],
      [11, 200],
    ]);
    expect(seen.requests).toBe(1);
  });

  it('starts at `from`: events before it are delivered, those during it wait for a retry after it', async () => {
    const { clock, simulator, seen, start } = await setUp();
    simulator.takeDown('shop', { from: start + 30 * MINUTE, forMs: HOUR });
    simulator.send('PaymentCompleted');
    await clock.advance(30 * MINUTE);
    expect(seen.requests).toBe(1);

    simulator.send('PaymentCompleted');
    const test = await simulator.sendTestDelivery('shop');
    await simulator.run();
    expect(test).toMatchObject({ status: null, ok: false, error: DOWN, test: true });
    // Down from 30m to 90m: attempts at 30m, 41m and 74m fail, the one at 151m gets through.
    expect(attempts(simulator, start)).toEqual([
      [0, 200],
      [30, null],
      [41, null],
      [74, null],
      [151, 200],
    ]);
    expect(seen.requests).toBe(2);
  });

  it('takes several windows, and bringUp ends the one under way now', async () => {
    const { clock, simulator, seen, start } = await setUp();
    simulator.takeDown('shop', { forMs: 5 * HOUR });
    simulator.takeDown(simulator.endpoints[0] as SimulatedEndpoint, {
      from: start + 6 * HOUR,
      forMs: HOUR,
    });
    simulator.send('PaymentCompleted');
    await clock.advance(20 * MINUTE);
    simulator.bringUp('shop');
    await simulator.run();
    expect(attempts(simulator, start)).toEqual([
      [0, null],
      [11, null],
      [44, 200],
    ]);

    // The later window still happens.
    await clock.advance(start + 6 * HOUR - clock.now());
    simulator.send('PaymentCompleted');
    await clock.advance(MINUTE);
    expect(simulator.log.at(-1)).toMatchObject({ status: null, error: DOWN });
    expect(seen.requests).toBe(1);
  });

  it('refuses a forMs that is not a positive number, a bad from and an unknown endpoint', async () => {
    const { simulator } = await setUp();
    for (const forMs of [0, -HOUR, Number.NaN, Number.POSITIVE_INFINITY, '5h', undefined]) {
      const error = configRefusal(() => simulator.takeDown('shop', { forMs } as { forMs: number }));
      expect(error).toBeInstanceOf(ConfigError);
      expect(error).toMatchObject({
        code: 'config',
        message: 'endpoint shop: forMs must be a positive number of ms',
      });
    }
    expect(() => simulator.takeDown('shop', undefined as unknown as { forMs: number })).toThrow(
      ConfigError,
    );
    const error = configRefusal(() =>
      simulator.takeDown('shop', { forMs: HOUR, from: Number.NaN }),
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({
      message: 'endpoint shop: from must be a virtual time in ms since the epoch',
    });
    expect(() => simulator.takeDown('nope', { forMs: HOUR })).toThrow(ConfigError);
    expect(() => simulator.bringUp('nope')).toThrow(ConfigError);
    // Nothing refused was kept: the endpoint is up.
    simulator.send('PaymentCompleted');
    await simulator.run();
    expect(simulator.log).toEqual([expect.objectContaining({ status: 200, ok: true })]);
  });
});
