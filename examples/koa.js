// A Koa server that receives the school platform's webhooks, next to a body parser.
// Run: npm run build && SCHOOL_WEBHOOK_SECRET=<endpoint secretKey> node examples/koa.js
import { bodyParser } from '@koa/bodyparser';
import Koa from 'koa';
import { createReceiver } from 'schoolhooks';
import { koaMiddleware } from 'schoolhooks/koa';

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

const app = new Koa();
// Before or after the body parser: after it, the middleware verifies ctx.request.rawBody.
app.use(bodyParser());
app.use(koaMiddleware(receiver, { path: '/webhooks/school' }));
app.use((ctx) => {
  if (ctx.method === 'POST' && ctx.path === '/orders') ctx.body = { received: ctx.request.body };
});

const server = app.listen(port, () =>
  console.log(`listening on http://localhost:${server.address().port}/webhooks/school`),
);
// The platform waits 15 s for an answer: nothing it sends needs Node's 5 minutes.
server.requestTimeout = 15_000;
server.headersTimeout = 15_000;
process.once('SIGTERM', () => server.close(() => process.exit(0)));
