// The whole delivery story in a few seconds: a receiver behind a real node:http server, and the
// platform simulator delivering to it on a virtual clock (hours of retries take milliseconds).
// Run: npm run demo
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { nodeListener } from '../src/adapters/node.js';
import {
  createReceiver,
  FIXED_CONTRACT_EVENTS,
  memoryInbox,
  paymentCompletedDataSchema,
  type Receiver,
} from '../src/index.js';
import { z } from 'zod';
import {
  createPlatformSimulator,
  createVirtualClock,
  fixtures,
  type DeliveryLogEntry,
} from '../src/testing/index.js';
import { formatDuration } from '../src/cli/duration.js';

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
  `\n${deliveries.length} events, ${log.length} requests over ${formatDuration(clock.now() - start)} ` +
    `of platform time: ${delivered} delivered, ${deliveries.length - delivered} failed ` +
    `(the invalid payload); ${effects.size} processed, ${ranTwice} processed twice.`,
);

const expected = deliveries.length === FIXED_CONTRACT_EVENTS.length + 3 && ranTwice === 0;
const retried = log.some((e) => e.event === 'CourseCompleted' && e.attempt === 2 && e.ok);
if (!expected || !retried || delivered !== deliveries.length - 1) {
  console.error('The demo did not go as expected.');
  process.exitCode = 1;
}

// Act two: the same story with an inbox. The receiver answers 202 once the delivery is stored;
// a worker runs the handlers, retries on its own, and keeps what still fails as a dead letter.
console.log('\nWith an inbox (memoryInbox): acknowledged once stored, nothing lost:');
const inboxPlatform = createPlatformSimulator({ clock, onAttempt: print });
const inboxServer = createServer();
await new Promise<void>((resolve) => inboxServer.listen(0, '127.0.0.1', resolve));
const inboxEndpoint = inboxPlatform.addEndpoint({
  url: `http://127.0.0.1:${(inboxServer.address() as AddressInfo).port}/webhooks/school`,
  events: [...FIXED_CONTRACT_EVENTS],
});
const inbox = memoryInbox({ attempts: 3, backoffMs: 10 });
const payments = new Map<string, number>();
function grantAccess(receiver: Receiver): Receiver {
  return receiver.on('PaymentCompleted', (event) => {
    payments.set(event.idempotencyKey, Number(event.data.payment.invoice.totalAmount));
  });
}
const queued = grantAccess(createReceiver({ secret: inboxEndpoint.secret, now: clock.now, inbox }));
inboxServer.on('request', nodeListener(queued, { path: '/webhooks/school' }));
const invalid = fixtures.PaymentCompleted();
Object.assign(invalid.payment.invoice, { totalAmount: '4990.00' }); // a string: the same break
inboxPlatform.send('PaymentCompleted', invalid);
inboxPlatform.send('PaymentCompleted');
await inboxPlatform.run();
await new Promise<void>((resolve) => inboxServer.close(() => resolve()));

const worker = inbox.work(queued, { concurrency: 4 });
await inbox.idle();
await worker.close();
for (const job of await inbox.jobs({ state: 'failed' })) {
  console.log(`  dead letter  ${job.event}  ${job.idempotencyKey}\n    ${job.reason}`);
}

// The fix, without waiting for a release: a schema that reads totalAmount as a string too.
// The dead letter is replayed and processed, once.
const fixed = grantAccess(
  createReceiver({
    secret: inboxEndpoint.secret,
    now: clock.now,
    inbox,
    schemas: {
      PaymentCompleted: paymentCompletedDataSchema.extend({
        payment: paymentCompletedDataSchema.shape.payment.extend({
          invoice: paymentCompletedDataSchema.shape.payment.shape.invoice.extend({
            totalAmount: z.union([z.number(), z.coerce.number()]),
          }),
        }),
      }),
    },
  }),
);
const fixedWorker = inbox.work(fixed);
const replayed = await inbox.retryFailed({ event: 'PaymentCompleted' });
await inbox.idle();
await fixedWorker.close();
const completed = await inbox.jobs({ state: 'completed' });
console.log(
  `  replayed ${replayed} dead letter after the fix: ${completed.length} of ` +
    `${inboxPlatform.deliveries.length} payments processed, ` +
    `${[...payments.values()].join(' + ')} granted.`,
);
await inbox.close();
if (completed.length !== 2 || payments.size !== 2 || replayed !== 1) {
  console.error('The inbox act did not go as expected.');
  process.exitCode = 1;
}

function print(entry: DeliveryLogEntry): void {
  const answer = entry.status === null ? (entry.error ?? 'no answer') : String(entry.status);
  console.log(
    `  ${`+${formatDuration(entry.at - start)}`.padEnd(8)} ${entry.event.padEnd(30)} attempt ${entry.attempt}  ` +
      `${answer} ${entry.outcome ?? ''}${entry.test ? '  (test delivery)' : ''}`,
  );
}
