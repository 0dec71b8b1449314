import {
  Body,
  Controller,
  Inject,
  Injectable,
  Module,
  Post,
  type DynamicModule,
  type INestApplication,
  type LoggerService,
  type Provider,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import express from 'express';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Agent, request as httpRequest, type Server } from 'node:http';
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import {
  OnSchoolEvent,
  SchoolhooksModule,
  SchoolhooksReceiver,
  type SchoolhooksRouteRequest,
} from '../../src/adapters/nestjs.js';
import {
  ConfigError,
  type Receiver,
  type SchoolhooksError,
  type WebhookEvent,
} from '../../src/index.js';
import { createReceiver } from '../../src/receiving/receiver.js';
import {
  createTestDelivery,
  fixtureDelivery,
  SECRET,
  sign,
  type Delivery,
} from '../helpers/deliveries.js';
import {
  adapterSuite,
  expectAnswer,
  expectOwnFix,
  listen,
  post,
  type AdapterServer,
} from './suite.js';
import { failureOf } from '../helpers/failure-of.js';

type Platform = 'express' | 'fastify';

@Controller()
class Orders {
  @Post('orders')
  create(@Body() body: unknown) {
    return { parsed: body };
  }
}

function appModule(schoolhooks: DynamicModule, providers: Provider[] = []) {
  @Module({ imports: [schoolhooks], controllers: [Orders], providers })
  class AppModule {}
  return AppModule;
}

/** Lines the app logged, for the test to read. */
class Recorded implements LoggerService {
  readonly lines: string[] = [];
  /** Each line as `[context] message`: Nest passes the logger's context last. */
  #record(message: unknown, rest: unknown[]) {
    const context = rest.at(-1);
    this.lines.push(`[${typeof context === 'string' ? context : ''}] ${String(message)}`);
  }
  log(message: unknown, ...rest: unknown[]) {
    this.#record(message, rest);
  }
  error(message: unknown, ...rest: unknown[]) {
    this.#record(message, rest);
  }
  warn(message: unknown, ...rest: unknown[]) {
    this.#record(message, rest);
  }
}

interface Start {
  platform: Platform;
  module: ReturnType<typeof appModule>;
  /** Nest's own switch for the raw body. */
  rawBody?: boolean;
  /** The JSON parser's limit; the receiver's maxBodyBytes in the suite. */
  bodyLimit?: number;
  logger?: LoggerService | false;
}

/** Create the app on one platform and listen on loopback. */
async function startNest({
  platform,
  module,
  rawBody = true,
  bodyLimit = 1024 * 1024,
  logger = false,
}: Start): Promise<{ app: INestApplication; server: AdapterServer }> {
  // abortOnError: false, so a start-up error rejects instead of ending the process.
  const options = { rawBody, logger, abortOnError: false };
  let app: INestApplication;
  if (platform === 'express') {
    const express = await NestFactory.create<NestExpressApplication>(module, options);
    express.useBodyParser('json', { limit: bodyLimit });
    app = express;
  } else {
    app = await NestFactory.create<NestFastifyApplication>(
      module,
      new FastifyAdapter({ bodyLimit }),
      options,
    );
  }
  await app.listen(0, '127.0.0.1');
  const listening = await listen(app.getHttpServer() as Server, '');
  return {
    app,
    server: {
      url: listening.url,
      close: async () => {
        (app.getHttpServer() as Server).closeAllConnections();
        await app.close();
      },
    },
  };
}

/** Post a fixture's signed delivery to the receiver at `origin` and expect it processed. */
async function postProcessed(origin: string, event = 'PaymentCompleted'): Promise<Delivery> {
  const delivery = fixtureDelivery(event);
  expectAnswer(await post(`${origin}/webhooks/school`, delivery), 200, {
    ok: true,
    outcome: 'processed',
    idempotencyKey: delivery.idempotencyKey,
  });
  return delivery;
}

for (const platform of ['express', 'fastify'] as const) {
  adapterSuite(
    `nestjs on ${platform}`,
    async (receiver) => {
      const module = appModule(SchoolhooksModule.forRoot({ receiver, path: '/webhooks' }));
      const { server } = await startNest({ platform, module, bodyLimit: receiver.maxBodyBytes });
      return { ...server, url: `${server.url}/webhooks` };
    },
    {
      wholeBodies: true,
      frameworkRefusals: true,
      tenants: {
        serve: async (receiver) => {
          const module = appModule(
            SchoolhooksModule.forRoot({
              receiver,
              path: '/webhooks/school/:tenant',
              tenant: (req) => req.params?.tenant,
            }),
          );
          const { server } = await startNest({ platform, module });
          return { ...server, url: `${server.url}/webhooks/school` };
        },
        // Nest makes the controller, and so the adapter, when the app is created.
        withoutTenant: async (receiver) => {
          const module = appModule(SchoolhooksModule.forRoot({ receiver, path: '/webhooks' }));
          const { server } = await startNest({ platform, module });
          await server.close();
        },
      },
    },
  );

  describe(`SchoolhooksModule in a Nest app on ${platform}`, () => {
    let server: AdapterServer | undefined;
    afterEach(() => server?.close());

    @Injectable()
    class Payments {
      readonly granted: number[] = [];
      @OnSchoolEvent('PaymentCompleted')
      async grant(event: WebhookEvent<'PaymentCompleted'>) {
        this.granted.push(event.data.payment.invoice.totalAmount);
      }
    }

    @Injectable()
    class Audit {
      readonly seen: string[] = [];
      constructor(@Inject(SchoolhooksReceiver) receiver: SchoolhooksReceiver) {
        receiver.onError((error: SchoolhooksError) => void this.seen.push(error.code));
      }
      @OnSchoolEvent(['UserSignedUp', 'CourseCompleted'])
      record(event: WebhookEvent<'UserSignedUp' | 'CourseCompleted'>) {
        this.seen.push(event.event);
      }
    }

    async function start(schoolhooks: DynamicModule, extra: Partial<Start> = {}) {
      const module = appModule(schoolhooks, [Payments, Audit]);
      const started = await startNest({ platform, module, ...extra });
      server = started.server;
      return { origin: server.url, app: started.app };
    }

    it('runs @OnSchoolEvent methods with this = their provider', async () => {
      const { origin, app } = await start(
        SchoolhooksModule.forRoot({ secret: SECRET, path: '/webhooks/school' }),
      );
      const payment = await postProcessed(origin);
      await postProcessed(origin, 'UserSignedUp');
      const amount = (
        JSON.parse(payment.body) as { data: { payment: { invoice: { totalAmount: number } } } }
      ).data.payment.invoice.totalAmount;
      expect(app.get(Payments).granted).toEqual([amount]);
      expect(app.get(Audit).seen).toEqual(['UserSignedUp']);
    });

    it('builds the receiver with forRootAsync from injected providers, and injects it', async () => {
      const SECRET_TOKEN = Symbol('secret');
      @Module({ providers: [{ provide: SECRET_TOKEN, useValue: SECRET }], exports: [SECRET_TOKEN] })
      class Secrets {}
      const { origin, app } = await start(
        SchoolhooksModule.forRootAsync({
          path: '/webhooks/school',
          imports: [Secrets],
          inject: [SECRET_TOKEN],
          useFactory: (secret: string) => ({ secret }),
        }),
      );
      const delivery = createTestDelivery();
      const headers = { ...delivery.headers, signature: sign(delivery.body, 'another secret') };
      expectAnswer(await post(`${origin}/webhooks/school`, { body: delivery.body, headers }), 401, {
        ok: false,
        outcome: 'invalid_signature',
      });
      expect(app.get(Audit).seen).toEqual(['invalid_signature']);
      expect(app.get<Receiver>(SchoolhooksReceiver).maxBodyBytes).toBe(1024 * 1024);
    });

    it('builds the receiver with forRootAsync from a factory that injects nothing', async () => {
      // Without imports or inject the module imports nothing more and the factory gets no argument.
      let given: unknown[] | undefined;
      const { origin } = await start(
        SchoolhooksModule.forRootAsync({
          path: '/webhooks/school',
          useFactory: async (...args: never[]) => {
            given = args;
            return { secret: SECRET };
          },
        }),
      );
      expect(given).toEqual([]);
      await postProcessed(origin);
    });

    it("leaves the app's own JSON routes parsed", async () => {
      const { origin } = await start(
        SchoolhooksModule.forRoot({ secret: SECRET, path: '/webhooks/school' }),
      );
      const response = await fetch(`${origin}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 7 }),
      });
      expect(await response.json()).toEqual({ parsed: { id: 7 } });
    });

    it('answers 500 body_unavailable without rawBody: true, and logs the fix', async () => {
      const logger = new Recorded();
      const { origin, app } = await start(
        SchoolhooksModule.forRoot({ secret: SECRET, path: '/webhooks/school' }),
        { rawBody: false, logger },
      );
      expectAnswer(await post(`${origin}/webhooks/school`, createTestDelivery()), 500, {
        ok: false,
        outcome: 'body_unavailable',
      });
      expect(app.get(Audit).seen).toEqual(['config']);
      expect(logger.lines.join('\n')).toContain(
        '[SchoolhooksModule] the raw request body is not available: create the app with ' +
          'NestFactory.create(AppModule, { rawBody: true })',
      );
    });

    it("tells onError the rawBody fix of Nest, and no other framework's", async () => {
      const errors: SchoolhooksError[] = [];
      const receiver = createReceiver({ secret: SECRET }).onError((error) => {
        errors.push(error);
      });
      const { origin } = await start(
        SchoolhooksModule.forRoot({ receiver, path: '/webhooks/school' }),
        { rawBody: false },
      );
      expectAnswer(await post(`${origin}/webhooks/school`, createTestDelivery()), 500, {
        ok: false,
        outcome: 'body_unavailable',
      });
      expectOwnFix(errors[0], 'nestjs');
    });

    it('reads a body Nest did not parse without rawBody: true, and answers its 415', async () => {
      const { origin } = await start(
        SchoolhooksModule.forRoot({ secret: SECRET, path: '/webhooks/school' }),
        { rawBody: false },
      );
      const delivery = createTestDelivery();
      const headers = { ...delivery.headers, 'content-type': 'text/plain' };
      expectAnswer(await post(`${origin}/webhooks/school`, { body: delivery.body, headers }), 415, {
        ok: false,
        outcome: 'unsupported_media_type',
      });
    });

    it('logs the rawBody fix only for body_unavailable, not for a delivery or a GET', async () => {
      const logger = new Recorded();
      const { origin } = await start(
        SchoolhooksModule.forRoot({ secret: SECRET, path: '/webhooks/school' }),
        { logger },
      );
      await postProcessed(origin);
      const get = await fetch(`${origin}/webhooks/school`);
      expect(get.status).toBe(405);
      expect(logger.lines.join('\n')).not.toContain('rawBody: true');
    });

    it('registers @OnSchoolEvent methods of a class decorated while the app starts', async () => {
      // Decorated here, not at import: the decorator's own work is part of this test.
      @Injectable()
      class Late {
        readonly seen: string[] = [];
        @OnSchoolEvent('PaymentCompleted')
        one(event: WebhookEvent<'PaymentCompleted'>) {
          this.seen.push(`one:${event.event}`);
        }
        @OnSchoolEvent(['UserSignedUp', 'CourseCompleted'])
        many(event: WebhookEvent<'UserSignedUp' | 'CourseCompleted'>) {
          this.seen.push(`many:${event.event}`);
        }
      }
      const module = appModule(
        SchoolhooksModule.forRoot({ secret: SECRET, path: '/webhooks/school' }),
        [Late],
      );
      const started = await startNest({ platform, module });
      server = started.server;
      for (const name of ['PaymentCompleted', 'UserSignedUp', 'CourseCompleted'] as const) {
        await postProcessed(server.url, name);
      }
      expect(started.app.get(Late).seen).toEqual([
        'one:PaymentCompleted',
        'many:UserSignedUp',
        'many:CourseCompleted',
      ]);
    });

    it('registers @OnSchoolEvent methods of an instance given with useValue', async () => {
      @Injectable()
      class Given {
        readonly seen: string[] = [];
        @OnSchoolEvent('PaymentCompleted')
        grant(event: WebhookEvent<'PaymentCompleted'>) {
          this.seen.push(event.event);
        }
      }
      const given = new Given();
      const module = appModule(
        SchoolhooksModule.forRoot({ secret: SECRET, path: '/webhooks/school' }),
        [{ provide: 'GIVEN', useValue: given }],
      );
      const started = await startNest({ platform, module });
      server = started.server;
      await postProcessed(server.url);
      expect(given.seen).toEqual(['PaymentCompleted']);
    });

    it("closes the connection after the receiver's own 413, and keeps it after other answers", async () => {
      const receiver = createReceiver({ secret: SECRET, maxBodyBytes: 1024 });
      const module = appModule(SchoolhooksModule.forRoot({ receiver, path: '/webhooks/school' }));
      const started = await startNest({ platform, module });
      server = started.server;
      // A keep-alive client, so the connection stays open unless the answer says otherwise (a
      // client without one asks for close itself). Nest's parser has read the whole body: only
      // the adapter's header can close it.
      const agent = new Agent({ keepAlive: true });
      const send = (body: string, headers: Record<string, string> = {}) =>
        new Promise<{ status: number | undefined; connection: string | undefined }>(
          (resolve, reject) => {
            const req = httpRequest(`${server!.url}/webhooks/school`, {
              method: 'POST',
              headers: {
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(body),
                ...headers,
              },
              agent,
            });
            req.on('response', (res) => {
              res.resume();
              resolve({ status: res.statusCode, connection: res.headers.connection });
            });
            req.on('error', reject);
            req.end(body);
          },
        );
      try {
        const delivery = createTestDelivery();
        expect(await send(delivery.body, delivery.headers)).toEqual({
          status: 200,
          connection: 'keep-alive',
        });
        expect(await send(JSON.stringify({ padding: 'x'.repeat(4096) }))).toEqual({
          status: 413,
          connection: 'close',
        });
      } finally {
        agent.destroy();
      }
    });

    it('scans providers whose value is not an object: undefined, null, text, a function', async () => {
      const module = appModule(
        SchoolhooksModule.forRoot({ secret: SECRET, path: '/webhooks/school' }),
        [
          Payments,
          { provide: 'NOTHING', useFactory: () => undefined },
          { provide: 'NULL', useValue: null },
          { provide: 'TEXT', useValue: 'text' },
          { provide: 'FUNCTION', useValue: () => 'called' },
        ],
      );
      const started = await startNest({ platform, module });
      server = started.server;
      await postProcessed(server.url);
      expect(started.app.get(Payments).granted).toHaveLength(1);
    });

    it('gives the receiver to providers of modules that do not import SchoolhooksModule', async () => {
      @Injectable()
      class Elsewhere {
        constructor(@Inject(SchoolhooksReceiver) readonly receiver: SchoolhooksReceiver) {}
      }
      @Module({ providers: [Elsewhere] })
      class Feature {}
      @Module({
        imports: [SchoolhooksModule.forRoot({ secret: SECRET, path: '/webhooks/school' }), Feature],
      })
      class App {}
      const started = await startNest({ platform, module: App });
      server = started.server;
      expect(started.app.get(Elsewhere).receiver).toBe(started.app.get(SchoolhooksReceiver));
    });
  });
}

it('refuses @OnSchoolEvent on a request-scoped provider, at start-up', async () => {
  const { Scope } = await import('@nestjs/common');
  @Injectable({ scope: Scope.REQUEST })
  class PerRequest {
    @OnSchoolEvent('PaymentCompleted')
    grant() {}
  }
  const module = appModule(SchoolhooksModule.forRoot({ secret: SECRET, path: '/webhooks' }), [
    PerRequest,
  ]);
  const failure = startNest({ platform: 'express', module });
  await expect(failure).rejects.toBeInstanceOf(ConfigError);
  await expect(failure).rejects.toMatchObject({
    code: 'config',
    message: expect.stringContaining(
      '@OnSchoolEvent on PerRequest.grant: the provider is request- or transient-scoped, so no ' +
        'single instance can handle deliveries; make it a singleton',
    ),
  });
});

it.each([
  ['a function', () => 'called'],
  ['null', null],
])(
  'refuses @OnSchoolEvent on a singleton whose factory made %s, not an instance, at start-up',
  async (_, made) => {
    // A factory function whose prototype carries the handler: Nest scans that prototype, but the
    // provider's value is what the factory returned, so there is nothing to bind the handler to.
    function Grants(): unknown {
      return made;
    }
    const handler = Object.getOwnPropertyDescriptor(
      Object.assign(Grants.prototype as object, { grant() {} }),
      'grant',
    )!;
    OnSchoolEvent('PaymentCompleted')(Grants.prototype as object, 'grant', handler);
    const module = appModule(SchoolhooksModule.forRoot({ secret: SECRET, path: '/webhooks' }), [
      { provide: 'GRANTS', useFactory: Grants },
    ]);
    const failure = failureOf(startNest({ platform: 'express', module }));
    const error = await failure;
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toBe(
      "@OnSchoolEvent on GRANTS.grant: the provider's value is not an object, so the handler " +
        'has no instance to run on; provide an instance of the class',
    );
  },
);

it('refuses a body an Express app kept as text, without the advice to turn rawBody on', async () => {
  // A common Express set-up: the JSON parser's verify keeps the body decoded, as req.rawBody. Text
  // is not the bytes the platform signed, so the delivery is refused (500 body_unavailable); the
  // app does keep a raw body, so the log does not tell it to create the app with rawBody: true.
  const logger = new Recorded();
  const module = appModule(SchoolhooksModule.forRoot({ secret: SECRET, path: '/webhooks/school' }));
  const app = await NestFactory.create<NestExpressApplication>(module, {
    rawBody: false,
    logger,
    abortOnError: false,
  });
  // Nest's useBodyParser reserves verify: the app adds its own parser, which Nest then keeps.
  app.use(
    express.json({
      verify: (req: { rawBody?: unknown }, _res: unknown, buf: Buffer) => {
        req.rawBody = buf.toString('utf8');
      },
    }),
  );
  await app.listen(0, '127.0.0.1');
  const server = await listen(app.getHttpServer() as Server, '');
  try {
    const delivery = fixtureDelivery('PaymentCompleted');
    expectAnswer(await post(`${server.url}/webhooks/school`, delivery), 500, {
      ok: false,
      outcome: 'body_unavailable',
    });
    expect(logger.lines.join('\n')).not.toContain('rawBody: true');
  } finally {
    (app.getHttpServer() as Server).closeAllConnections();
    await app.close();
  }
});

describe('the types of schoolhooks/nestjs', () => {
  it('types the decorated method by the event it handles', () => {
    // A user's code, compiled and never run.
    const compiles = (receiver: Receiver) => {
      @Injectable()
      class Payments {
        @OnSchoolEvent('PaymentCompleted')
        async grant(event: WebhookEvent<'PaymentCompleted'>) {
          expectTypeOf(event.data.payment.invoice.totalAmount).toEqualTypeOf<number>();
        }

        @OnSchoolEvent(['UserSignedUp', 'CourseCompleted'])
        record(event: WebhookEvent<'UserSignedUp' | 'CourseCompleted'>) {
          return event.idempotencyKey;
        }

        // @ts-expect-error the method takes a PaymentCompleted event, not a CourseCompleted one
        @OnSchoolEvent('CourseCompleted')
        wrong(event: WebhookEvent<'PaymentCompleted'>) {
          return event;
        }

        // @ts-expect-error a misspelt event name
        @OnSchoolEvent('PaymentComplete')
        typo() {}
      }

      @Injectable()
      class Audit {
        constructor(@Inject(SchoolhooksReceiver) readonly receiver: SchoolhooksReceiver) {
          expectTypeOf(receiver.handle).toEqualTypeOf<Receiver['handle']>();
        }
      }

      @Module({
        imports: [
          SchoolhooksModule.forRoot({ secret: 'whsec', path: '/webhooks/school', maxBodyBytes: 1 }),
        ],
        providers: [Payments, Audit],
      })
      class AppModule {}
      expectTypeOf(AppModule).toBeConstructibleWith();

      SchoolhooksModule.forRoot({ receiver, path: '/webhooks/school' });
      SchoolhooksModule.forRootAsync({
        path: '/webhooks/school',
        inject: ['SECRET'],
        useFactory: (secret: string) => ({ secret }),
      });
      // The tenant, read from the route's parameters on Express and on Fastify alike.
      SchoolhooksModule.forRoot({
        secret: async ({ tenant }) => (tenant === 'school-a' ? 'whsec' : undefined),
        path: '/webhooks/school/:tenant',
        tenant: (req) => req.params?.tenant,
      });
      SchoolhooksModule.forRootAsync({
        path: '/webhooks/school/:tenant',
        tenant: (req: SchoolhooksRouteRequest) => req.url?.split('/')[3],
        useFactory: () => ({ secret: () => 'whsec' }),
      });
      // @ts-expect-error a tenant is a string, not a number
      SchoolhooksModule.forRoot({ receiver, path: '/w/:tenant', tenant: () => 7 });
      // @ts-expect-error the path is required
      SchoolhooksModule.forRoot({ secret: 'whsec' });
      // @ts-expect-error maxBodyBytes is a number
      SchoolhooksModule.forRoot({ secret: 'whsec', path: '/w', maxBodyBytes: '1mb' });
    };
    expectTypeOf(compiles).toBeFunction();
  });
});
