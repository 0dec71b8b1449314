// A Fastify server that receives the school platform's webhooks; its other routes keep Fastify's
// JSON parsing. Run: npm run build && SCHOOL_WEBHOOK_SECRET=<endpoint secretKey> node examples/fastify.js
import Fastify from 'fastify';
import { createReceiver } from 'schoolhooks';
import { schoolhooksPlugin } from 'schoolhooks/fastify';

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
receiver.on('PaymentCompleted', (event) => {
  const { invoice } = event.data.payment;
  console.log(`payment of ${invoice.totalAmount} ${invoice.currency} by user ${invoice.user.id}`);
});
receiver.onAny((event) => console.log(`${event.event} ${event.idempotencyKey}`));
receiver.onError((error) => console.warn(`webhook ${error.code}: ${error.message}`));

// The platform waits 15 s for an answer: nothing it sends needs Node's 5 minutes.
const app = Fastify({ requestTimeout: 15_000 });
await app.register(schoolhooksPlugin, { receiver, path: '/webhooks/school' });
// Outside the plugin, JSON is parsed as usual.
app.post('/orders', async (request) => ({ received: request.body }));

const address = await app.listen({ port, host: '127.0.0.1' });
console.log(`listening on ${address.replace('127.0.0.1', 'localhost')}/webhooks/school`);
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
