// The example of docs/testing.md, as it is there but for the two import paths (`schoolhooks` and
// `schoolhooks/testing` on the page), so the page's code is proven to pass.
import { describe, expect, it } from 'vitest';
import { createReceiver } from '../src/index.js';
import {
  createDelivery,
  createPlatformSimulator,
  createVirtualClock,
  fixtures,
} from '../src/testing/index.js';

const secret = 'test-secret';

describe('my webhook receiver', () => {
  it('grants access once per payment, however often it is delivered', async () => {
    const receiver = createReceiver({ secret });
    const granted: number[] = [];
    receiver.on('PaymentCompleted', (event) => {
      granted.push(event.data.payment.invoice.user.id);
    });

    const data = fixtures.PaymentCompleted({ payment: { invoice: { user: { id: 42 } } } });
    const delivery = createDelivery('PaymentCompleted', data, { secret });
    const first = await receiver.handle({ method: 'POST', ...delivery });
    const again = await receiver.handle({ method: 'POST', ...delivery });

    expect([first.status, first.outcome]).toEqual([200, 'processed']);
    expect([again.status, again.outcome]).toEqual([200, 'duplicate']);
    expect(granted).toEqual([42]);
  });

  it('rejects a delivery signed with another secret', async () => {
    const receiver = createReceiver({ secret });
    const delivery = createDelivery('UserSignedUp', undefined, { secret: 'another-secret' });
    const result = await receiver.handle({ method: 'POST', ...delivery });
    expect([result.status, result.outcome]).toEqual([401, 'invalid_signature']);
  });

  it('runs a failed event again when the platform retries it, 11 minutes later', async () => {
    const clock = createVirtualClock();
    const receiver = createReceiver({ secret, now: clock.now });
    let calls = 0;
    receiver.on('CourseCompleted', () => {
      calls += 1;
      if (calls === 1) throw new Error('database unavailable');
    });
    const platform = createPlatformSimulator({
      clock,
      endpoints: [
        { handler: (request) => receiver.handle(request), secret, events: ['CourseCompleted'] },
      ],
    });

    const start = clock.now();
    platform.send('CourseCompleted');
    await platform.run(); // the whole retry schedule, in milliseconds

    const attempts = platform.log.map((entry) => [
      entry.attempt,
      entry.status,
      (entry.at - start) / 60_000,
    ]);
    expect(attempts).toEqual([
      [1, 500, 0],
      [2, 200, 11],
    ]);
    expect(calls).toBe(2);
  });

  it('processes each event once through dropped, delayed, duplicated and reordered deliveries', async () => {
    const clock = createVirtualClock();
    const receiver = createReceiver({ secret, now: clock.now });
    const seen = new Map<string, number>();
    receiver.on('UserSignedUp', (event) => {
      seen.set(event.idempotencyKey, (seen.get(event.idempotencyKey) ?? 0) + 1);
    });
    const platform = createPlatformSimulator({
      clock,
      endpoints: [
        { handler: (request) => receiver.handle(request), secret, events: ['UserSignedUp'] },
      ],
      faults: { rate: 0.3, seed: 1 },
    });

    for (let i = 0; i < 100; i++) platform.send('UserSignedUp');
    await platform.run();

    expect(seen.size).toBe(100);
    expect([...seen.values()].every((count) => count === 1)).toBe(true);
  });
});
