/**
 * `ProductEnrolledViaPayment`: access was granted after a successful payment.
 * @module
 */

import {
  productEnrolledToFreeDataSchema,
  type ProductEnrolledToFreeData,
} from './product-enrolled-to-free.js';

/**
 * `data` of `ProductEnrolledViaPayment`: the same contract, and schema, as `ProductEnrolledToFree`.
 */
export const productEnrolledViaPaymentDataSchema = productEnrolledToFreeDataSchema;
/** `data` of `ProductEnrolledViaPayment`. */
export type ProductEnrolledViaPaymentData = ProductEnrolledToFreeData;
