import { serve } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import type { Server } from 'node:http';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, expectTypeOf, it, vi } from 'vitest';
import { honoHandler } from '../../src/adapters/hono.js';
import {
  ConfigError,
  createReceiver,
  type Receiver,
  type SchoolhooksError,
} from '../../src/index.js';
import { createTestDelivery, SECRET } from '../helpers/deliveries.js';
import {
  adapterSuite,
  expectAnswer,
  expectOwnFix,
  listen,
  post,
  type AdapterServer,
} from './suite.js';

function serveApp(app: Hono, path = '/webhooks'): Promise<AdapterServer> {
  return listen(serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }) as Server, path);
}

/** The tenant routes: `/webhooks/school/:tenant`, the tenant read with `c.req.param`. */
const tenantRoutes = (serveWith: (app: Hono, path: string) => Promise<AdapterServer>) => ({
  serve: (receiver: Receiver) =>
    serveWith(
      new Hono().post(
        '/webhooks/school/:tenant',
        honoHandler(receiver, { tenant: (c) => c.req.param('tenant') }),
      ),
      '/webhooks/school',
    ),
  withoutTenant: (receiver: Receiver) => honoHandler(receiver),
});

adapterSuite(
  'hono on @hono/node-server',
  (receiver) => serveApp(new Hono().all('/webhooks', honoHandler(receiver))),
  { tenants: tenantRoutes(serveApp) },
);

/** The app without the server's env: the body is read from the Fetch Request, as on Bun or Deno. */
function serveWithoutEnv(app: Hono, path = '/webhooks'): Promise<AdapterServer> {
  const fetch = (request: Request) => app.fetch(request);
  return listen(serve({ fetch, hostname: '127.0.0.1', port: 0 }) as Server, path);
}

adapterSuite(
  'hono reading the Fetch Request (no env.incoming)',
  (receiver) => serveWithoutEnv(new Hono().all('/webhooks', honoHandler(receiver))),
  { tenants: tenantRoutes(serveWithoutEnv) },
);

describe('honoHandler in a Hono app', () => {
  let server: AdapterServer | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await server?.close();
  });

  it('reads the Node request itself on @hono/node-server: no web stream is built', async () => {
    const toWeb = vi.spyOn(Readable, 'toWeb');
    const receiver = createReceiver({ secret: SECRET }).onAny(() => {});
    server = await serveApp(new Hono().post('/webhooks', honoHandler(receiver)));
    const delivery = createTestDelivery();
    expectAnswer(await post(server.url, delivery), 200, {
      ok: true,
      outcome: 'processed',
      idempotencyKey: delivery.idempotencyKey,
    });
    expect(toWeb).not.toHaveBeenCalled();
  });

  it('reads the Fetch Request where the server passes no Node request, with arrayBuffer()', async () => {
    const toWeb = vi.spyOn(Readable, 'toWeb');
    const receiver = createReceiver({ secret: SECRET }).onAny(() => {});
    server = await serveWithoutEnv(new Hono().post('/webhooks', honoHandler(receiver)));
    const delivery = createTestDelivery();
    expectAnswer(await post(server.url, delivery), 200, {
      ok: true,
      outcome: 'processed',
      idempotencyKey: delivery.idempotencyKey,
    });
    // A declared length within the limit: the server's own arrayBuffer(), no web stream built.
    expect(toWeb).not.toHaveBeenCalled();
  });

  it('works on a sub-app route', async () => {
    const receiver = createReceiver({ secret: SECRET }).onAny(() => {});
    const hooks = new Hono().post('/school', honoHandler(receiver));
    server = await serveApp(new Hono().route('/webhooks', hooks), '/webhooks/school');
    const delivery = createTestDelivery();
    expectAnswer(await post(server.url, delivery), 200, {
      ok: true,
      outcome: 'processed',
      idempotencyKey: delivery.idempotencyKey,
    });
  });

  it('answers 500 body_unavailable when a middleware already read the body', async () => {
    const errors: SchoolhooksError[] = [];
    const receiver = createReceiver({ secret: SECRET }).onError((error) => void errors.push(error));
    const app = new Hono();
    app.use(async (c, next) => {
      await c.req.json();
      await next();
    });
    app.post('/webhooks', honoHandler(receiver));
    server = await serveApp(app);
    expectAnswer(await post(server.url, createTestDelivery()), 500, {
      ok: false,
      outcome: 'body_unavailable',
    });
    expect(errors[0]).toBeInstanceOf(ConfigError);
    expectOwnFix(errors[0], 'hono');
  });
});

describe('the types of schoolhooks/hono', () => {
  it('is a Hono handler that resolves to a Response', () => {
    // A user's code, compiled and never run.
    const compiles = (receiver: Receiver) => {
      new Hono().post('/webhooks/school', honoHandler(receiver));
      new Hono().route('/webhooks', new Hono().all('/school', honoHandler(receiver)));
      // @ts-expect-error a receiver, not its options
      honoHandler({ secret: SECRET });
    };
    expectTypeOf(compiles).toBeFunction();
    expectTypeOf(honoHandler).returns.returns.resolves.toEqualTypeOf<Response>();
  });

  it("takes a `tenant` read from the route with Hono's Context", () => {
    const compiles = (receiver: Receiver) => {
      new Hono().post(
        '/webhooks/school/:tenant',
        honoHandler(receiver, { tenant: (c) => c.req.param('tenant') }),
      );
      honoHandler(receiver, { tenant: (c: Context) => c.req.header('x-school') });
      // @ts-expect-error a tenant is a string, not a number
      honoHandler(receiver, { tenant: () => 7 });
      // @ts-expect-error Hono's handlers get its Context, not a Request
      honoHandler(receiver, { tenant: (request: Request) => request.url });
    };
    expectTypeOf(compiles).toBeFunction();
  });
});
