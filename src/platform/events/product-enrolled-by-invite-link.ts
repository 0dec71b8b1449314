/**
 * `ProductEnrolledByInviteLink`: the user enrolled in a course on their own through an invite
 * link. The platform sends `ProductEnrolledToFree` for the same enrollment too (docs/platform.md#events).
 * @module
 */

import type { KnownOutput } from './known-output.js';
import { looseIdSchema } from './entities.js';
import { productEnrolledToFreeDataSchema } from './product-enrolled-to-free.js';

/** True when the invite link is named in `inviteLinkId` or in `access.meta.inviteLinkId`. */
function namesInviteLink(data: {
  inviteLinkId?: unknown;
  access?: { meta?: { inviteLinkId?: unknown } | null | undefined } | null | undefined;
}): boolean {
  // `!= null`: present and not null.
  return data.inviteLinkId != null || data.access?.meta?.inviteLinkId != null;
}

/**
 * A JSON Schema of an object that has `key`, whose value must pass `value`. (`type` too: without
 * it, `required` lets a null or a string through.)
 */
function requires(key: string, value: object): object {
  return { type: 'object', required: [key], properties: { [key]: value } };
}

/** A JSON Schema value that is present and not null. */
const PRESENT = { not: { type: 'null' } };

/**
 * `data` of `ProductEnrolledByInviteLink` (docs/platform.md#events): the contract of `ProductEnrolledToFree`
 * plus the invite link, in `inviteLinkId` or in `access.meta.inviteLinkId`: one of the two is the
 * spine (docs/events.md), so a payload naming neither is refused.
 *
 * @example
 * ```ts
 * const data = productEnrolledByInviteLinkDataSchema.parse(event.data);
 * const link = data.inviteLinkId ?? data.access?.meta?.inviteLinkId;
 * ```
 */
export const productEnrolledByInviteLinkDataSchema = productEnrolledToFreeDataSchema
  .extend({ inviteLinkId: looseIdSchema.nullish() })
  .refine(namesInviteLink, {
    message: 'needs inviteLinkId or access.meta.inviteLinkId',
    path: ['inviteLinkId'],
  })
  // The same rule for the JSON Schema, which cannot carry a refinement.
  .meta({
    anyOf: [
      requires('inviteLinkId', PRESENT),
      requires('access', requires('meta', requires('inviteLinkId', PRESENT))),
    ],
  });
/** `data` of `ProductEnrolledByInviteLink`. */
export type ProductEnrolledByInviteLinkData = KnownOutput<
  typeof productEnrolledByInviteLinkDataSchema
>;
