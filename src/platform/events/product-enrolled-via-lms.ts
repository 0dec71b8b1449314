/**
 * `ProductEnrolledViaLms`: an administrator or manager granted access through the LMS or the API.
 * @module
 */

import {
  productEnrolledToFreeDataSchema,
  type ProductEnrolledToFreeData,
} from './product-enrolled-to-free.js';

/** `data` of `ProductEnrolledViaLms`: the same contract, and schema, as `ProductEnrolledToFree`. */
export const productEnrolledViaLmsDataSchema = productEnrolledToFreeDataSchema;
/** `data` of `ProductEnrolledViaLms`. */
export type ProductEnrolledViaLmsData = ProductEnrolledToFreeData;
