import { describe, expectTypeOf, it } from 'vitest';
import {
  createReceiver,
  type EntityEventName,
  type EventData,
  type KnownEventName,
  type HandlerContext,
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
