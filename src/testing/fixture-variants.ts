/**
 * Realistic variants of the fixtures: payloads the platform really sends that leave out fields
 * the full fixtures carry (`fixtures/variants/*.json`). Each must be processed (docs/events.md).
 * @module
 */

import type { EventData, FixedEventName } from '../platform/events/index.js';
import { factoryOf, type DeepPartial, type FixtureSource } from './fixtures.js';
import courseCompletedWithoutArchivedAt from '../../fixtures/variants/course-completed-without-archived-at.json' with { type: 'json' };
import paymentCompletedDigitalProduct from '../../fixtures/variants/payment-completed-digital-product.json' with { type: 'json' };
import paymentCompletedWithoutAcquiringOrLogs from '../../fixtures/variants/payment-completed-without-acquiring-or-logs.json' with { type: 'json' };
import paymentCompletedWithoutArchivedAt from '../../fixtures/variants/payment-completed-without-archived-at.json' with { type: 'json' };
import paymentCompletedWithoutInvoiceMeta from '../../fixtures/variants/payment-completed-without-invoice-meta.json' with { type: 'json' };
import productEnrolledByInviteLinkInAccessMeta from '../../fixtures/variants/product-enrolled-by-invite-link-in-access-meta.json' with { type: 'json' };
import productEnrolledViaPaymentDigitalProduct from '../../fixtures/variants/product-enrolled-via-payment-digital-product.json' with { type: 'json' };
import userSignedUpPhoneOnly from '../../fixtures/variants/user-signed-up-phone-only.json' with { type: 'json' };
import userSignedUpTelegramOnly from '../../fixtures/variants/user-signed-up-telegram-only.json' with { type: 'json' };
import userTgConnectedTelegramOnly from '../../fixtures/variants/user-tg-connected-telegram-only.json' with { type: 'json' };

/**
 * A factory of one realistic payload: call it (with deep-partial overrides, as the
 * {@link fixtures} factories take) for a fresh copy of its `data`; `event` names its event and
 * `file` its JSON file under `fixtures/variants/`.
 */
export interface FixtureVariant<N extends FixedEventName> {
  (overrides?: DeepPartial<EventData<N>>): EventData<N>;
  /** The event this payload is the `data` of. */
  readonly event: N;
  /** Its file under `fixtures/variants/`, e.g. `payment-completed-without-invoice-meta.json`. */
  readonly file: string;
  /** What is left out, and why the platform sends it so. */
  readonly description: string;
}

function variant<N extends FixedEventName>(
  event: N,
  file: string,
  source: FixtureSource & { readonly event: string },
  description: string,
): FixtureVariant<N> {
  if (source.event !== event) throw new Error(`fixtures/variants/${file} is not a ${event}`);
  return Object.freeze(
    Object.assign(factoryOf<N, EventData<N>>(event, source), { event, file, description }),
  );
}

/**
 * Realistic payloads that leave out what the full fixtures carry, as the platform sends them: its
 * own documented PaymentCompleted without `invoice.meta`, a student who signed up by phone, a
 * Telegram user with neither email nor phone, a digital product with no course, a payment
 * without acquiring or logs, entities without `archivedAt`. A receiver must process each.
 *
 * @example
 * ```ts
 * import { createDelivery, fixtureVariants } from 'schoolhooks/testing';
 *
 * for (const variant of Object.values(fixtureVariants)) {
 *   const { body, headers } = createDelivery(variant.event, variant(), { secret });
 *   expect((await receiver.handle({ method: 'POST', headers, body })).status).toBe(200);
 * }
 * ```
 */
export const fixtureVariants = Object.freeze({
  paymentWithoutInvoiceMeta: variant(
    'PaymentCompleted',
    'payment-completed-without-invoice-meta.json',
    paymentCompletedWithoutInvoiceMeta,
    "The platform's documented PaymentCompleted: the buyer came without UTM tags, so invoice.meta is absent altogether.",
  ),
  paymentWithoutAcquiringOrLogs: variant(
    'PaymentCompleted',
    'payment-completed-without-acquiring-or-logs.json',
    paymentCompletedWithoutAcquiringOrLogs,
    'A payment without acquiring, webhookLogs, chargeLogs or statusHistoryLogs.',
  ),
  paymentForDigitalProduct: variant(
    'PaymentCompleted',
    'payment-completed-digital-product.json',
    paymentCompletedDigitalProduct,
    'A payment for digital products: the line items carry products without a course.',
  ),
  paymentWithoutArchivedAt: variant(
    'PaymentCompleted',
    'payment-completed-without-archived-at.json',
    paymentCompletedWithoutArchivedAt,
    'A payment tree in which no entity carries archivedAt.',
  ),
  phoneOnlyStudent: variant(
    'UserSignedUp',
    'user-signed-up-phone-only.json',
    userSignedUpPhoneOnly,
    'A student who signed up by phone: the user has no email.',
  ),
  telegramOnlySignUp: variant(
    'UserSignedUp',
    'user-signed-up-telegram-only.json',
    userSignedUpTelegramOnly,
    'A student who signed up through Telegram: email null, no phone, a tgId.',
  ),
  telegramOnlyUser: variant(
    'UserTgConnected',
    'user-tg-connected-telegram-only.json',
    userTgConnectedTelegramOnly,
    'A Telegram user with neither email (absent) nor phone (null).',
  ),
  digitalProductEnrollment: variant(
    'ProductEnrolledViaPayment',
    'product-enrolled-via-payment-digital-product.json',
    productEnrolledViaPaymentDigitalProduct,
    'Access to a digital product: no course, neither in the product nor beside it.',
  ),
  courseCompletedWithoutArchivedAt: variant(
    'CourseCompleted',
    'course-completed-without-archived-at.json',
    courseCompletedWithoutArchivedAt,
    'A CourseCompleted in which no entity carries archivedAt.',
  ),
  inviteLinkInAccessMeta: variant(
    'ProductEnrolledByInviteLink',
    'product-enrolled-by-invite-link-in-access-meta.json',
    productEnrolledByInviteLinkInAccessMeta,
    'An invite-link enrollment that names its link only in access.meta.inviteLinkId.',
  ),
});

/** The realistic variants, by name. */
export type FixtureVariants = typeof fixtureVariants;
