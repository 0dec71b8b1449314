/**
 * A provider's constructor dependencies under a compiler that emits no decorator metadata (tsx,
 * esbuild, and vitest, which transforms with esbuild): Nest cannot see a parameter's type, passes
 * undefined, and an `@OnSchoolEvent` handler would fail or do nothing on a delivery. The module
 * refuses such a provider at start-up, naming the fix; `@Inject` or the metadata tsc emits work.
 */

import 'reflect-metadata';
import {
  Inject,
  Injectable,
  Module,
  Optional,
  type INestApplication,
  type Provider,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { afterEach, describe, expect, it } from 'vitest';
import { OnSchoolEvent, SchoolhooksModule } from '../../src/adapters/nestjs.js';
import { ConfigError, type WebhookEvent } from '../../src/index.js';
import { fixtureDelivery, SECRET } from '../helpers/deliveries.js';
import { failureOf } from '../helpers/failure-of.js';

/** The dependency: it records the users it granted access to. */
@Injectable()
class Access {
  readonly granted: number[] = [];
  grant(userId: number) {
    this.granted.push(userId);
  }
}

let app: INestApplication | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** Start an app with the module and `providers`; rejects with what start-up threw. */
async function start(providers: Provider[]) {
  @Module({
    imports: [SchoolhooksModule.forRoot({ secret: SECRET, path: '/webhooks/school' })],
    providers,
  })
  class AppModule {}
  // abortOnError: false, so a start-up error rejects instead of ending the process.
  app = await NestFactory.create(AppModule, { rawBody: true, logger: false, abortOnError: false });
  await app.listen(0, '127.0.0.1');
  return app;
}

/** Post a signed PaymentCompleted and return the paying user's id. */
async function deliver(started: INestApplication): Promise<number> {
  const delivery = fixtureDelivery('PaymentCompleted');
  const answer = await fetch(`${await started.getUrl()}/webhooks/school`, {
    method: 'POST',
    ...delivery,
  });
  expect([answer.status, await answer.json()]).toEqual([
    200,
    { ok: true, outcome: 'processed', idempotencyKey: delivery.idempotencyKey },
  ]);
  return (JSON.parse(delivery.body) as WebhookEvent<'PaymentCompleted'>).data.payment.invoice.user
    .id;
}

describe('a provider with @OnSchoolEvent and constructor parameters', () => {
  it('is refused at start-up when a parameter has no type Nest can see, naming the fix', async () => {
    @Injectable()
    class Payments {
      constructor(private readonly access: Access) {}
      @OnSchoolEvent('PaymentCompleted')
      grant(event: WebhookEvent<'PaymentCompleted'>) {
        this.access.grant(event.data.payment.invoice.user.id);
      }
    }
    // What this file's compiler gave Nest: no parameter types (else the test proves nothing).
    expect(Reflect.getMetadata('design:paramtypes', Payments)).toBeUndefined();

    const error = await failureOf(start([Access, Payments]));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('config');
    expect(error.message).toBe(
      "@OnSchoolEvent on Payments.grant: the constructor's parameter #1 has no type Nest can see " +
        '(no design:paramtypes metadata: tsx and esbuild emit none), so it was left undefined and ' +
        'the handler would fail or do nothing on a delivery; name it with @Inject(Token), or ' +
        'build with a compiler that emits decorator metadata (tsc or SWC with emitDecoratorMetadata)',
    );
  });

  it('names the first parameter without a token when another has @Inject', async () => {
    @Injectable()
    class Payments {
      constructor(
        @Inject(Access) readonly access: Access,
        readonly clock: Access,
      ) {}
      @OnSchoolEvent('PaymentCompleted')
      grant() {}
    }
    const error = await failureOf(start([Access, Payments]));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toMatch(
      /^@OnSchoolEvent on Payments\.grant: the constructor's parameter #2 /,
    );
  });

  it('runs with its dependency injected when each parameter is named with @Inject', async () => {
    @Injectable()
    class Payments {
      constructor(@Inject(Access) private readonly access: Access) {}
      @OnSchoolEvent('PaymentCompleted')
      grant(event: WebhookEvent<'PaymentCompleted'>) {
        this.access.grant(event.data.payment.invoice.user.id);
      }
    }
    const started = await start([Access, Payments]);
    const user = await deliver(started);
    expect(started.get(Access).granted).toEqual([user]);
  });

  it('runs with its dependency injected when the compiler recorded the types (as tsc does)', async () => {
    @Injectable()
    class Payments {
      constructor(private readonly access: Access) {}
      @OnSchoolEvent('PaymentCompleted')
      grant(event: WebhookEvent<'PaymentCompleted'>) {
        this.access.grant(event.data.payment.invoice.user.id);
      }
    }
    // What tsc with emitDecoratorMetadata writes for this constructor.
    Reflect.defineMetadata('design:paramtypes', [Access], Payments);
    const started = await start([Access, Payments]);
    const user = await deliver(started);
    expect(started.get(Access).granted).toEqual([user]);
  });

  it('starts when the parameter without a token is @Optional(), undefined by design', async () => {
    @Injectable()
    class Payments {
      constructor(@Optional() readonly audit?: Access) {}
      @OnSchoolEvent('PaymentCompleted')
      grant() {}
    }
    const started = await start([Payments]);
    expect(started.get(Payments).audit).toBeUndefined();
  });
});
