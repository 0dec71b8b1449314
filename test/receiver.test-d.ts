import { describe, expectTypeOf, it } from 'vitest';
import {
  createReceiver,
  defineAdapter,
  type EntityEventName,
  type EventData,
  type KnownEventName,
  type HandlerContext,
  type SecretLookup,
  type SecretLookupAnswer,
  type WebhookEvent,
} from '../src/index.js';

const receiver = createReceiver({ secret: 'x' });

describe('handler types', () => {
  it('types on(PaymentCompleted) with the payment tree', () => {
    receiver.on('PaymentCompleted', (event, context) => {
      expectTypeOf(event.event).toEqualTypeOf<'PaymentCompleted'>();
      expectTypeOf(event.data.payment.invoice.totalAmount).toEqualTypeOf<number>();
      expectTypeOf(event.data.payment.checkoutUrl).toEqualTypeOf<string | null | undefined>();
      expectTypeOf(event.data.payment.invoice.user.email).toEqualTypeOf<
        string | null | undefined
      >();
      expectTypeOf(context).toEqualTypeOf<HandlerContext>();
    });
  });

  it('types a list of names as a union that narrows on event', () => {
    receiver.on(['ProductEnrolledToFree', 'ProductEnrolledByInviteLink'], (event) => {
      if (event.event === 'ProductEnrolledByInviteLink') {
        expectTypeOf(event.data.inviteLinkId).toEqualTypeOf<string | number | null | undefined>();
      }
    });
  });

  it('gives events without a contract a plain record', () => {
    receiver.on('UserSignedIn', (event) => {
      expectTypeOf(event.data).toEqualTypeOf<Record<string, unknown>>();
    });
  });

  it('takes latestOnly for the events about an entity only', () => {
    receiver.on('CourseProgressChanged', () => {}, { latestOnly: true });
    receiver.on(['ProductEnrolledToFree', 'ProductEnrolledByInviteLink'], () => {}, {
      latestOnly: true,
    });
    receiver.on('UserSignedIn', () => {}, {});
    receiver.on('UserSignedIn', () => {}, { latestOnly: false });
    // @ts-expect-error -- UserSignedIn is about no entity: no state of it is newer than another
    receiver.on('UserSignedIn', () => {}, { latestOnly: true });
    receiver.on(['CourseProgressChanged', 'CourseLessonPracticeCompleted'], () => {}, {
      // @ts-expect-error -- one event of the list is about no entity
      latestOnly: true,
    });
    expectTypeOf<EntityEventName>().toMatchTypeOf<KnownEventName>();
  });

  it('refuses a misspelt event name at compile time', () => {
    // @ts-expect-error -- 'PaymentComplete' is not an event name; PaymentCompleted is
    receiver.on('PaymentComplete', () => {});
    // @ts-expect-error -- one misspelt name in a list is refused too
    receiver.on(['PaymentCompleted', 'UserSignedup'], () => {});
  });

  it('refuses a misspelt field of an entity at compile time', () => {
    receiver.on('PaymentCompleted', (event) => {
      const { invoice } = event.data.payment;
      // @ts-expect-error -- the field is totalAmount
      void invoice.totlAmount;
      // @ts-expect-error -- the buyer's field is email
      void invoice.user.emial;
      expectTypeOf(invoice.totalAmount).toEqualTypeOf<number>();
    });
  });

  it('hands events this version does not know to onAny, with any name and a plain record', () => {
    receiver.onAny((event) => {
      expectTypeOf(event.event).toMatchTypeOf<string>();
      expectTypeOf<'SomeFutureEvent'>().toMatchTypeOf<typeof event.event>();
      if (event.event === 'PaymentCompleted') return;
      expectTypeOf(event.data).toMatchTypeOf<Record<string, unknown>>();
    });
  });

  it('exports EventData and WebhookEvent by name', () => {
    expectTypeOf<EventData<'CourseCompleted'>>().toHaveProperty('course');
    expectTypeOf<WebhookEvent<'PaymentCompleted'>['data']>().toEqualTypeOf<
      EventData<'PaymentCompleted'>
    >();
  });

  it('rejects a handler that misuses the type of a field', () => {
    receiver.on('PaymentCompleted', (event) => {
      // @ts-expect-error totalAmount is a number
      void event.data.payment.invoice.totalAmount.toUpperCase();
    });
    receiver.on('UserSignedUp', (event) => {
      // @ts-expect-error a field the contract does not name is unknown, not any
      const payment: { id: number } = event.data.payment;
      void payment;
    });
  });
});

describe('a secret per tenant', () => {
  it('takes a lookup that answers a secret, a list, or none, at once or in a promise', () => {
    const table = new Map<string, string>();
    createReceiver({ secret: ({ tenant }) => table.get(tenant) });
    createReceiver({ secret: async ({ tenant }) => (tenant === 'a' ? ['old', 'new'] : null) });
    createReceiver({ secret: () => undefined, secretCacheMs: 1, secretCacheSize: 1 });
    createReceiver({ secret: () => 'x', secretLookupTimeoutMs: 500 });
    expectTypeOf<SecretLookupAnswer>().toEqualTypeOf<
      string | readonly string[] | undefined | null
    >();
    // @ts-expect-error a lookup answers a secret, not a number
    createReceiver({ secret: () => 42 });
    // @ts-expect-error the request is an object with the tenant, not the tenant itself
    const byName: SecretLookup = (tenant: string) => tenant;
    void byName;
  });

  it('gives handle() a tenant, and handlers ctx.tenant', () => {
    void receiver.handle({ method: 'POST', headers: {}, body: '', tenant: 'school-a' });
    // @ts-expect-error a tenant is a string
    void receiver.handle({ method: 'POST', headers: {}, body: '', tenant: 7 });
    receiver.onAny((_event, ctx) => {
      expectTypeOf(ctx.tenant).toEqualTypeOf<string | undefined>();
    });
    expectTypeOf(receiver.needsTenant).toEqualTypeOf<boolean>();
  });

  it('forgets one tenant’s cached secret, or every one', () => {
    expectTypeOf(receiver.forgetSecret('school-a')).toBeVoid();
    expectTypeOf(receiver.forgetSecret()).toBeVoid();
    // @ts-expect-error a tenant is a string
    receiver.forgetSecret(7);
  });

  it("types an adapter's `tenant` option by the framework's own arguments", () => {
    interface MyRequest {
      params: { tenant?: string };
      method: string;
      headers: Record<string, string>;
      body: Uint8Array;
    }
    const myAdapter = defineAdapter({
      rawBodyFix: 'none',
      method: (req: MyRequest) => req.method,
      headers: (req) => req.headers,
      body: (req) => req.body,
      write: () => undefined,
    });
    myAdapter(receiver, { tenant: (req) => req.params.tenant });
    // @ts-expect-error the option reads the framework's request: MyRequest has no `url`
    myAdapter(receiver, { tenant: (req) => req.url });
    // @ts-expect-error a tenant is a string
    myAdapter(receiver, { tenant: () => 7 });
  });
});
