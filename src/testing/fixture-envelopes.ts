/**
 * The typed loader of `fixtures/<EventName>.json`: one full envelope per fixed-contract event.
 * The JSON is imported, so bundles (tsup) carry it and nothing is read from disk at run time.
 * @module
 */

import type { FixedEventName, WebhookEvent } from '../events/index.js';
import certificateIssued from '../../fixtures/CertificateIssued.json' with { type: 'json' };
import courseCompleted from '../../fixtures/CourseCompleted.json' with { type: 'json' };
import courseLessonPracticeCompleted from '../../fixtures/CourseLessonPracticeCompleted.json' with { type: 'json' };
import courseProgressChanged from '../../fixtures/CourseProgressChanged.json' with { type: 'json' };
import paymentCompleted from '../../fixtures/PaymentCompleted.json' with { type: 'json' };
import productEnrolledByInviteLink from '../../fixtures/ProductEnrolledByInviteLink.json' with { type: 'json' };
import productEnrolledToFree from '../../fixtures/ProductEnrolledToFree.json' with { type: 'json' };
import productEnrolledViaLms from '../../fixtures/ProductEnrolledViaLms.json' with { type: 'json' };
import productEnrolledViaPayment from '../../fixtures/ProductEnrolledViaPayment.json' with { type: 'json' };
import userAcquainted from '../../fixtures/UserAcquainted.json' with { type: 'json' };
import userCreatedViaLms from '../../fixtures/UserCreatedViaLms.json' with { type: 'json' };
import userSignedUp from '../../fixtures/UserSignedUp.json' with { type: 'json' };
import userTgConnected from '../../fixtures/UserTgConnected.json' with { type: 'json' };

/**
 * Type one imported file as the envelope of `name`. Only the event name is checked here; that
 * every fixture passes its schema is a test (test/testing/fixtures.test.ts), not a start-up cost.
 */
function envelopeOf<N extends FixedEventName>(name: N, json: unknown): WebhookEvent<N> {
  if (typeof json !== 'object' || json === null || (json as { event?: unknown }).event !== name) {
    throw new Error(`fixtures/${name}.json is not a ${name} envelope`);
  }
  return json as WebhookEvent<N>;
}

/** The fixture envelope of each fixed-contract event. Shared: clone before handing out. */
export const FIXTURE_ENVELOPES: { readonly [N in FixedEventName]: WebhookEvent<N> } = {
  UserSignedUp: envelopeOf('UserSignedUp', userSignedUp),
  UserAcquainted: envelopeOf('UserAcquainted', userAcquainted),
  UserTgConnected: envelopeOf('UserTgConnected', userTgConnected),
  UserCreatedViaLms: envelopeOf('UserCreatedViaLms', userCreatedViaLms),
  CourseProgressChanged: envelopeOf('CourseProgressChanged', courseProgressChanged),
  CourseCompleted: envelopeOf('CourseCompleted', courseCompleted),
  CourseLessonPracticeCompleted: envelopeOf(
    'CourseLessonPracticeCompleted',
    courseLessonPracticeCompleted,
  ),
  PaymentCompleted: envelopeOf('PaymentCompleted', paymentCompleted),
  ProductEnrolledToFree: envelopeOf('ProductEnrolledToFree', productEnrolledToFree),
  ProductEnrolledViaLms: envelopeOf('ProductEnrolledViaLms', productEnrolledViaLms),
  ProductEnrolledViaPayment: envelopeOf('ProductEnrolledViaPayment', productEnrolledViaPayment),
  ProductEnrolledByInviteLink: envelopeOf(
    'ProductEnrolledByInviteLink',
    productEnrolledByInviteLink,
  ),
  CertificateIssued: envelopeOf('CertificateIssued', certificateIssued),
};
