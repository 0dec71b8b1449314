import { describe, expectTypeOf, it } from 'vitest';
import type {
  EventData,
  EventDataMap,
  FixedEventName,
  KnownEventName,
  LessonProgressStatus,
  PaymentCompletedData,
  Profile,
  UserAcquaintedData,
  UserSignedUpData,
  UtmParams,
  WebhookEvent,
} from '../../src/events/index.js';

type Payment = EventData<'PaymentCompleted'>['payment'];

describe('event data types', () => {
  it('types the payment tree from the schemas', () => {
    expectTypeOf<Payment['invoice']['totalAmount']>().toEqualTypeOf<number>();
    expectTypeOf<Payment['checkoutUrl']>().toEqualTypeOf<string | null>();
    expectTypeOf<Payment['archivedAt']>().toEqualTypeOf<string | null>();
    expectTypeOf<Payment['isCompleted']>().toEqualTypeOf<boolean>();
    expectTypeOf<Payment['invoice']['user']['profile']>().toEqualTypeOf<Profile>();
    expectTypeOf<Payment['invoice']['user']['profile']['fullName']>().toEqualTypeOf<string>();
    expectTypeOf<Payment['invoice']['meta']['utmParams']>().toEqualTypeOf<UtmParams | undefined>();
    expectTypeOf<
      Payment['invoice']['products'][number]['product']['course']['tags']
    >().toEqualTypeOf<string[]>();
  });

  it('keeps the optional and nullable fields of interface 6', () => {
    expectTypeOf<EventData<'UserSignedUp'>['profile']>().toEqualTypeOf<Profile | null>();
    expectTypeOf<EventData<'UserTgConnected'>['prevTgId']>().toEqualTypeOf<number | null>();
    expectTypeOf<EventData<'CourseCompleted'>['user']['profile']>().toEqualTypeOf<Profile>();
    expectTypeOf<EventData<'UserCreatedViaLms'>['user']['profile']>().toEqualTypeOf<
      Profile | undefined
    >();
    expectTypeOf<EventData<'CourseProgressChanged'>['status']>().toEqualTypeOf<
      LessonProgressStatus | undefined
    >();
    expectTypeOf<EventData<'ProductEnrolledByInviteLink'>['inviteLinkId']>().toEqualTypeOf<
      number | string
    >();
    expectTypeOf<EventData<'CourseLessonPracticeCompleted'>['variantId']>().toEqualTypeOf<
      number | string | undefined
    >();
  });

  it('gives events the interface calls "the same" the same type', () => {
    expectTypeOf<UserAcquaintedData>().toEqualTypeOf<UserSignedUpData>();
    expectTypeOf<EventData<'PaymentCompleted'>>().toEqualTypeOf<PaymentCompletedData>();
  });

  it('gives uncontracted and unknown events a plain record', () => {
    expectTypeOf<EventData<'UserSignedIn'>>().toEqualTypeOf<Record<string, unknown>>();
    expectTypeOf<EventData<'SomethingAddedLater'>>().toEqualTypeOf<Record<string, unknown>>();
    expectTypeOf<EventDataMap>().not.toHaveProperty('UserSignedIn');
    expectTypeOf<keyof EventDataMap>().toEqualTypeOf<FixedEventName>();
  });
});

describe('WebhookEvent', () => {
  it('narrows a union on `event`', () => {
    const handle = (event: WebhookEvent<'PaymentCompleted' | 'UserSignedUp'>): void => {
      if (event.event === 'PaymentCompleted') {
        expectTypeOf(event.data).toEqualTypeOf<PaymentCompletedData>();
        expectTypeOf(event.data.payment.invoice.totalAmount).toEqualTypeOf<number>();
      } else {
        expectTypeOf(event.event).toEqualTypeOf<'UserSignedUp'>();
        expectTypeOf(event.data).toEqualTypeOf<UserSignedUpData>();
      }
    };
    expectTypeOf(handle).parameter(0).toHaveProperty('idempotencyKey').toEqualTypeOf<string>();
  });

  it('defaults to every event the interface names', () => {
    expectTypeOf<WebhookEvent['event']>().toEqualTypeOf<KnownEventName>();
    expectTypeOf<Extract<WebhookEvent, { event: 'UserLoggedOut' }>['data']>().toEqualTypeOf<
      Record<string, unknown>
    >();
  });

  it('is never a fixed-contract event with untyped data', () => {
    expectTypeOf<WebhookEvent<'PaymentCompleted'>['data']>().not.toEqualTypeOf<
      Record<string, unknown>
    >();
  });
});
