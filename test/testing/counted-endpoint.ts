/**
 * What the simulator's outage tests share: a real receiver behind a real node:http server that
 * counts every request it gets, on the simulator's virtual clock, with one endpoint (`shop`) for
 * PaymentCompleted; the server closed after each test.
 * @module
 */

import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';
import { nodeListener } from '../../src/adapters/node.js';
import { createReceiver, type ReceiverOptions } from '../../src/index.js';
import {
  createPlatformSimulator,
  createVirtualClock,
  type PlatformSimulator,
} from '../../src/testing/index.js';

/**
 * Registers the server's closing after each test; call in a describe block. The set-up it gives
 * starts a receiver of `secret` (and `options`) and a simulator whose endpoint `shop` is it.
 */
export function useCountedEndpoint(secret: string, options: Partial<ReceiverOptions> = {}) {
  let server: Server | undefined;
  afterEach(
    () => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())),
  );

  return async function setUp() {
    const clock = createVirtualClock({ start: '2026-03-02T09:00:00Z' });
    const receiver = createReceiver({ ...options, secret, now: clock.now });
    const processed: string[] = [];
    receiver.on('PaymentCompleted', (event) => void processed.push(event.idempotencyKey));
    const handle = nodeListener(receiver, { path: '/hooks' });
    const seen = { requests: 0 };
    const listener: RequestListener = (request, response) => {
      seen.requests += 1;
      void handle(request, response);
    };
    server = createServer(listener);
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
    const simulator: PlatformSimulator = createPlatformSimulator({
      clock,
      endpoints: [{ id: 'shop', url, secret, events: ['PaymentCompleted'] }],
    });
    return { clock, simulator, seen, processed, start: clock.now() };
  };
}
