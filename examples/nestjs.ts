// A NestJS app that receives the school platform's webhooks, on Express or, with PLATFORM=fastify,
// on Fastify. Run: SCHOOL_WEBHOOK_SECRET=<endpoint secretKey> npx tsx examples/nestjs.ts
// (Nest's decorators need "experimentalDecorators": true in tsconfig.json.)
import { Body, Controller, Inject, Injectable, Logger, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
// In your app: from 'schoolhooks' and 'schoolhooks/nestjs'.
import { OnSchoolEvent, SchoolhooksModule } from '../src/adapters/nestjs.js';
import type { WebhookEvent } from '../src/index.js';

const secret = process.env.SCHOOL_WEBHOOK_SECRET;
if (!secret) {
  console.error(
    'SCHOOL_WEBHOOK_SECRET is not set: give it the endpoint secretKey ' +
      '(Manage > School > Webhooks > "Copy signature").',
  );
  process.exit(2);
}
const port = Number(process.env.PORT ?? 3000);

// What the app does with a payment; a provider like any other.
@Injectable()
class Access {
  readonly #logger = new Logger('Access');

  grant(userId: number, what: string) {
    this.#logger.log(`access granted to user ${userId} for ${what}`);
  }
}

@Injectable()
class Payments {
  // @Inject names the dependency: tsx and esbuild emit no decorator metadata, so Nest cannot see
  // the parameter's type and, without it, would construct Payments with `access` undefined
  // (SchoolhooksModule refuses to start then). With tsc or SWC and emitDecoratorMetadata,
  // `constructor(private readonly access: Access)` is enough.
  constructor(@Inject(Access) private readonly access: Access) {}

  // Runs with `this` = this provider, for every PaymentCompleted delivery.
  @OnSchoolEvent('PaymentCompleted')
  grant(event: WebhookEvent<'PaymentCompleted'>) {
    const { invoice } = event.data.payment;
    this.access.grant(invoice.user.id, `a payment of ${invoice.totalAmount} ${invoice.currency}`);
  }
}

// The app's own routes keep Nest's JSON parsing.
@Controller()
class Orders {
  @Post('orders')
  create(@Body() body: unknown) {
    return { received: body };
  }
}

@Module({
  imports: [SchoolhooksModule.forRoot({ secret, path: '/webhooks/school' })],
  controllers: [Orders],
  providers: [Access, Payments],
})
class AppModule {}

// rawBody: true is Nest's own switch to keep the bytes the platform signed.
const app =
  process.env.PLATFORM === 'fastify'
    ? await NestFactory.create(AppModule, new FastifyAdapter(), { rawBody: true })
    : await NestFactory.create(AppModule, { rawBody: true });
app.enableShutdownHooks();
await app.listen(port, '127.0.0.1');
console.log(
  `listening on ${(await app.getUrl()).replace('127.0.0.1', 'localhost')}/webhooks/school`,
);
