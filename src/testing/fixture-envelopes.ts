/**
 * The typed loader of `fixtures/<EventName>.json` (one full envelope per fixed-contract event) and
 * of `fixtures/sparse/<EventName>.json` (the same events carrying only their spine, docs/events.md).
 * The JSON is imported, so bundles (tsup) carry it and nothing is read from disk at run time.
 * @module
 */

import type { FixedEventName, WebhookEvent } from '../platform/events/index.js';
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

import sparseCertificateIssued from '../../fixtures/sparse/CertificateIssued.json' with { type: 'json' };
import sparseCourseCompleted from '../../fixtures/sparse/CourseCompleted.json' with { type: 'json' };
import sparseCourseLessonPracticeCompleted from '../../fixtures/sparse/CourseLessonPracticeCompleted.json' with { type: 'json' };
import sparseCourseProgressChanged from '../../fixtures/sparse/CourseProgressChanged.json' with { type: 'json' };
import sparsePaymentCompleted from '../../fixtures/sparse/PaymentCompleted.json' with { type: 'json' };
import sparseProductEnrolledByInviteLink from '../../fixtures/sparse/ProductEnrolledByInviteLink.json' with { type: 'json' };
import sparseProductEnrolledToFree from '../../fixtures/sparse/ProductEnrolledToFree.json' with { type: 'json' };
import sparseProductEnrolledViaLms from '../../fixtures/sparse/ProductEnrolledViaLms.json' with { type: 'json' };
import sparseProductEnrolledViaPayment from '../../fixtures/sparse/ProductEnrolledViaPayment.json' with { type: 'json' };
import sparseUserAcquainted from '../../fixtures/sparse/UserAcquainted.json' with { type: 'json' };
import sparseUserCreatedViaLms from '../../fixtures/sparse/UserCreatedViaLms.json' with { type: 'json' };
import sparseUserSignedUp from '../../fixtures/sparse/UserSignedUp.json' with { type: 'json' };
import sparseUserTgConnected from '../../fixtures/sparse/UserTgConnected.json' with { type: 'json' };

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

/**
 * The sparse fixture envelope of each fixed-contract event: only the fields a payload must carry
 * ("the spine", docs/events.md). Shared: clone before handing out.
 */
export const SPARSE_FIXTURE_ENVELOPES: { readonly [N in FixedEventName]: WebhookEvent<N> } = {
  UserSignedUp: envelopeOf('UserSignedUp', sparseUserSignedUp),
  UserAcquainted: envelopeOf('UserAcquainted', sparseUserAcquainted),
  UserTgConnected: envelopeOf('UserTgConnected', sparseUserTgConnected),
  UserCreatedViaLms: envelopeOf('UserCreatedViaLms', sparseUserCreatedViaLms),
  CourseProgressChanged: envelopeOf('CourseProgressChanged', sparseCourseProgressChanged),
  CourseCompleted: envelopeOf('CourseCompleted', sparseCourseCompleted),
  CourseLessonPracticeCompleted: envelopeOf(
    'CourseLessonPracticeCompleted',
    sparseCourseLessonPracticeCompleted,
  ),
  PaymentCompleted: envelopeOf('PaymentCompleted', sparsePaymentCompleted),
  ProductEnrolledToFree: envelopeOf('ProductEnrolledToFree', sparseProductEnrolledToFree),
  ProductEnrolledViaLms: envelopeOf('ProductEnrolledViaLms', sparseProductEnrolledViaLms),
  ProductEnrolledViaPayment: envelopeOf(
    'ProductEnrolledViaPayment',
    sparseProductEnrolledViaPayment,
  ),
  ProductEnrolledByInviteLink: envelopeOf(
    'ProductEnrolledByInviteLink',
    sparseProductEnrolledByInviteLink,
  ),
  CertificateIssued: envelopeOf('CertificateIssued', sparseCertificateIssued),
};
