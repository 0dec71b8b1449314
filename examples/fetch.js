// The Fetch API handler (the one for Bun, Deno, Workers and Next.js), served here on Node by
// @hono/node-server.
// Run: npm run build && SCHOOL_WEBHOOK_SECRET=<endpoint secretKey> node examples/fetch.js
import { serve } from '@hono/node-server';
import { createReceiver } from 'schoolhooks';
import { fetchHandler } from 'schoolhooks/fetch';

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
receiver.on('UserSignedUp', (event) => {
  console.log(`user ${event.data.user.id} signed up`);
});
receiver.onAny((event) => console.log(`${event.event} ${event.idempotencyKey}`));
receiver.onError((error) => console.warn(`webhook ${error.code}: ${error.message}`));

const handleWebhook = fetchHandler(receiver);

/** @param {Request} request */
function route(request) {
  if (new URL(request.url).pathname === '/webhooks/school') return handleWebhook(request);
  return Response.json({ ok: false, error: 'not_found' }, { status: 404 });
}

serve({ fetch: route, port }, (info) =>
  console.log(`listening on http://localhost:${info.port}/webhooks/school`),
);
