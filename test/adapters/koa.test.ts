import { bodyParser } from '@koa/bodyparser';
import Koa from 'koa';
import { createServer } from 'node:http';
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import { koaMiddleware } from '../../src/adapters/koa.js';
import {
  ConfigError,
  createReceiver,
  type Receiver,
  type SchoolhooksError,
} from '../../src/index.js';
import { createTestDelivery, SECRET, sign } from '../helpers/deliveries.js';
import {
  adapterSuite,
  expectAnswer,
  expectOwnFix,
  listen,
  post,
  tenantOfPath,
  type AdapterServer,
} from './suite.js';

function serveApp(app: Koa, path = '/webhooks'): Promise<AdapterServer> {
  return listen(createServer(app.callback()).listen(0, '127.0.0.1'), path);
}

adapterSuite(
  'koa',
  (receiver) => {
    // Koa logs the errors of clients that went away, which the suite makes on purpose.
    const app = new Koa();
    app.silent = true;
    app.use(koaMiddleware(receiver, { path: '/webhooks' }));
    return serveApp(app);
  },
  {
    tenants: {
      // Koa itself has no route parameters: the tenant is read from ctx.path.
      serve: (receiver) => {
        const app = new Koa();
        app.silent = true;
        app.use(koaMiddleware(receiver, { tenant: (ctx) => tenantOfPath(ctx.path) }));
        return serveApp(app, '/webhooks/school');
      },
      withoutTenant: (receiver) => koaMiddleware(receiver, { path: '/webhooks' }),
    },
  },
);

describe('koaMiddleware in a Koa app', () => {
  let server: AdapterServer | undefined;
  afterEach(() => server?.close());

  /** A receiver that records handled keys and errors, and the app built around its middleware. */
  async function start(build: (app: Koa, middleware: Koa.Middleware) => void) {
    const handled: string[] = [];
    const errors: SchoolhooksError[] = [];
    const receiver = createReceiver({ secret: SECRET })
      .onAny((event) => void handled.push(event.idempotencyKey))
      .onError((error) => void errors.push(error));
    const app = new Koa();
    build(app, koaMiddleware(receiver, { path: '/webhooks/school' }));
    app.use((ctx) => {
      if (ctx.path === '/orders') ctx.body = { parsed: (ctx.request as { body?: unknown }).body };
    });
    server = await serveApp(app, '');
    return { origin: server.url, handled, errors };
  }

  async function postOrder(origin: string) {
    const response = await fetch(`${origin}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 7 }),
    });
    return response.json();
  }

  it.each([
    ['before', (app: Koa, middleware: Koa.Middleware) => app.use(middleware).use(bodyParser())],
    ['after', (app: Koa, middleware: Koa.Middleware) => app.use(bodyParser()).use(middleware)],
  ])(
    'verifies the raw bytes %s a body parser, and the app keeps its parsed JSON',
    async (_where, build) => {
      const { origin, handled } = await start(build);
      // Whitespace a re-serialisation would lose: only the raw bytes verify.
      const delivery = createTestDelivery();
      const body = delivery.body.replace('{', '{\n  ');
      const headers = { ...delivery.headers, signature: sign(body) };
      expectAnswer(await post(`${origin}/webhooks/school`, { body, headers }), 200, {
        ok: true,
        outcome: 'processed',
        idempotencyKey: delivery.idempotencyKey,
      });
      expect(handled).toEqual([delivery.idempotencyKey]);
      expect(await postOrder(origin)).toEqual({ parsed: { id: 7 } });
    },
  );

  it('answers 500 body_unavailable after a parser that kept no raw body', async () => {
    const { origin, handled, errors } = await start((app, middleware) => {
      app.use(async (ctx, next) => {
        // A parser that reads the stream and keeps only the parsed value.
        const chunks: Buffer[] = [];
        for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
        (ctx.request as { body?: unknown }).body = JSON.parse(Buffer.concat(chunks).toString());
        await next();
      });
      app.use(middleware);
    });
    expectAnswer(await post(`${origin}/webhooks/school`, createTestDelivery()), 500, {
      ok: false,
      outcome: 'body_unavailable',
    });
    expect(handled).toEqual([]);
    expect(errors[0]).toBeInstanceOf(ConfigError);
    expectOwnFix(errors[0], 'koa');
  });

  it('passes other paths on to the next middleware', async () => {
    const { origin } = await start((app, middleware) => app.use(bodyParser()).use(middleware));
    expect(await postOrder(origin)).toEqual({ parsed: { id: 7 } });
  });

  it('answers deliveries on every path when given no path', async () => {
    const receiver = createReceiver({ secret: SECRET }).onAny(() => {});
    const app = new Koa();
    app.use(koaMiddleware(receiver));
    server = await serveApp(app, '');
    for (const path of ['/', '/anything/else']) {
      const delivery = createTestDelivery();
      expectAnswer(await post(`${server.url}${path}`, delivery), 200, {
        ok: true,
        outcome: 'processed',
        idempotencyKey: delivery.idempotencyKey,
      });
    }
  });
});

describe('the types of schoolhooks/koa', () => {
  it('is a Koa middleware, with or without a path', () => {
    // A user's code, compiled and never run.
    const compiles = (app: Koa, receiver: Receiver) => {
      app.use(koaMiddleware(receiver, { path: '/webhooks/school' }));
      app.use(koaMiddleware(receiver));
      // @ts-expect-error a path is a string
      koaMiddleware(receiver, { path: 42 });
    };
    expectTypeOf(compiles).toBeFunction();
    expectTypeOf(koaMiddleware).returns.toEqualTypeOf<Koa.Middleware>();
  });

  it("takes a `tenant` read from Koa's Context, @koa/router's params included", () => {
    const compiles = (receiver: Receiver) => {
      // @koa/router puts the route's parameters on ctx.params.
      koaMiddleware(receiver, { tenant: (ctx) => (ctx.params as { tenant?: string }).tenant });
      koaMiddleware(receiver, {
        path: '/webhooks',
        tenant: (ctx: Koa.Context) => ctx.get('x-school'),
      });
      // @ts-expect-error a tenant is a string, not a number
      koaMiddleware(receiver, { tenant: () => 7 });
      // @ts-expect-error Koa's middleware gets its Context, not a Request
      koaMiddleware(receiver, { tenant: (request: Request) => request.url });
    };
    expectTypeOf(compiles).toBeFunction();
  });
});
