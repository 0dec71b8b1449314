import { createServer, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import { nodeListener } from '../../src/adapters/node.js';
import { createReceiver, type SchoolhooksError } from '../../src/index.js';
import { createTestDelivery, SECRET } from '../helpers/deliveries.js';
import {
  adapterSuite,
  expectAnswer,
  expectOwnFix,
  listen,
  post,
  tenantOfPath,
  type AdapterServer,
} from './suite.js';
import type { Receiver } from '../../src/index.js';

adapterSuite(
  'node:http',
  (receiver) =>
    listen(createServer(nodeListener(receiver, { path: '/webhooks' })).listen(0, '127.0.0.1')),
  {
    tenants: {
      serve: (receiver) => {
        const listener = nodeListener(receiver, { tenant: (req) => tenantOfPath(req.url) });
        return listen(createServer(listener).listen(0, '127.0.0.1'), '/webhooks/school');
      },
      withoutTenant: (receiver) => nodeListener(receiver, { path: '/webhooks' }),
    },
  },
);

describe('nodeListener paths', () => {
  let server: AdapterServer | undefined;
  afterEach(() => server?.close());

  async function start(path?: string): Promise<string> {
    const receiver = createReceiver({ secret: SECRET }).onAny(() => {});
    const listener = nodeListener(receiver, path === undefined ? {} : { path });
    server = await listen(createServer(listener).listen(0, '127.0.0.1'), '');
    return server.url;
  }

  it('answers 404 with a JSON body on any other path', async () => {
    const origin = await start('/webhooks');
    const delivery = createTestDelivery();
    const answer = await post(`${origin}/other`, delivery);
    expect(answer.contentType).toMatch(/^application\/json\b/);
    expect(answer).toMatchObject({ status: 404, body: { ok: false, error: 'not_found' } });
    expectAnswer(await post(`${origin}/webhooks`, delivery), 200, {
      ok: true,
      outcome: 'processed',
      idempotencyKey: delivery.idempotencyKey,
    });
  });

  it('ignores the query string when matching the path', async () => {
    const origin = await start('/webhooks');
    const delivery = createTestDelivery();
    expectAnswer(await post(`${origin}/webhooks?source=school&x=1`, delivery), 200, {
      ok: true,
      outcome: 'processed',
      idempotencyKey: delivery.idempotencyKey,
    });
  });

  it('answers on every path when no path is given', async () => {
    const origin = await start();
    const delivery = createTestDelivery();
    expect((await post(`${origin}/anything/at/all`, delivery)).status).toBe(200);
  });

  it('sends the Content-Length of the answer in bytes, for a key that is not ASCII', async () => {
    const origin = await start('/webhooks');
    const delivery = createTestDelivery(undefined, undefined, { idempotencyKey: 'ключ-ü-😀' });
    const response = await fetch(`${origin}/webhooks`, {
      method: 'POST',
      headers: delivery.headers,
      body: delivery.body,
    });
    const text = await response.text();
    expect(response.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
    expect(JSON.parse(text)).toMatchObject({ idempotencyKey: 'ключ-ü-😀' });
  });

  it('keeps the connection open after an answer other than 413', async () => {
    const origin = await start('/webhooks');
    const delivery = createTestDelivery();
    const response = await fetch(`${origin}/webhooks`, {
      method: 'POST',
      headers: delivery.headers,
      body: delivery.body,
    });
    await response.text();
    expect(response.status).toBe(200);
    expect(response.headers.get('connection')).not.toBe('close');
  });

  it('answers 500 body_unavailable after a listener read the stream, naming its own fix', async () => {
    const errors: SchoolhooksError[] = [];
    const receiver = createReceiver({ secret: SECRET }).onError((error) => void errors.push(error));
    const listener = nodeListener(receiver);
    const app = createServer(async (req, res) => {
      // A body parser of the app's own, ahead of the webhook listener.
      for await (const _chunk of req);
      await listener(req, res);
    });
    server = await listen(app.listen(0, '127.0.0.1'));
    expectAnswer(await post(server.url, createTestDelivery()), 500, {
      ok: false,
      outcome: 'body_unavailable',
    });
    expectOwnFix(errors[0], 'node');
  });
});

describe('the types of schoolhooks/node', () => {
  it('is a request listener of node:http, with or without a path', () => {
    // A user's code, compiled and never run.
    const compiles = (receiver: Receiver) => {
      createServer(nodeListener(receiver, { path: '/webhooks/school' }));
      createServer(nodeListener(receiver));
      // @ts-expect-error a path is a string
      nodeListener(receiver, { path: 42 });
    };
    expectTypeOf(compiles).toBeFunction();
    expectTypeOf(nodeListener).returns.returns.resolves.toBeVoid();
  });

  it('takes a `tenant` read from an IncomingMessage', () => {
    const compiles = (receiver: Receiver) => {
      nodeListener(receiver, { tenant: (req) => req.url?.split('?')[0]?.split('/')[3] });
      nodeListener(receiver, { tenant: (req: IncomingMessage) => req.headers.host });
      // @ts-expect-error a tenant is a string, not a number
      nodeListener(receiver, { tenant: () => 7 });
      // @ts-expect-error the request is node's IncomingMessage, not a Fetch Request
      nodeListener(receiver, { tenant: (request: Request) => request.url });
    };
    expectTypeOf(compiles).toBeFunction();
  });
});
