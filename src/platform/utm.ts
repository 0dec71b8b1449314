/**
 * Helpers that read facts an event carries in more than one place (docs/platform.md#events, docs/platform.md#utm-tags).
 * @module
 */

import type { UtmParams } from './events/index.js';

/** UTM tags of an event, by where they were captured. */
export interface EventUtm {
  /** Tags of the user's sign-up (`states.utmSignupParams`). */
  signup?: UtmParams;
  /** Tags of the enrollment (`states.utmEnrollParams`, else `access.meta.utmParams`). */
  enroll?: UtmParams;
  /** Tags of the invoice (PaymentCompleted's `payment.invoice.meta.utmParams`). */
  invoice?: UtmParams;
}

interface EventLike {
  readonly data: unknown;
}

/**
 * The UTM tags of any event, from whichever path it carries them on. An event without tags
 * gives `{}`.
 *
 * @example
 * ```ts
 * receiver.on('ProductEnrolledToFree', (event) => {
 *   const { enroll, signup } = getUtm(event);
 *   track(enroll?.utm_campaign ?? signup?.utm_campaign);
 * });
 * ```
 */
export function getUtm(event: EventLike): EventUtm {
  const data = event.data;
  const result: EventUtm = {};
  const signup = utmAt(data, 'states', 'utmSignupParams');
  const enroll =
    utmAt(data, 'states', 'utmEnrollParams') ?? utmAt(data, 'access', 'meta', 'utmParams');
  const invoice = utmAt(data, 'payment', 'invoice', 'meta', 'utmParams');
  if (signup) result.signup = signup;
  if (enroll) result.enroll = enroll;
  if (invoice) result.invoice = invoice;
  return result;
}

/**
 * True when the event is an enrollment through an invite link: `data.inviteLinkId` or
 * `data.access.meta.inviteLinkId` is present (docs/platform.md#events).
 *
 * @example
 * ```ts
 * receiver.on('ProductEnrolledToFree', (event) => {
 *   if (isInviteLinkEnrollment(event)) return; // counted once, from ProductEnrolledByInviteLink
 * });
 * ```
 */
export function isInviteLinkEnrollment(event: EventLike): boolean {
  return (
    present(at(event.data, 'inviteLinkId')) ||
    present(at(event.data, 'access', 'meta', 'inviteLinkId'))
  );
}

function at(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function utmAt(value: unknown, ...path: string[]): UtmParams | undefined {
  const found = at(value, ...path);
  return typeof found === 'object' && found !== null && !Array.isArray(found)
    ? (found as UtmParams)
    : undefined;
}

function present(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}
