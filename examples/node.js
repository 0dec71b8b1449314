// A bare node:http server that receives the school platform's webhooks.
// Run: npm run build && SCHOOL_WEBHOOK_SECRET=<endpoint secretKey> node examples/node.js
import { createServer } from 'node:http';
import { createReceiver } from 'schoolhooks';
import { nodeListener } from 'schoolhooks/node';

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
receiver.on('CourseCompleted', (event) => {
  console.log(`user ${event.data.user.id} completed course ${event.data.course.id}`);
});
receiver.onAny((event) => console.log(`${event.event} ${event.idempotencyKey}`));
receiver.onError((error) => console.warn(`webhook ${error.code}: ${error.message}`));

// Every other path is answered 404.
const server = createServer(nodeListener(receiver, { path: '/webhooks/school' }));
server.listen(port, () =>
  console.log(`listening on http://localhost:${server.address().port}/webhooks/school`),
);
