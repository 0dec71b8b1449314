// An AWS Lambda function that receives the school platform's webhooks behind API Gateway (REST or
// HTTP API), a Function URL or an ALB: deploy it with `handler` as the entry point.
// Try it here: SCHOOL_WEBHOOK_SECRET=<any secret> node examples/lambda.js (it invokes itself).
import { Buffer } from 'node:buffer';
import { pathToFileURL } from 'node:url';
import { createReceiver } from 'schoolhooks';
import { lambdaHandler } from 'schoolhooks/lambda';

const secret = process.env.SCHOOL_WEBHOOK_SECRET;
if (!secret) {
  console.error(
    'SCHOOL_WEBHOOK_SECRET is not set: give it the endpoint secretKey ' +
      '(Manage > School > Webhooks > "Copy signature").',
  );
  process.exit(2);
}

// Deduplication across invocations needs a shared store (schoolhooks/redis): a Lambda's memory
// lasts only as long as its instance.
const receiver = createReceiver({ secret });
receiver.on('UserSignedUp', (event) => {
  console.log(`user ${event.data.user.id} signed up`);
});
receiver.onAny((event) => console.log(`${event.event} ${event.idempotencyKey}`));
receiver.onError((error) => console.warn(`webhook ${error.code}: ${error.message}`));

export const handler = lambdaHandler(receiver);

// Run directly: invoke the handler with a signed HTTP API event, base64-encoded as API Gateway
// may send it, then with its retry.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { createDelivery } = await import('schoolhooks/testing');
  const delivery = createDelivery('UserSignedUp', { user: { id: 1 } }, { secret });
  const event = {
    version: '2.0',
    rawPath: '/webhooks/school',
    headers: delivery.headers,
    requestContext: { http: { method: 'POST', path: '/webhooks/school' } },
    body: Buffer.from(delivery.body).toString('base64'),
    isBase64Encoded: true,
  };
  for (const attempt of ['first', 'retry']) {
    const result = await handler(event, {});
    console.log(`${attempt}: ${result.statusCode} ${result.body}`);
  }
}
