/**
 * `ProductEnrolledToFree`: the user was granted free access to a product.
 * @module
 */

import { z } from 'zod';
import {
  accessSchema,
  courseSchema,
  productSchema,
  profileSchema,
  statesSchema,
  userSchema,
} from './entities.js';

/**
 * `data` of `ProductEnrolledToFree` (interface 6): the user; optionally the profile, the access,
 * the product and the course. The other enrollment events share this contract.
 */
export const productEnrolledToFreeDataSchema = z.looseObject({
  user: userSchema,
  profile: profileSchema.optional(),
  access: accessSchema.optional(),
  states: statesSchema.optional(),
  product: productSchema.optional(),
  course: courseSchema.optional(),
});
/** `data` of `ProductEnrolledToFree`. */
export type ProductEnrolledToFreeData = z.infer<typeof productEnrolledToFreeDataSchema>;
