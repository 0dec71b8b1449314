/**
 * A strict TypeScript user's file with each of Fastify, Koa, Nest and Lambda: what compiles,
 * and what a typo or a wrong type turns into a compile error.
 */

import { Inject, Injectable, Module } from '@nestjs/common';
import type {
  ALBEvent,
  ALBResult,
  APIGatewayProxyEvent,
  APIGatewayProxyEventV2,
  APIGatewayProxyResult,
  APIGatewayProxyStructuredResultV2,
  Context,
  LambdaFunctionURLEvent,
} from 'aws-lambda';
import Fastify from 'fastify';
import Koa from 'koa';
import { describe, expectTypeOf, it } from 'vitest';
import { schoolhooksPlugin } from '../../adapters/fastify.js';
import { koaMiddleware } from '../../adapters/koa.js';
import { lambdaHandler, type LambdaResult } from '../../adapters/lambda.js';
import { OnSchoolEvent, SchoolhooksModule, SchoolhooksReceiver } from '../../adapters/nestjs.js';
import { createReceiver, type Receiver, type WebhookEvent } from '../../src/index.js';

const receiver = createReceiver({ secret: 'whsec' });

describe('schoolhooks/fastify', () => {
  it('registers with a receiver and a path', async () => {
    const app = Fastify();
    await app.register(schoolhooksPlugin, { receiver, path: '/webhooks/school' });
    // @ts-expect-error the path is required
    await app.register(schoolhooksPlugin, { receiver });
  });
});

describe('schoolhooks/koa', () => {
  it('is a Koa middleware, with or without a path', () => {
    const app = new Koa();
    app.use(koaMiddleware(receiver, { path: '/webhooks/school' }));
    app.use(koaMiddleware(receiver));
    // @ts-expect-error a path is a string
    koaMiddleware(receiver, { path: 42 });
  });
});

describe('schoolhooks/nestjs', () => {
  it('types the decorated method by the event it handles', () => {
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
    // @ts-expect-error the path is required
    SchoolhooksModule.forRoot({ secret: 'whsec' });
    // @ts-expect-error maxBodyBytes is a number
    SchoolhooksModule.forRoot({ secret: 'whsec', path: '/w', maxBodyBytes: '1mb' });
  });
});

describe('schoolhooks/lambda', () => {
  it("takes every trigger's event as @types/aws-lambda types it, and answers its result type", async () => {
    const handler = lambdaHandler(receiver);
    const context = {} as Context;
    const rest: APIGatewayProxyResult = await handler({} as APIGatewayProxyEvent, context);
    const http: APIGatewayProxyStructuredResultV2 = await handler(
      {} as APIGatewayProxyEventV2,
      context,
    );
    const url: APIGatewayProxyStructuredResultV2 = await handler({} as LambdaFunctionURLEvent);
    const alb: ALBResult = await handler({} as ALBEvent, context);
    expectTypeOf([rest, http, url, alb]).toBeArray();
    expectTypeOf(handler).returns.resolves.toEqualTypeOf<LambdaResult>();
    // @ts-expect-error not an HTTP event
    await handler({ Records: [] });
  });
});
