// An Express server that receives the school platform's webhooks.
// Run: npm run build && SCHOOL_WEBHOOK_SECRET=<endpoint secretKey> node examples/express.js
import express from 'express';
import { createReceiver } from 'schoolhooks';
import { expressMiddleware } from 'schoolhooks/express';

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

const app = express();
// The webhook route comes before express.json(): the signature covers the raw bytes, which a
// JSON parser consumes. (Or: app.use(express.json({ verify: rawBodySaver })) first.)
app.post('/webhooks/school', expressMiddleware(receiver));
app.use(express.json());
app.get('/health', (_req, res) => {
  res.json({ ok: true });
});

const server = app.listen(port, () =>
  console.log(`listening on http://localhost:${server.address().port}/webhooks/school`),
);
