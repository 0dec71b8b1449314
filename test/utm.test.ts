import { describe, expect, it } from 'vitest';
import { getUtm, isInviteLinkEnrollment } from '../src/index.js';
import { validFixtures } from './helpers/fixtures.js';

const fixtures = validFixtures();
const event = (name: string) => fixtures.get(name)!;

describe('getUtm', () => {
  it('reads sign-up tags from states.utmSignupParams', () => {
    const utm = getUtm(event('UserSignedUp'));
    expect(utm.signup).toEqual(
      (event('UserSignedUp').data.states as { utmSignupParams: unknown }).utmSignupParams,
    );
    expect(utm.invoice).toBeUndefined();
  });

  it('reads the invoice tags of PaymentCompleted from payment.invoice.meta.utmParams', () => {
    const { invoice } = getUtm(event('PaymentCompleted'));
    expect(invoice?.utm_campaign).toBe('english_autumn_2026');
  });

  it('reads enrollment tags from states.utmEnrollParams, else from access.meta.utmParams', () => {
    const withStates = {
      data: {
        states: { utmEnrollParams: { utm_source: 'a' } },
        access: { meta: { utmParams: { utm_source: 'b' } } },
      },
    };
    expect(getUtm(withStates).enroll).toEqual({ utm_source: 'a' });
    const accessOnly = { data: { access: { meta: { utmParams: { utm_source: 'b' } } } } };
    expect(getUtm(accessOnly).enroll).toEqual({ utm_source: 'b' });
  });

  it('gives {} for an event without tags', () => {
    expect(getUtm({ data: {} })).toEqual({});
    expect(getUtm({ data: { states: {} } })).toEqual({});
  });
});

describe('isInviteLinkEnrollment', () => {
  it('is true when data.inviteLinkId or access.meta.inviteLinkId is present', () => {
    expect(isInviteLinkEnrollment(event('ProductEnrolledByInviteLink'))).toBe(true);
    expect(
      isInviteLinkEnrollment({ data: { access: { id: 1, meta: { inviteLinkId: 'abc' } } } }),
    ).toBe(true);
    expect(isInviteLinkEnrollment({ data: { inviteLinkId: 7 } })).toBe(true);
  });

  it('is false for other enrollments', () => {
    expect(isInviteLinkEnrollment(event('ProductEnrolledViaLms'))).toBe(false);
    expect(isInviteLinkEnrollment({ data: { access: { meta: {} } } })).toBe(false);
  });
});
