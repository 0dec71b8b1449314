import { describe, expectTypeOf, it } from 'vitest';
import type { EventData, KnownCurrency } from '../../src/index.js';
import {
  createDelivery,
  fixtures,
  fixtureVariants,
  sparseFixtures,
} from '../../src/testing/index.js';

const SECRET = 'c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00';

describe('fixture types', () => {
  it('types factories and their overrides from the schemas', () => {
    expectTypeOf(fixtures.CourseCompleted()).toEqualTypeOf<EventData<'CourseCompleted'>>();
    expectTypeOf(fixtures.PaymentCompleted().payment.invoice.totalAmount).toBeNumber();
    // @ts-expect-error -- totalAmount is a number
    fixtures.PaymentCompleted({ payment: { invoice: { totalAmount: '1' } } });
    // @ts-expect-error -- an array override is given whole, not as a partial item
    fixtures.PaymentCompleted({ payment: { invoice: { products: [{ totalPrice: 1 }] } } });
    // @ts-expect-error -- the user is not nullable
    fixtures.UserSignedUp({ user: null });
  });

  it('types overrides as the schemas accept them: null where allowed, any string in an open union', () => {
    const data = fixtures.PaymentCompleted({
      payment: {
        acquiring: null,
        invoice: { meta: null, currency: 'Kzt', user: { email: null, profile: null } },
      },
    });
    expectTypeOf(data.payment.invoice.user.email).toEqualTypeOf<string | null | undefined>();
    fixtures.PaymentCompleted({ payment: { invoice: { currency: 'Btc' } } });
    // @ts-expect-error -- totalAmount is part of the spine: never null
    fixtures.PaymentCompleted({ payment: { invoice: { totalAmount: null } } });
    // @ts-expect-error -- released may be absent but is never null
    fixtures.PaymentCompleted({ payment: { released: null } });
    // @ts-expect-error -- a lesson status is one of the six the platform sends
    fixtures.CourseProgressChanged({ status: 'Finished' });
    expectTypeOf(sparseFixtures.CertificateIssued().certificate.link).toBeString();
    expectTypeOf(fixtureVariants.phoneOnlyStudent()).toEqualTypeOf<EventData<'UserSignedUp'>>();
    expectTypeOf(fixtureVariants.phoneOnlyStudent.event).toEqualTypeOf<'UserSignedUp'>();
  });
});

describe('overrides of fields the fixtures carry and the types do not name', () => {
  it('takes access.userId, which the enrollment fixtures carry, and returns the typed data', () => {
    const data = fixtures.ProductEnrolledToFree({ access: { id: 2418830, userId: 1937465 } });
    expectTypeOf(data).toEqualTypeOf<EventData<'ProductEnrolledToFree'>>();
    fixtures.ProductEnrolledToFree({ access: { userId: 1937465 } });
    fixtures.PaymentCompleted({ payment: { invoice: { user: { starsBalance: 5 } } } });
    sparseFixtures.CourseLessonPracticeCompleted({ lesson: { moduleId: 3 } });
  });

  it('keeps the type of every field the types name, beside them', () => {
    // @ts-expect-error -- an access id is a number
    fixtures.ProductEnrolledToFree({ access: { id: '2418830', userId: 1937465 } });
    // @ts-expect-error -- the user is not nullable, extra fields or not
    fixtures.ProductEnrolledToFree({ user: null, access: { userId: 1 } });
    // @ts-expect-error -- an array is given whole: a group needs its id
    fixtures.CourseProgressChanged({ groups: [{ name: 'B1', extra: true }] });
  });
});

describe('createDelivery types', () => {
  it('types data from the event name', () => {
    // @ts-expect-error -- the data of another event
    createDelivery('PaymentCompleted', fixtures.UserSignedUp(), { secret: SECRET });
  });

  it('needs data for an event without a fixture', () => {
    createDelivery('UserSignedIn', { user: { id: 1 } }, { secret: SECRET });
    // @ts-expect-error -- UserSignedIn has no fixture, so its data is required
    createDelivery('UserSignedIn', undefined, { secret: SECRET });
  });
});

describe('currency types', () => {
  it('autocomplete exactly the currencies the fixtures send', () => {
    expectTypeOf<
      'Free' | 'Exes' | 'Rub' | 'Uzs' | 'Kzt' | 'Usd' | 'Eur'
    >().toEqualTypeOf<KnownCurrency>();
  });
});
