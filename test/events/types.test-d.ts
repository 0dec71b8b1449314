import { describe, expectTypeOf, it } from 'vitest';
import type {
  Acquiring,
  Currency,
  EventData,
  EventDataMap,
  FixedEventName,
  KnownEventName,
  LessonProgressStatus,
  OpenUnion,
  PaymentCompletedData,
  Product,
  Profile,
  UserAcquaintedData,
  UserSignedUpData,
  UtmParams,
  WebhookEvent,
} from '../../src/platform/events/index.js';

type Payment = EventData<'PaymentCompleted'>['payment'];

describe('event data types', () => {
  it('types the spine of the payment tree as always there', () => {
    expectTypeOf<Payment['id']>().toEqualTypeOf<number>();
    expectTypeOf<Payment['invoice']['totalAmount']>().toEqualTypeOf<number>();
    expectTypeOf<Payment['invoice']['currency']>().toEqualTypeOf<Currency>();
    expectTypeOf<Payment['invoice']['user']['id']>().toEqualTypeOf<number>();
  });

  it('types every other field as possibly absent, and null where the platform says so', () => {
    type User = Payment['invoice']['user'];
    expectTypeOf<User['email']>().toEqualTypeOf<string | null | undefined>();
    expectTypeOf<User['phone']>().toEqualTypeOf<string | null | undefined>();
    expectTypeOf<User['banned']>().toEqualTypeOf<boolean | undefined>();
    expectTypeOf<User['profile']>().toEqualTypeOf<Profile | null | undefined>();
    expectTypeOf<NonNullable<User['profile']>['fullName']>().toEqualTypeOf<
      string | null | undefined
    >();
    expectTypeOf<Payment['checkoutUrl']>().toEqualTypeOf<string | null | undefined>();
    expectTypeOf<Payment['archivedAt']>().toEqualTypeOf<string | null | undefined>();
    expectTypeOf<Payment['isCompleted']>().toEqualTypeOf<boolean | null | undefined>();
    expectTypeOf<Payment['acquiring']>().toEqualTypeOf<Acquiring | null | undefined>();
    expectTypeOf<Payment['invoice']['meta']>().toEqualTypeOf<
      { utmParams?: UtmParams | null | undefined } | null | undefined
    >();
    type Item = NonNullable<Payment['invoice']['products']>[number];
    expectTypeOf<NonNullable<NonNullable<Item['product']>['course']>['tags']>().toEqualTypeOf<
      string[] | undefined
    >();
  });

  it('types enum-like strings as open unions that still offer the known values', () => {
    expectTypeOf<Currency>().toEqualTypeOf<
      OpenUnion<'Free' | 'Exes' | 'Rub' | 'Uzs' | 'Kzt' | 'Usd' | 'Eur'>
    >();
    expectTypeOf<'Rub'>().toMatchTypeOf<Currency>();
    expectTypeOf<'Btc'>().toMatchTypeOf<Currency>();
    expectTypeOf<Currency>().not.toEqualTypeOf<string>();
    expectTypeOf<42>().not.toMatchTypeOf<Currency>();
    expectTypeOf<NonNullable<Payment['status']>>().toMatchTypeOf<string>();
    expectTypeOf<'BindingCompleted'>().toMatchTypeOf<NonNullable<Payment['status']>>();
  });

  it('keeps the optional and nullable fields of docs/platform.md#events', () => {
    expectTypeOf<EventData<'UserSignedUp'>['profile']>().toEqualTypeOf<
      Profile | null | undefined
    >();
    expectTypeOf<EventData<'UserTgConnected'>['prevTgId']>().toEqualTypeOf<number | null>();
    expectTypeOf<EventData<'CourseCompleted'>['user']['profile']>().toEqualTypeOf<
      Profile | null | undefined
    >();
    expectTypeOf<EventData<'CourseCompleted'>['product']>().toEqualTypeOf<
      Product | null | undefined
    >();
    expectTypeOf<EventData<'CourseProgressChanged'>['status']>().toEqualTypeOf<
      LessonProgressStatus | null | undefined
    >();
    expectTypeOf<LessonProgressStatus>().toEqualTypeOf<
      'NotStarted' | 'OnTheory' | 'OnPractice' | 'OnReview' | 'OnCorrection' | 'Completed'
    >();
    expectTypeOf<EventData<'ProductEnrolledByInviteLink'>['inviteLinkId']>().toEqualTypeOf<
      number | string | null | undefined
    >();
    expectTypeOf<EventData<'CourseLessonPracticeCompleted'>['variantId']>().toEqualTypeOf<
      number | string | null | undefined
    >();
    expectTypeOf<EventData<'CertificateIssued'>['certificate']['link']>().toEqualTypeOf<string>();
    expectTypeOf<EventData<'CertificateIssued'>['certificate']['expireAt']>().toEqualTypeOf<
      string | null | undefined
    >();
    // Every field the entity reference names is typed, optional; no other field is typed.
    expectTypeOf<EventData<'CertificateIssued'>['certificate']['templateId']>().toEqualTypeOf<
      number | undefined
    >();
    // @ts-expect-error -- a field the entity reference does not name is not part of the type
    expectTypeOf<EventData<'CertificateIssued'>['certificate']['number']>().toBeUnknown();
    type Attempt = NonNullable<EventData<'CourseLessonPracticeCompleted'>['attempt']>;
    expectTypeOf<Attempt['status']>().toEqualTypeOf<
      | 'Created'
      | 'OnReview'
      | 'OnCorrection'
      | 'AutoVerified'
      | 'Verified'
      | 'Failed'
      | 'Stacked'
      | (string & Record<never, never>)
      | null
      | undefined
    >();
    expectTypeOf<Attempt['isPassed']>().toEqualTypeOf<boolean | null | undefined>();
    type Group = NonNullable<EventData<'CourseCompleted'>['groups']>[number];
    expectTypeOf<Group['space']>().toBeUnknown();
    expectTypeOf<Group['name']>().toEqualTypeOf<string | undefined>();
  });

  it('makes a handler say what it does when a field is missing', () => {
    const read = (data: PaymentCompletedData): string =>
      data.payment.invoice.user.email ?? 'no email';
    expectTypeOf(read).returns.toEqualTypeOf<string>();
    // @ts-expect-error -- the email may be absent or null
    const unchecked: string = ({} as PaymentCompletedData).payment.invoice.user.email;
    void unchecked;
  });

  it('gives events docs/platform.md#events calls "the same" the same type', () => {
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

  it('defaults to every event the platform names', () => {
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
