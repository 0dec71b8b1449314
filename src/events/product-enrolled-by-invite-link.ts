/**
 * `ProductEnrolledByInviteLink`: the user enrolled in a course on their own through an invite
 * link. The platform sends `ProductEnrolledToFree` for the same enrollment too (interface 6, rule 1).
 * @module
 */

import type { z } from 'zod';
import { looseIdSchema } from './entities.js';
import { productEnrolledToFreeDataSchema } from './product-enrolled-to-free.js';

/**
 * `data` of `ProductEnrolledByInviteLink` (interface 6): the contract of `ProductEnrolledToFree`
 * plus the required `inviteLinkId` (also found in `access.meta.inviteLinkId`).
 */
export const productEnrolledByInviteLinkDataSchema = productEnrolledToFreeDataSchema.extend({
  inviteLinkId: looseIdSchema,
});
/** `data` of `ProductEnrolledByInviteLink`. */
export type ProductEnrolledByInviteLinkData = z.infer<typeof productEnrolledByInviteLinkDataSchema>;
