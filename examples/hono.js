// A Hono app on Node (@hono/node-server) that receives the school platform's webhooks.
// Run: npm run build && SCHOOL_WEBHOOK_SECRET=<endpoint secretKey> node examples/hono.js
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { createReceiver } from 'schoolhooks';
import { honoHandler } from 'schoolhooks/hono';

const secret = process.env.SCHOOL_WEBHOOK_SECRET;
if (!secret) {
  console.error(
    'SCHOOL_WEBHOOK_SECRET is not set: give it the endpoint secretKey ' +
      '(Manage > School > Webhooks > "Copy signature").',
  );
  process.exit(2);
}
const port = Number(process.env.PORT ?? 3000);

const receiver = createReceiver({ secret });
receiver.on(['ProductEnrolledToFree', 'ProductEnrolledViaPayment'], (event) => {
  console.log(`user ${event.data.user.id} enrolled (${event.event})`);
});
receiver.onAny((event) => console.log(`${event.event} ${event.idempotencyKey}`));
receiver.onError((error) => console.warn(`webhook ${error.code}: ${error.message}`));

const app = new Hono();
app.post('/webhooks/school', honoHandler(receiver));
app.get('/health', (c) => c.json({ ok: true }));

serve({ fetch: app.fetch, port }, (info) =>
  console.log(`listening on http://localhost:${info.port}/webhooks/school`),
);
