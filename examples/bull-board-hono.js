// A Hono server on Node (@hono/node-server) with an inbox: deliveries are answered 202 once they
// are jobs in Redis, a worker in the same process runs the handlers, and Bull Board at
// /admin/queues shows the jobs and retries dead letters. Bull Board has no login of its own: put
// it behind yours.
// Run: npm run build && SCHOOL_WEBHOOK_SECRET=<endpoint secretKey> REDIS_URL=redis://127.0.0.1:6379 node examples/bull-board-hono.js
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serve } from '@hono/node-server';
import { serveStatic } from '@hono/node-server/serve-static';
import { Hono } from 'hono';
import { Redis } from 'ioredis';
import { createReceiver } from 'schoolhooks';
import { bullmqInbox } from 'schoolhooks/bullmq';
import { honoHandler } from 'schoolhooks/hono';
import { redisStore } from 'schoolhooks/redis';

const secret = process.env.SCHOOL_WEBHOOK_SECRET;
if (!secret) {
  console.error('SCHOOL_WEBHOOK_SECRET is not set: give it the endpoint secretKey.');
  process.exit(2);
}
const port = Number(process.env.PORT ?? 3000);

const connection = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const inbox = bullmqInbox({ connection, queueName: process.env.INBOX_QUEUE ?? 'schoolhooks' });
const receiver = createReceiver({ secret, store: redisStore({ client: connection }), inbox });
receiver.on('PaymentCompleted', (event, ctx) => {
  const { invoice } = event.data.payment;
  console.log(`payment of ${invoice.totalAmount} ${invoice.currency} (attempt ${ctx.attempt})`);
});
receiver.onError((error) => console.warn(`webhook ${error.code}: ${error.message}`));
const worker = inbox.work(receiver, { concurrency: 5 });

// Bull Board's page loads its scripts and styles through serveStatic, from @bull-board/ui.
const board = new HonoAdapter(serveStatic);
board.setBasePath('/admin/queues');
const jobs = new BullMQAdapter(inbox.queue);
// A job keeps the delivery's signature, for the worker to verify it again: no page shows it.
jobs.setFormatter('data', ({ signature: _signature, ...delivery }) => delivery);
createBullBoard({ queues: [jobs], serverAdapter: board });

const app = new Hono();
app.post('/webhooks/school', honoHandler(receiver));
// app.use('/admin/queues/*', yourAuth);
app.route('/admin/queues', board.registerPlugin());

const server = serve({ fetch: app.fetch, port }, (info) => {
  console.log(`listening on http://localhost:${info.port}/webhooks/school`);
  console.log(`Bull Board on http://localhost:${info.port}/admin/queues`);
});

process.once('SIGTERM', async () => {
  server.close();
  await worker.close(); // finishes the jobs that run
  await inbox.close();
  connection.disconnect();
});
