import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeListener } from '../src/adapters/node.js';
import { ConfigError, createReceiver, KNOWN_EVENTS, type WebhookEvent } from '../src/index.js';
import { listen, post, type AdapterServer } from './adapters/suite.js';
import { createTestDelivery, fixtureDelivery, SECRET } from './helpers/deliveries.js';

/** `on()` with a name the types refuse, as plain JavaScript (or a cast) would call it. */
function onUntyped(receiver: ReturnType<typeof createReceiver>, name: unknown): void {
  (receiver.on as (name: unknown, handler: () => void) => unknown)(name, () => {});
}

describe('receiver.on: closed event names', () => {
  let server: AdapterServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('throws a ConfigError naming the nearest known name for a misspelt one', () => {
    const receiver = createReceiver({ secret: SECRET });
    expect(() => onUntyped(receiver, 'PaymentComplete')).toThrow(
      new ConfigError(
        "unknown event 'PaymentComplete'; did you mean 'PaymentCompleted'? " +
          'Events this version does not know reach onAny',
      ),
    );
    expect(() => onUntyped(receiver, 'paymentcompleted')).toThrow(
      /did you mean 'PaymentCompleted'/,
    );
    expect(() => onUntyped(receiver, 'UserSignedUP')).toThrow(/did you mean 'UserSignedUp'/);
  });

  it('names no known event when none is near, and still points to onAny', () => {
    const receiver = createReceiver({ secret: SECRET });
    expect(() => onUntyped(receiver, 'SomethingNew')).toThrow(
      "unknown event 'SomethingNew'. Events this version does not know reach onAny",
    );
    expect(() => onUntyped(receiver, 42)).toThrow(ConfigError);
  });

  it('accepts each of the 21 known names', () => {
    const receiver = createReceiver({ secret: SECRET });
    expect(KNOWN_EVENTS).toHaveLength(21);
    for (const name of KNOWN_EVENTS) expect(() => receiver.on(name, () => {})).not.toThrow();
  });

  it('registers none of a list that holds a misspelt name', async () => {
    const receiver = createReceiver({ secret: SECRET });
    expect(() => onUntyped(receiver, ['UserSignedIn', 'UserSignedUpp'])).toThrow(
      /did you mean 'UserSignedUp'/,
    );
    const delivery = createTestDelivery('UserSignedIn');
    expect((await receiver.handle({ method: 'POST', ...delivery })).outcome).toBe('ignored');
  });

  it('hands an event this version does not know to onAny, over HTTP', async () => {
    const seen: string[] = [];
    const receiver = createReceiver({ secret: SECRET }).onAny((event) => {
      seen.push(event.event);
    });
    server = await listen(createServer(nodeListener(receiver)).listen(0, '127.0.0.1'), '/');
    const delivery = createTestDelivery('CourseArchived', { course: { id: 7 } });
    const answer = await post(server.url, delivery);
    expect(answer).toMatchObject({ status: 200, body: { outcome: 'processed' } });
    expect(seen).toEqual(['CourseArchived']);
  });

  it('passes fields the types do not name through to the handler untouched', async () => {
    let received: WebhookEvent<'PaymentCompleted'> | undefined;
    const receiver = createReceiver({ secret: SECRET }).on('PaymentCompleted', (event) => {
      received = event;
    });
    server = await listen(createServer(nodeListener(receiver)).listen(0, '127.0.0.1'), '/');
    const delivery = fixtureDelivery('PaymentCompleted', (data) => {
      const payment = data['payment'] as { invoice: Record<string, unknown> };
      payment.invoice['loyaltyPoints'] = 120;
    });
    expect((await post(server.url, delivery)).status).toBe(200);
    expect((received?.data.payment.invoice as Record<string, unknown>)['loyaltyPoints']).toBe(120);
  });
});
