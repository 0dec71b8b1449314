import Fastify, { type FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import { schoolhooksPlugin } from '../../src/adapters/fastify.js';
import { nodeListener } from '../../src/adapters/node.js';
import { MAX_TENANT_LENGTH } from '../../src/keys/delivery-key.js';
import {
  ConfigError,
  createReceiver,
  type Receiver,
  type SchoolhooksError,
} from '../../src/index.js';
import { createTestDelivery, SECRET } from '../helpers/deliveries.js';
import { tenantDelivery, tenantOfRequest, tenantSecret } from '../helpers/tenants.js';
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
        const app = Fastify({ routerOptions: { maxParamLength: 256 } });
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

describe('tenant names in a route parameter', () => {
  const TENANT_ROUTE = {
    path: '/t/:tenant',
    tenant: (request: FastifyRequest) => (request.params as { tenant?: string }).tenant,
  };

  /** What registering the tenant route on `app` throws, if anything; the app closed after. */
  async function registering(app: FastifyInstance, route = TENANT_ROUTE): Promise<unknown> {
    const receiver = createReceiver({ secret: () => SECRET, logger: false });
    try {
      await app.register(schoolhooksPlugin, { receiver, ...route });
      await app.ready();
      return undefined;
    } catch (error) {
      return error;
    } finally {
      await app.close();
    }
  }

  it.each([
    ['Fastify’s default (100)', {}, 100],
    ['routerOptions.maxParamLength 255', { routerOptions: { maxParamLength: 255 } }, 255],
  ])('refuses an app whose router cuts a parameter shorter: %s', async (_what, options, limit) => {
    const error = await registering(Fastify(options));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('config');
    expect((error as ConfigError).message).toBe(
      `the route /t/:tenant has a parameter, and this app's router answers 414 to one over ` +
        `${limit} characters, before any route runs: a tenant name of up to 256 would never ` +
        'reach the receiver. Create the app with Fastify({ routerOptions: { maxParamLength: ' +
        '256 } }) (docs/frameworks/fastify.md)',
    );
  });

  it.each([
    ['routerOptions.maxParamLength 256', () => Fastify({ routerOptions: { maxParamLength: 256 } })],
    [
      'routerOptions of its own, and the older maxParamLength 300',
      () => Fastify({ routerOptions: { caseSensitive: true }, maxParamLength: 300 }),
    ],
  ])('accepts an app that lets every tenant name through: %s', async (_what, make) => {
    expect(await registering(make())).toBeUndefined();
  });

  it('checks nothing on a path without a parameter (`::` is a colon)', async () => {
    const byHost = { path: '/t/a::b', tenant: (request: FastifyRequest) => request.hostname };
    expect(await registering(Fastify(), byHost)).toBeUndefined();
  });

  describe('over HTTP, against the node adapter', () => {
    const LONG = 's'.repeat(200);
    const LONGEST = 'é'.repeat(MAX_TENANT_LENGTH);

    /** One receiver (one lookup, counted) behind Fastify's route `/t/:tenant` and node's `/t/…`. */
    async function bothServers() {
      const asked: string[] = [];
      const receiver = createReceiver({
        logger: false,
        secret: ({ tenant }) => {
          asked.push(tenant);
          return [LONG, LONGEST].includes(tenant) ? tenantSecret(tenant) : undefined;
        },
      }).onAny(() => {});
      const app = Fastify({ routerOptions: { maxParamLength: MAX_TENANT_LENGTH } });
      await app.register(schoolhooksPlugin, { receiver, ...TENANT_ROUTE });
      const fastify = await serveApp(app, '/t');
      const node = await listen(
        createServer(nodeListener(receiver, { tenant: tenantOfRequest })).listen(0, '127.0.0.1'),
        '/t',
      );
      servers.push(fastify, node);
      return { asked, fastify: fastify.url, node: node.url };
    }

    const servers: AdapterServer[] = [];
    afterEach(async () => {
      await Promise.all(servers.splice(0).map((server) => server.close()));
    });

    /** The status and the body's outcome (or Fastify's error code) of a delivery to `url`. */
    async function said(url: string, secret: string): Promise<string> {
      const delivery = tenantDelivery(randomUUID(), new Date().toISOString(), secret);
      const response = await fetch(url, { method: 'POST', ...delivery });
      const body = (await response.json()) as { outcome?: string; code?: string };
      return `${response.status} ${body.outcome ?? body.code}`;
    }

    it.each([
      ['a 200-character name it knows', LONG, '200 processed'],
      ['the longest name (256 code units, 1 536 characters encoded)', LONGEST, '200 processed'],
      ['a 200-character name it does not know', 'x'.repeat(200), '404 unknown_tenant'],
    ])('answers %s as node does: %s', async (_what, tenant, answer) => {
      const { asked, fastify, node } = await bothServers();
      const path = `/${encodeURIComponent(tenant)}`;
      expect(await said(fastify + path, tenantSecret(tenant))).toBe(answer);
      expect(await said(node + path, tenantSecret(tenant))).toBe(answer);
      expect(asked).toEqual([tenant]);
    });

    it('leaves a lone surrogate (%ED%A0%80) to Fastify’s 400, where node answers 404; neither asks the lookup', async () => {
      const { asked, fastify, node } = await bothServers();
      const path = '/school-%ED%A0%80';
      expect(await said(fastify + path, SECRET)).toBe('400 FST_ERR_BAD_URL');
      expect(await said(node + path, SECRET)).toBe('404 unknown_tenant');
      expect(asked).toEqual([]);
    });

    it('leaves a name over 256 characters, which is no tenant’s, to Fastify’s 414, where node answers 404', async () => {
      const { asked, fastify, node } = await bothServers();
      const path = `/${'x'.repeat(MAX_TENANT_LENGTH + 1)}`;
      expect(await said(fastify + path, SECRET)).toBe('414 FST_ERR_MAX_PARAM_LENGTH');
      expect(await said(node + path, SECRET)).toBe('404 unknown_tenant');
      expect(asked).toEqual([]);
    });
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
