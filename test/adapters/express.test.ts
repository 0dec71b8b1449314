import express5, { type Express } from 'express';
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import { expressMiddleware, rawBodySaver } from '../../src/adapters/express.js';
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
  type AdapterServer,
} from './suite.js';

function serveApp(app: Express, path = '/webhooks'): Promise<AdapterServer> {
  return listen(createServer(app).listen(0, '127.0.0.1'), path);
}

// The peer range allows Express 4 too: the same cases run on both (express4 is an npm alias).
const express4 = createRequire(import.meta.url)('express4') as typeof express5;

for (const [version, express] of [
  ['5', express5],
  ['4', express4],
] as const) {
  adapterSuite(
    `express ${version}`,
    (receiver) => {
      const app = express();
      app.all('/webhooks', expressMiddleware(receiver));
      return serveApp(app);
    },
    {
      tenants: {
        serve: (receiver) => {
          const app = express();
          const tenant = (req: express5.Request) => req.params.tenant;
          app.post('/webhooks/school/:tenant', expressMiddleware(receiver, { tenant }));
          return serveApp(app, '/webhooks/school');
        },
        withoutTenant: (receiver) => expressMiddleware(receiver),
      },
    },
  );

  describe(`expressMiddleware in an Express ${version} app`, () => {
    let server: AdapterServer | undefined;
    afterEach(() => server?.close());

    /** A receiver that records handled keys and errors, and the app built around its middleware. */
    async function start(build: (app: Express, middleware: express5.RequestHandler) => void) {
      const handled: string[] = [];
      const errors: SchoolhooksError[] = [];
      const receiver = createReceiver({ secret: SECRET })
        .onAny((event) => void handled.push(event.idempotencyKey))
        .onError((error) => void errors.push(error));
      const app = express();
      build(app, expressMiddleware(receiver));
      server = await serveApp(app, '');
      return { origin: server.url, handled, errors };
    }

    it('works mounted on a Router', async () => {
      const { origin, handled } = await start((app, middleware) => {
        const router = express.Router();
        router.post('/school', middleware);
        app.use('/webhooks', router);
      });
      const delivery = createTestDelivery();
      expectAnswer(await post(`${origin}/webhooks/school`, delivery), 200, {
        ok: true,
        outcome: 'processed',
        idempotencyKey: delivery.idempotencyKey,
      });
      expect(handled).toEqual([delivery.idempotencyKey]);
    });

    it('answers 500 body_unavailable behind express.json(), naming the fix in a ConfigError', async () => {
      const { origin, handled, errors } = await start((app, middleware) => {
        app.use(express.json());
        app.post('/webhooks', middleware);
      });
      const delivery = createTestDelivery();
      expectAnswer(await post(`${origin}/webhooks`, delivery), 500, {
        ok: false,
        outcome: 'body_unavailable',
      });
      expect(handled).toEqual([]);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(ConfigError);
      expect(errors[0]?.message).toMatch(/rawBodySaver/);
      expectOwnFix(errors[0], 'express');
    });

    it('verifies the raw bytes kept by express.json({ verify: rawBodySaver })', async () => {
      const { origin, handled } = await start((app, middleware) => {
        app.use(express.json({ verify: rawBodySaver }));
        app.post('/webhooks', middleware);
      });
      // Whitespace a re-serialisation would lose: only the raw bytes verify.
      const delivery = createTestDelivery();
      const body = delivery.body.replace('{', '{\n  ');
      const headers = { ...delivery.headers, signature: sign(body) };
      expectAnswer(await post(`${origin}/webhooks`, { body, headers }), 200, {
        ok: true,
        outcome: 'processed',
        idempotencyKey: delivery.idempotencyKey,
      });
      expect(handled).toEqual([delivery.idempotencyKey]);
    });

    it("verifies the Buffer left by express.raw({ type: 'application/json' })", async () => {
      const { origin, handled } = await start((app, middleware) => {
        app.post('/webhooks', express.raw({ type: 'application/json' }), middleware);
      });
      const delivery = createTestDelivery();
      expectAnswer(await post(`${origin}/webhooks`, delivery), 200, {
        ok: true,
        outcome: 'processed',
        idempotencyKey: delivery.idempotencyKey,
      });
      expect(handled).toEqual([delivery.idempotencyKey]);
    });

    // Express 4 has no list parameters: only Express 5 gives a wildcard's segments as one.
    if (version === '5')
      it("answers 404 unknown_tenant when the route's tenant is a wildcard's list of segments", async () => {
        const receiver = createReceiver({ secret: () => SECRET });
        const app = express();
        app.post(
          '/webhooks/school/*tenant',
          expressMiddleware(receiver, { tenant: (req) => req.params.tenant }),
        );
        server = await serveApp(app, '');
        const delivery = createTestDelivery();
        expectAnswer(await post(`${server.url}/webhooks/school/a/b`, delivery), 404, {
          ok: false,
          outcome: 'unknown_tenant',
        });
      });

    it('still answers 405 and 415 first behind express.json()', async () => {
      const { origin } = await start((app, middleware) => {
        app.use(express.json());
        app.all('/webhooks', middleware);
      });
      const delivery = createTestDelivery();
      expect((await post(`${origin}/webhooks`, {}, 'GET')).status).toBe(405);
      const headers = { ...delivery.headers, 'content-type': 'text/plain' };
      expect((await post(`${origin}/webhooks`, { body: delivery.body, headers })).status).toBe(415);
    });
  });
}

describe('the types of schoolhooks/express', () => {
  it('is a request handler, and rawBodySaver is the verify option of express.json()', () => {
    // A user's code, compiled and never run.
    const compiles = (app: Express, receiver: Receiver) => {
      app.use(express5.json({ verify: rawBodySaver }));
      app.post('/webhooks/school', expressMiddleware(receiver));
      express5.Router().post('/school', expressMiddleware(receiver));
      // @ts-expect-error the receiver is required
      expressMiddleware();
      // @ts-expect-error a receiver, not its options
      expressMiddleware({ secret: SECRET });
    };
    expectTypeOf(compiles).toBeFunction();
    expectTypeOf(expressMiddleware).returns.toEqualTypeOf<express5.RequestHandler>();
  });

  it('takes a `tenant` read from the route, as Express 5 types its parameters', () => {
    const compiles = (app: Express, receiver: Receiver) => {
      app.post(
        '/webhooks/school/:tenant',
        expressMiddleware(receiver, { tenant: (req) => req.params.tenant }),
      );
      expressMiddleware(receiver, { tenant: (req: express5.Request) => req.get('x-school') });
      // @ts-expect-error a tenant is a string, not a number
      expressMiddleware(receiver, { tenant: () => 7 });
      // @ts-expect-error the request is Express's
      expressMiddleware(receiver, { tenant: (req: Request) => req.url });
    };
    expectTypeOf(compiles).toBeFunction();
  });
});
