import Fastify, { type FastifyInstance } from 'fastify';
import type { Server } from 'node:http';
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import { schoolhooksPlugin } from '../../adapters/fastify.js';
import { createReceiver, type Receiver, type SchoolhooksError } from '../../src/index.js';
import { createTestDelivery, SECRET } from '../helpers/deliveries.js';
import {
  adapterSuite,
  expectAnswer,
  expectOwnFix,
  listen,
  post,
  type AdapterServer,
} from './suite.js';
import type { FastifyInstance as App, FastifyRequest } from 'fastify';

async function serveApp(app: FastifyInstance, path = '/webhooks'): Promise<AdapterServer> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return listen(app.server as Server, path);
}

adapterSuite(
  'fastify',
  async (receiver) => {
    const app = Fastify();
    await app.register(schoolhooksPlugin, { receiver, path: '/webhooks' });
    return serveApp(app);
  },
  {
    tenants: {
      serve: async (receiver) => {
        const app = Fastify();
        await app.register(schoolhooksPlugin, {
          receiver,
          path: '/webhooks/school/:tenant',
          tenant: (request) => (request.params as { tenant?: string }).tenant,
        });
        return serveApp(app, '/webhooks/school');
      },
      withoutTenant: async (receiver) => {
        const app = Fastify();
        try {
          await app.register(schoolhooksPlugin, { receiver, path: '/webhooks' });
          await app.ready();
        } finally {
          await app.close();
        }
      },
    },
  },
);

describe('schoolhooksPlugin in a Fastify app', () => {
  let server: AdapterServer | undefined;
  afterEach(() => server?.close());

  async function start() {
    const handled: string[] = [];
    const receiver = createReceiver({ secret: SECRET }).onAny(
      (event) => void handled.push(event.idempotencyKey),
    );
    const app = Fastify();
    app.post('/orders', async (request) => ({ parsed: request.body }));
    await app.register(schoolhooksPlugin, { receiver, path: '/webhooks/school' });
    server = await serveApp(app, '');
    return { origin: server.url, handled };
  }

  it("leaves the app's other routes to Fastify's JSON parser", async () => {
    const { origin } = await start();
    const response = await fetch(`${origin}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 7 }),
    });
    expect(await response.json()).toEqual({ parsed: { id: 7 } });
  });

  it('verifies the raw bytes on its own route, next to a parsed one', async () => {
    const { origin, handled } = await start();
    const delivery = createTestDelivery();
    expectAnswer(await post(`${origin}/webhooks/school`, delivery), 200, {
      ok: true,
      outcome: 'processed',
      idempotencyKey: delivery.idempotencyKey,
    });
    expect(handled).toEqual([delivery.idempotencyKey]);
  });

  it('answers 500 body_unavailable when a hook read the stream first, naming schoolhooksPlugin', async () => {
    const errors: SchoolhooksError[] = [];
    const receiver = createReceiver({ secret: SECRET }).onError((error) => void errors.push(error));
    const app = Fastify();
    // A hook of the app's that reads every request's raw stream, ahead of the plugin's route.
    app.addHook('preHandler', async (request) => {
      for await (const _chunk of request.raw);
    });
    await app.register(schoolhooksPlugin, { receiver, path: '/webhooks' });
    server = await serveApp(app);
    expectAnswer(await post(server.url, createTestDelivery()), 500, {
      ok: false,
      outcome: 'body_unavailable',
    });
    expectOwnFix(errors[0], 'fastify');
  });
});

describe('the types of schoolhooks/fastify', () => {
  it('registers with a receiver and a path', () => {
    // A user's code, compiled and never run.
    const compiles = async (app: App, receiver: Receiver) => {
      await app.register(schoolhooksPlugin, { receiver, path: '/webhooks/school' });
      // @ts-expect-error the path is required
      await app.register(schoolhooksPlugin, { receiver });
    };
    expectTypeOf(compiles).toBeFunction();
  });

  it("takes a `tenant` read from Fastify's request", () => {
    const compiles = async (app: App, receiver: Receiver) => {
      await app.register(schoolhooksPlugin, {
        receiver,
        path: '/webhooks/school/:tenant',
        tenant: (request) => (request.params as { tenant?: string }).tenant,
      });
      await app.register(schoolhooksPlugin, {
        receiver,
        path: '/webhooks/school',
        tenant: (request: FastifyRequest) => request.hostname,
      });
      // @ts-expect-error a tenant is a string, not a number
      await app.register(schoolhooksPlugin, { receiver, path: '/x', tenant: () => 7 });
    };
    expectTypeOf(compiles).toBeFunction();
  });
});
