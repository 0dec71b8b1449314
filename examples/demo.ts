// The whole delivery story in a few seconds: a receiver behind a real node:http server, and the
// platform simulator delivering to it on a virtual clock (hours of retries take milliseconds).
// Run: npm run demo
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { nodeListener } from '../adapters/node.js';
import { createReceiver, FIXED_CONTRACT_EVENTS } from '../src/index.js';
import {
  createPlatformSimulator,
  createVirtualClock,
  fixtures,
  type DeliveryLogEntry,
} from '../src/testing/index.js';

const clock = createVirtualClock();
const start = clock.now();
const platform = createPlatformSimulator({ clock, onAttempt: print });

// The seller's server, on a free port.
const server = createServer();
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address() as AddressInfo;

// The seller adds the endpoint in the account UI; the platform generates its 64-character
// secretKey, which the receiver is configured with ("Copy signature").
const endpoint = platform.addEndpoint({
  url: `http://127.0.0.1:${port}/webhooks/school`,
  events: [...FIXED_CONTRACT_EVENTS],
  note: 'demo',
});
const receiver = createReceiver({ secret: endpoint.secret, now: clock.now });
server.on('request', nodeListener(receiver, { path: '/webhooks/school' }));

// What the seller's handler did, per idempotencyKey: each event must take effect exactly once.
// One handler, which fails once: on a retry every handler of the event runs again.
const effects = new Map<string, number>();
let certificateServiceDown = true;
receiver.on([...FIXED_CONTRACT_EVENTS], (event) => {
  if (event.event === 'CourseCompleted' && certificateServiceDown) {
    certificateServiceDown = false;
    throw new Error('the certificate service is down'); // answered 500: the platform retries
  }
  effects.set(event.idempotencyKey, (effects.get(event.idempotencyKey) ?? 0) + 1);
});

console.log(`Receiver on http://127.0.0.1:${port}/webhooks/school\n`);
console.log('A test delivery from the endpoint form before it is saved (a temporary key):');
await platform.sendTestDelivery(endpoint, { saved: false });

console.log('\nEvery fixture, a duplicate, a failing handler and an invalid payload:');
for (const name of FIXED_CONTRACT_EVENTS) platform.send(name);
// The platform delivering one event twice: the same key and the same bytes.
const twice = { idempotencyKey: 'demo-duplicate', timestamp: clock.now() };
platform.send('UserSignedUp', undefined, twice);
platform.send('UserSignedUp', undefined, twice);
// A payload that breaks its contract: 422 on every attempt, then the platform gives up.
platform.send(
  'PaymentCompleted',
  fixtures.PaymentCompleted({ payment: { invoice: { totalAmount: 'free' as unknown as number } } }),
);
await platform.run();
await new Promise<void>((resolve) => server.close(() => resolve()));

const { log, deliveries } = platform;
const delivered = deliveries.filter((delivery) => delivery.state === 'delivered').length;
const ranTwice = [...effects.values()].filter((count) => count > 1).length;
console.log(
  `\n${deliveries.length} events, ${log.length} requests over ${elapsed(clock.now() - start)} ` +
    `of platform time: ${delivered} delivered, ${deliveries.length - delivered} failed ` +
    `(the invalid payload); ${effects.size} processed, ${ranTwice} processed twice.`,
);

const expected = deliveries.length === FIXED_CONTRACT_EVENTS.length + 3 && ranTwice === 0;
const retried = log.some((e) => e.event === 'CourseCompleted' && e.attempt === 2 && e.ok);
if (!expected || !retried || delivered !== deliveries.length - 1) {
  console.error('The demo did not go as expected.');
  process.exitCode = 1;
}

function print(entry: DeliveryLogEntry): void {
  const answer = entry.status === null ? (entry.error ?? 'no answer') : String(entry.status);
  console.log(
    `  +${elapsed(entry.at - start)}  ${entry.event.padEnd(30)} attempt ${entry.attempt}  ` +
      `${answer} ${entry.outcome ?? ''}${entry.test ? '  (test delivery)' : ''}`,
  );
}

function elapsed(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  return `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, '0')}`;
}
