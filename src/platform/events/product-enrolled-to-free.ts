/**
 * `ProductEnrolledToFree`: the user was granted free access to a product.
 * @module
 */

import { z } from 'zod';
import type { KnownOutput } from './known-output.js';
import {
  accessSchema,
  courseSchema,
  productSchema,
  profileSchema,
  statesSchema,
  userSchema,
} from './entities.js';

/**
 * `data` of `ProductEnrolledToFree` (docs/platform.md#events): the user; optionally the profile, the access,
 * the product and the course. The other enrollment events share this contract.
 */
export const productEnrolledToFreeDataSchema = z.looseObject({
  user: userSchema,
  profile: profileSchema.nullish(),
  access: accessSchema.nullish(),
  states: statesSchema.nullish(),
  product: productSchema.nullish(),
  course: courseSchema.nullish(),
});
/** `data` of `ProductEnrolledToFree`. */
export type ProductEnrolledToFreeData = KnownOutput<typeof productEnrolledToFreeDataSchema>;
