import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeListener } from '../../src/adapters/node.js';
import { ConfigError, createReceiver, FIXED_CONTRACT_EVENTS } from '../../src/index.js';
import { failureOf } from '../helpers/failure-of.js';
import {
  createPlatformSimulator,
  createVirtualClock,
  type EndpointHandler,
  type SimulatedRequest,
} from '../../src/testing/index.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const SECRET = 'Zq7vR2kL9mX4pT8wB3nF6hJ1cY5dG0sAeU2iO7lK4jH9gM3bN8vC1xZ6qW5tE0rP';

/** Sign independently of the code under test. */
function hmac(body: string, secret: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/** An endpoint that answers `status` and records every request. */
function answering(status: number, seen: SimulatedRequest[] = []): EndpointHandler {
  return (request) => {
    seen.push(request);
    return { status, body: { ok: status < 300 } };
  };
}

/** Minutes between the endpoint's successive attempts at one event. */
function gapsInMinutes(ats: readonly number[]): number[] {
  return ats.slice(1).map((at, i) => (at - (ats[i] as number)) / MINUTE);
}

describe('the retry schedule', () => {
  it('makes 5 attempts, 11, 33, 77 and 165 minutes after each failed one', async () => {
    const simulator = createPlatformSimulator({
      endpoints: [{ handler: answering(500), secret: SECRET, events: ['PaymentCompleted'] }],
    });
    simulator.send('PaymentCompleted');
    await simulator.run();

    const ats = simulator.log.map((entry) => entry.at);
    expect(simulator.log.map((entry) => entry.attempt)).toEqual([1, 2, 3, 4, 5]);
    expect(gapsInMinutes(ats)).toEqual([11, 33, 77, 165]);
    // The last attempt about 4 h 45 min after the first (docs/platform.md#retries).
    expect(((ats[4] as number) - (ats[0] as number)) / MINUTE).toBe(4 * 60 + 46);
    expect(simulator.deliveries[0]?.state).toBe('failed');
  });

  it('keeps the same body and idempotencyKey on every retry', async () => {
    const seen: SimulatedRequest[] = [];
    const simulator = createPlatformSimulator({
      endpoints: [{ handler: answering(503, seen), secret: SECRET, events: ['UserSignedUp'] }],
    });
    simulator.send('UserSignedUp');
    await simulator.run();

    expect(seen).toHaveLength(5);
    expect(new Set(seen.map((request) => request.body)).size).toBe(1);
    expect(new Set(simulator.log.map((entry) => entry.idempotencyKey)).size).toBe(1);
  });

  it('stops retrying once an attempt succeeds', async () => {
    const statuses = [500, 503, 201];
    const simulator = createPlatformSimulator({
      endpoints: [
        {
          handler: () => ({ status: statuses.shift() ?? 500 }),
          secret: SECRET,
          events: ['CourseCompleted'],
        },
      ],
    });
    simulator.send('CourseCompleted');
    await simulator.run();

    expect(simulator.log.map((entry) => [entry.attempt, entry.status, entry.ok])).toEqual([
      [1, 500, false],
      [2, 503, false],
      [3, 201, true],
    ]);
    expect(simulator.deliveries[0]).toMatchObject({ state: 'delivered', attempts: 3 });
  });
});

describe('fan-out', () => {
  it('sends one body and key to every active subscribed endpoint, each signed with its own secret', async () => {
    const seen: Record<string, SimulatedRequest[]> = { a: [], b: [], c: [], off: [], other: [] };
    const endpoint = (
      id: string,
      options: { active?: boolean; events?: ('UserSignedUp' | 'CourseCompleted')[] } = {},
    ) => ({
      id,
      handler: answering(200, seen[id]),
      events: options.events ?? ['UserSignedUp' as const],
      active: options.active ?? true,
    });
    const simulator = createPlatformSimulator({
      endpoints: [
        endpoint('a'),
        endpoint('b'),
        endpoint('c', { events: ['CourseCompleted', 'UserSignedUp'] }),
        endpoint('off', { active: false }),
        endpoint('other', { events: ['CourseCompleted'] }),
      ],
    });
    const sent = simulator.send('UserSignedUp');
    await simulator.run();

    expect(sent.endpoints).toEqual(['a', 'b', 'c']);
    expect(seen.off).toEqual([]);
    expect(seen.other).toEqual([]);
    const secrets = new Map(simulator.endpoints.map(({ id, secret }) => [id, secret]));
    for (const id of ['a', 'b', 'c']) {
      const [request] = seen[id] ?? [];
      expect(request?.body).toBe(sent.body);
      expect(request?.headers.signature).toBe(hmac(sent.body, secrets.get(id) ?? ''));
      expect(JSON.parse(request?.body ?? '{}')).toMatchObject({
        idempotencyKey: sent.idempotencyKey,
      });
    }
    expect(new Set(secrets.values()).size).toBe(5);
  });
});

describe('success codes', () => {
  it.each([200, 201, 202])('counts %i as delivered', async (status) => {
    const simulator = createPlatformSimulator({
      endpoints: [{ handler: answering(status), events: ['UserAcquainted'] }],
    });
    simulator.send('UserAcquainted');
    await simulator.run();
    expect(simulator.log).toHaveLength(1);
    expect(simulator.deliveries[0]?.state).toBe('delivered');
  });

  it.each([204, 301, 400, 409, 500])('retries %i', async (status) => {
    const simulator = createPlatformSimulator({
      endpoints: [{ handler: answering(status), events: ['UserAcquainted'] }],
    });
    simulator.send('UserAcquainted');
    await simulator.run();
    expect(simulator.log.map((entry) => entry.ok)).toEqual([false, false, false, false, false]);
  });
});

describe('the 15 s response timeout', () => {
  it('counts an answer after 15 s as a failure and retries 11 minutes after the timeout', async () => {
    const clock = createVirtualClock();
    let calls = 0;
    const simulator = createPlatformSimulator({
      clock,
      endpoints: [
        {
          handler: async () => {
            calls++;
            if (calls === 1) await clock.sleep(15_001);
            return { status: 200 };
          },
          events: ['UserSignedUp'],
        },
      ],
    });
    simulator.send('UserSignedUp');
    await simulator.run();

    const [first, second] = simulator.log;
    expect(first).toMatchObject({
      attempt: 1,
      status: null,
      ok: false,
      error: 'no answer within 15000 ms',
    });
    expect(second).toMatchObject({ attempt: 2, status: 200, ok: true });
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBe(15_000 + 11 * MINUTE);
  });

  it('accepts an answer just inside 15 s', async () => {
    const clock = createVirtualClock();
    const simulator = createPlatformSimulator({
      clock,
      endpoints: [
        {
          handler: async () => {
            await clock.sleep(14_999);
            return { status: 202 };
          },
          events: ['UserSignedUp'],
        },
      ],
    });
    simulator.send('UserSignedUp');
    await simulator.run();
    expect(simulator.log).toEqual([expect.objectContaining({ attempt: 1, status: 202, ok: true })]);
  });
});

describe('endpoint state', () => {
  it('disables an endpoint after 14 consecutive days without a successful delivery', async () => {
    const disabled: string[] = [];
    const simulator = createPlatformSimulator({
      endpoints: [{ id: 'down', handler: answering(502), events: ['UserSignedUp'] }],
      onEndpointDisabled: (endpoint) => disabled.push(endpoint.id),
    });
    const start = simulator.clock.now();
    for (let day = 0; day <= 15; day++) {
      simulator.send('UserSignedUp');
      await simulator.clock.advance(DAY);
    }
    await simulator.run();

    const [endpoint] = simulator.endpoints;
    expect(endpoint?.active).toBe(false);
    expect(endpoint?.disabledAt).toBe(start + 14 * DAY);
    expect(disabled).toEqual(['down']);
    // Events of days 0–14 went out; nothing after the endpoint was disabled.
    expect(simulator.deliveries).toHaveLength(15);
    expect(Math.max(...simulator.log.map((entry) => entry.at))).toBe(start + 14 * DAY);
  });

  it('does not disable an endpoint that succeeds now and then', async () => {
    let calls = 0;
    const simulator = createPlatformSimulator({
      endpoints: [
        { handler: () => ({ status: ++calls % 10 === 0 ? 200 : 500 }), events: ['UserSignedUp'] },
      ],
    });
    for (let day = 0; day <= 20; day++) {
      simulator.send('UserSignedUp');
      await simulator.clock.advance(DAY);
    }
    expect(simulator.endpoints[0]?.active).toBe(true);
  });

  it('sends no new events to an inactive endpoint and stops its retries after the next failure', async () => {
    const seen: SimulatedRequest[] = [];
    const simulator = createPlatformSimulator({
      endpoints: [{ id: 'flaky', handler: answering(500, seen), events: ['CourseCompleted'] }],
    });
    simulator.send('CourseCompleted');
    await simulator.clock.advance(MINUTE); // attempt 1 fails
    simulator.updateEndpoint('flaky', { active: false });
    const later = simulator.send('CourseCompleted');
    await simulator.run();

    expect(later.endpoints).toEqual([]);
    expect(simulator.log.map((entry) => entry.attempt)).toEqual([1, 2]);
    expect(gapsInMinutes(simulator.log.map((entry) => entry.at))).toEqual([11]);
    expect(simulator.deliveries.map((delivery) => delivery.state)).toEqual(['failed']);
  });

  it('delivers a queued retry of an inactive endpoint that now succeeds', async () => {
    const statuses = [500, 200];
    const simulator = createPlatformSimulator({
      endpoints: [
        {
          id: 'ep',
          handler: () => ({ status: statuses.shift() ?? 500 }),
          events: ['CourseCompleted'],
        },
      ],
    });
    simulator.send('CourseCompleted');
    await simulator.clock.advance(MINUTE);
    simulator.removeEndpoint('ep');
    await simulator.run();
    expect(simulator.deliveries[0]).toMatchObject({ state: 'delivered', attempts: 2 });
    expect(simulator.endpoints).toEqual([]);
  });
});

describe('endpoint configuration', () => {
  const handler = answering(200);

  it('allows at most 5 endpoints', () => {
    const five = Array.from({ length: 5 }, () => ({ handler, events: ['UserSignedUp' as const] }));
    const simulator = createPlatformSimulator({ endpoints: five });
    expect(() => simulator.addEndpoint({ handler, events: ['UserSignedUp'] })).toThrow(ConfigError);
    expect(() => createPlatformSimulator({ endpoints: [...five, five[0]!] })).toThrow(/at most 5/);
    simulator.removeEndpoint('endpoint-1');
    expect(simulator.addEndpoint({ handler, events: ['UserSignedUp'] }).id).toBe('endpoint-6');
  });

  it('allows url and note of at most 255 characters', () => {
    const url = `https://hooks.example.com/${'a'.repeat(255 - 26)}`;
    expect(url).toHaveLength(255);
    const simulator = createPlatformSimulator({
      endpoints: [{ url, note: 'n'.repeat(255), events: ['UserSignedUp'] }],
    });
    expect(simulator.endpoints[0]?.url).toBe(url);
    expect(() => simulator.addEndpoint({ url: `${url}a`, events: ['UserSignedUp'] })).toThrow(
      /url is longer than 255/,
    );
    expect(() =>
      simulator.addEndpoint({ handler, note: 'n'.repeat(256), events: ['UserSignedUp'] }),
    ).toThrow(/note is longer than 255/);
    expect(() => simulator.updateEndpoint('endpoint-1', { note: 'n'.repeat(256) })).toThrow(
      ConfigError,
    );
  });

  it('generates a 64-character secretKey when none is given', () => {
    const simulator = createPlatformSimulator({
      endpoints: [
        { handler, events: ['UserSignedUp'] },
        { handler, events: ['UserSignedUp'] },
      ],
    });
    const [first, second] = simulator.endpoints.map((endpoint) => endpoint.secret);
    expect(first).toMatch(/^[\x21-\x7e]{64}$/);
    expect(second).toHaveLength(64);
    expect(first).not.toBe(second);
  });

  it('refuses an endpoint with both or neither of url and handler, or an unknown event', () => {
    const simulator = createPlatformSimulator();
    expect(() => simulator.addEndpoint({ url: 'https://a.example', handler, events: [] })).toThrow(
      /either a url or a handler/,
    );
    expect(() => simulator.addEndpoint({ events: [] })).toThrow(/either a url or a handler/);
    expect(() => simulator.addEndpoint({ url: 'ftp://a.example', events: [] })).toThrow(
      /http\(s\) URL/,
    );
    // @ts-expect-error -- not an event the platform offers
    expect(() => simulator.addEndpoint({ handler, events: ['PaymentComplete'] })).toThrow(
      /PaymentComplete/,
    );
  });
});

describe('test deliveries (docs/platform.md#test-deliveries)', () => {
  it('signs a saved endpoint’s test with its secretKey and an unsaved one’s with a temporary key', async () => {
    const clock = createVirtualClock();
    const simulator = createPlatformSimulator({ clock });
    const results: string[] = [];
    // The receiver is configured with the key the endpoint has once saved.
    const endpoint = simulator.addEndpoint({
      handler: (request) => receiver.handle(request),
      events: ['PaymentCompleted'],
    });
    const receiver = createReceiver({ secret: endpoint.secret, now: clock.now });
    receiver.onAny((event) => void results.push(event.event));

    const unsaved = await simulator.sendTestDelivery(endpoint, { saved: false });
    const saved = await simulator.sendTestDelivery(endpoint.id, { event: 'PaymentCompleted' });

    expect(unsaved).toMatchObject({
      test: true,
      status: 401,
      outcome: 'invalid_signature',
      ok: false,
    });
    expect(saved).toMatchObject({ test: true, status: 200, outcome: 'processed', ok: true });
    expect(results).toEqual(['PaymentCompleted']);
    await simulator.run();
    expect(simulator.log).toHaveLength(2); // a test delivery is never retried
  });
});

describe('injected faults', () => {
  function receiverBehind(clock = createVirtualClock()) {
    const effects = new Map<string, number>();
    const receiver = createReceiver({ secret: SECRET, now: clock.now });
    receiver.onAny(
      (event) =>
        void effects.set(event.idempotencyKey, (effects.get(event.idempotencyKey) ?? 0) + 1),
    );
    const simulator = createPlatformSimulator({
      clock,
      endpoints: [
        {
          handler: (request) => receiver.handle(request),
          secret: SECRET,
          events: [...FIXED_CONTRACT_EVENTS],
        },
      ],
    });
    return { simulator, effects };
  }

  it('drop: the receiver processed it, the platform saw nothing and retries into a duplicate', async () => {
    const { simulator, effects } = receiverBehind();
    const { idempotencyKey } = simulator.send('UserSignedUp', undefined, { fault: 'drop' });
    await simulator.run();
    expect(simulator.log.map(({ status, outcome, fault }) => ({ status, outcome, fault }))).toEqual(
      [
        { status: null, outcome: 'processed', fault: 'drop' },
        { status: 200, outcome: 'duplicate', fault: undefined },
      ],
    );
    expect(effects.get(idempotencyKey)).toBe(1);
  });

  it('delay: an answer after the timeout is a failure, retried 11 minutes after the timeout', async () => {
    const { simulator, effects } = receiverBehind();
    const { idempotencyKey } = simulator.send('UserSignedUp', undefined, { fault: 'delay' });
    await simulator.run();
    const [first, second] = simulator.log;
    expect(first).toMatchObject({
      status: null,
      ok: false,
      fault: 'delay',
      error: expect.stringMatching(/15000 ms/),
    });
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBe(15_000 + 11 * MINUTE);
    expect(second).toMatchObject({ status: 200, outcome: 'duplicate' });
    expect(effects.get(idempotencyKey)).toBe(1);
  });

  it('duplicate: two copies at once, processed once', async () => {
    const { simulator, effects } = receiverBehind();
    const { idempotencyKey } = simulator.send('PaymentCompleted', undefined, {
      fault: 'duplicate',
    });
    await simulator.run();
    expect(simulator.log.filter((entry) => entry.attempt === 1)).toHaveLength(2);
    expect(simulator.log.map((entry) => entry.outcome).sort()).toContain('processed');
    expect(effects.get(idempotencyKey)).toBe(1);
    expect(simulator.deliveries[0]?.state).toBe('delivered');
  });

  it('reorder: a held-back event arrives after a later one', async () => {
    const { simulator } = receiverBehind();
    simulator.send('UserSignedUp', undefined, { fault: 'reorder' });
    simulator.send('UserAcquainted');
    await simulator.run();
    expect(simulator.log.map((entry) => entry.event)).toEqual(['UserAcquainted', 'UserSignedUp']);
    expect(simulator.log[1]?.fault).toBe('reorder');
  });

  it('repeats the same faults for the same seed', async () => {
    async function faultsOf(seed: number): Promise<(string | undefined)[]> {
      const simulator = createPlatformSimulator({
        endpoints: [{ handler: answering(200), events: ['UserSignedUp'] }],
        faults: { rate: 0.5, kinds: ['drop', 'delay'], seed },
      });
      for (let i = 0; i < 20; i++) simulator.send('UserSignedUp');
      await simulator.run();
      return simulator.log.map((entry) => entry.fault);
    }
    expect(await faultsOf(3)).toEqual(await faultsOf(3));
    expect(await faultsOf(3)).not.toEqual(await faultsOf(4));
  });
});

describe('a receiver under 1 000 events with 30 % faults', () => {
  it('processes every event exactly once and loses none', async () => {
    const clock = createVirtualClock();
    const receiver = createReceiver({ secret: SECRET, now: clock.now });
    const effects = new Map<string, number>();
    // One event in ten fails in the handler the first time, so the platform's retry must run it.
    const failOnce = new Set<string>();
    receiver.onAny(async (event) => {
      await Promise.resolve();
      if (failOnce.delete(event.idempotencyKey)) throw new Error('transient failure');
      effects.set(event.idempotencyKey, (effects.get(event.idempotencyKey) ?? 0) + 1);
    });
    const simulator = createPlatformSimulator({
      clock,
      endpoints: [
        {
          handler: (request) => receiver.handle(request),
          secret: SECRET,
          events: [...FIXED_CONTRACT_EVENTS],
        },
      ],
      faults: { rate: 0.3, seed: 2024 },
    });

    const keys: string[] = [];
    for (let i = 0; i < 1_000; i++) {
      const name = FIXED_CONTRACT_EVENTS[
        i % FIXED_CONTRACT_EVENTS.length
      ] as (typeof FIXED_CONTRACT_EVENTS)[number];
      const idempotencyKey = `event-${i}`;
      if (i % 10 === 3) failOnce.add(idempotencyKey);
      simulator.send(name, undefined, { idempotencyKey });
      keys.push(idempotencyKey);
    }
    await simulator.run();

    const faulted = simulator.log.filter(
      (entry) => entry.fault !== undefined && entry.fault !== 'duplicate',
    );
    expect(faulted.length / simulator.log.length).toBeGreaterThan(0.15);
    expect(simulator.log.some((entry) => entry.fault === 'duplicate')).toBe(true);
    expect(simulator.log.some((entry) => entry.outcome === 'handler_failed')).toBe(true);
    expect(keys.filter((key) => effects.get(key) !== 1)).toEqual([]);
    expect(effects.size).toBe(1_000);
    // Every delivery ended; one the platform gave up on had its answer lost on all 5 attempts.
    for (const delivery of simulator.deliveries) {
      expect(delivery.state).not.toBe('pending');
      if (delivery.state === 'failed') {
        const attempts = simulator.log.filter(
          (entry) => entry.idempotencyKey === delivery.idempotencyKey,
        );
        expect(attempts.every((entry) => entry.fault === 'drop' || entry.fault === 'delay')).toBe(
          true,
        );
      }
    }
  });
});

describe('a real URL endpoint', () => {
  let server: Server | undefined;
  afterEach(
    () => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())),
  );

  async function listen(listener: Parameters<typeof createServer>[1]): Promise<string> {
    server = createServer(listener);
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  }

  it('POSTs the signed body and reads the receiver’s answer', async () => {
    const receiver = createReceiver({ secret: SECRET });
    const paid: number[] = [];
    receiver.on(
      'PaymentCompleted',
      (event) => void paid.push(event.data.payment.invoice.totalAmount),
    );
    const url = await listen(nodeListener(receiver, { path: '/hooks' }));
    const simulator = createPlatformSimulator({
      endpoints: [{ url, secret: SECRET, events: ['PaymentCompleted'] }],
    });
    simulator.send('PaymentCompleted');
    await simulator.run();
    expect(simulator.log).toEqual([
      expect.objectContaining({ status: 200, outcome: 'processed', ok: true }),
    ]);
  });

  it('does not follow a redirect: a 301 is a failure', async () => {
    const url = await listen((_req, res) =>
      res.writeHead(301, { location: 'https://example.com/' }).end(),
    );
    const simulator = createPlatformSimulator({ endpoints: [{ url, events: ['UserSignedUp'] }] });
    simulator.send('UserSignedUp');
    await simulator.clock.advance(MINUTE);
    expect(simulator.log).toEqual([expect.objectContaining({ status: 301, ok: false })]);
  });

  it('counts a refused connection as a failure', async () => {
    const url = await listen(() => {});
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    server = undefined;
    const simulator = createPlatformSimulator({ endpoints: [{ url, events: ['UserSignedUp'] }] });
    simulator.send('UserSignedUp');
    await simulator.run();
    expect(simulator.log).toHaveLength(5);
    expect(simulator.log[0]?.error).toMatch(/^network error: ECONNREFUSED/);
  });
});

describe('the virtual clock', () => {
  it('fires timers in order of due time as it advances, and no later ones', async () => {
    const clock = createVirtualClock({ start: '2025-03-01T09:00:00Z' });
    const fired: string[] = [];
    clock.schedule(() => fired.push('b'), 2 * MINUTE);
    clock.schedule(() => fired.push('a'), MINUTE);
    clock.schedule(() => fired.push('c'), 3 * MINUTE);
    await clock.advance(2 * MINUTE);
    expect(fired).toEqual(['a', 'b']);
    expect(new Date(clock.now()).toISOString()).toBe('2025-03-01T09:02:00.000Z');
    expect(clock.pending).toBe(1);
  });

  it('runs async work to its end before time moves on, and timers that timers schedule', async () => {
    const clock = createVirtualClock();
    const start = clock.now();
    const seen: number[] = [];
    clock.schedule(async () => {
      await clock.sleep(5_000);
      seen.push(clock.now() - start);
      clock.schedule(() => seen.push(clock.now() - start), DAY);
    }, 1_000);
    await clock.runAll();
    expect(seen).toEqual([6_000, 6_000 + DAY]);
  });

  it('rethrows what a timer callback threw, after running the others', async () => {
    const clock = createVirtualClock();
    const fired: number[] = [];
    const boom = new Error('boom');
    clock.schedule(() => {
      throw boom;
    }, 1);
    clock.schedule(() => fired.push(2), 2);
    await expect(clock.runAll()).rejects.toBe(boom);
    expect(fired).toEqual([2]);
  });

  it('cancels a timer', async () => {
    const clock = createVirtualClock();
    const fired: number[] = [];
    const cancel = clock.schedule(() => fired.push(1), 1);
    cancel();
    await clock.runAll();
    expect(fired).toEqual([]);
  });
});

describe('an advance() that was not awaited', () => {
  /** The ConfigError `moved` rejected with, its message naming both calls and the fix. */
  async function refusal(moved: Promise<void>, name: string, running: string) {
    const error = await failureOf(moved);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('config');
    expect(error.message).toBe(
      `clock.${name} was called while clock.${running} is still running: await each one ` +
        '(`await clock.advance(ms)`); until its promise ends, the clock has not moved',
    );
  }

  it('has not moved the clock on the next line; the next advance() says why, and moves nothing', async () => {
    const clock = createVirtualClock();
    const start = clock.now();
    const fired: number[] = [];
    clock.schedule(() => fired.push(clock.now() - start), MINUTE);
    const forgotten = clock.advance(MINUTE);
    expect([clock.now() - start, fired]).toEqual([0, []]);
    await refusal(clock.advance(MINUTE), 'advance()', 'advance()');
    await forgotten;
    expect([clock.now() - start, fired]).toEqual([MINUTE, [MINUTE]]);
    // Once it ended, the clock moves again.
    await clock.advance(MINUTE);
    expect(clock.now() - start).toBe(2 * MINUTE);
  });

  it('refuses runAll(), and the simulator’s run(), while an advance() runs', async () => {
    const clock = createVirtualClock();
    const platform = createPlatformSimulator({ clock });
    const forgotten = clock.advance(MINUTE);
    const [runAll, run] = [clock.runAll(), platform.run()];
    await refusal(runAll, 'runAll()', 'advance()');
    await refusal(run, 'runAll()', 'advance()');
    await forgotten;
    const running = platform.run();
    await refusal(clock.advance(1), 'advance()', 'runAll()');
    await running;
  });

  it('refuses an advance() from a timer callback, as the advance() that runs it rethrows', async () => {
    const clock = createVirtualClock();
    clock.schedule(() => clock.advance(MINUTE), 1);
    await refusal(clock.advance(1), 'advance()', 'advance()');
    // A run that failed lets the clock move again.
    clock.schedule(() => {
      throw new Error('boom');
    }, 1);
    expect((await failureOf(clock.advance(1))).message).toBe('boom');
    await clock.advance(1);
  });
});
