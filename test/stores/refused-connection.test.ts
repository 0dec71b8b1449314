/**
 * A store that cannot connect says why on the error's own line: the message of a
 * StoreUnavailableError carries its cause chain (`connect ECONNREFUSED …`), never a password.
 * Against a real refused connection: ioredis on a port nothing listens on.
 */

import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createReceiver, StoreUnavailableError, type SchoolhooksError } from '../../src/index.js';
import { redisStore } from '../../src/stores/redis.js';
import { createTestDelivery, SECRET } from '../helpers/deliveries.js';

/** A port that was free a moment ago and that nothing listens on now. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('a store whose connection is refused', () => {
  let client: Redis | undefined;
  afterEach(() => {
    client?.disconnect();
    client = undefined;
  });

  it('answers 503 and tells onError why, ECONNREFUSED on the line, no password', async () => {
    const port = await closedPort();
    const password = 'redis-pass-never-shown';
    client = new Redis(`redis://user:${password}@127.0.0.1:${port}`, { maxRetriesPerRequest: 1 });
    // What ioredis emits is the test's to ignore: the receiver must say it on its own.
    client.on('error', () => {});
    const errors: SchoolhooksError[] = [];
    const receiver = createReceiver({ secret: SECRET, store: redisStore({ client }) })
      .onAny(() => {})
      .onError((error) => void errors.push(error));
    const delivery = createTestDelivery();
    const result = await receiver.handle({
      method: 'POST',
      headers: delivery.headers,
      body: delivery.body,
    });
    // The platform retries a 503: the event is not lost.
    expect(result).toMatchObject({ status: 503, outcome: 'store_unavailable' });
    // The delivery's failure, and the client's own 'error' event (the store hears it and the
    // receiver tells it): both StoreUnavailableErrors, neither with the password.
    for (const told of errors) {
      expect(told).toBeInstanceOf(StoreUnavailableError);
      expect(told.code).toBe('store_unavailable');
      expect(told.message).not.toContain(password);
    }
    const claims = errors.filter((told) => told.message.startsWith('the idempotency store'));
    expect(claims).toHaveLength(1);
    const [error] = claims;
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error!.code).toBe('store_unavailable');
    expect(error!.message).toMatch(
      new RegExp(
        `^the idempotency store failed to claim the key: .*connect ECONNREFUSED 127\\.0\\.0\\.1:${port}$`,
      ),
    );
    expect(error!.message).not.toContain(password);
    expect(error!.message).not.toContain(SECRET);
  });
});
