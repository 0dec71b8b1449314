/**
 * `PaymentCompleted`: a payment succeeded with money actually charged (a zero card-binding
 * payment, status `BindingCompleted`, does not send it).
 * @module
 */

import { z } from 'zod';
import type { KnownOutput } from './known-output.js';
import { paymentSchema, statesSchema } from './entities.js';

/**
 * `data` of `PaymentCompleted` (docs/platform.md#events): the whole payment tree (docs/platform.md#entities). Its UTM tags are in
 * `payment.invoice.meta.utmParams`.
 *
 * @example
 * ```ts
 * const { payment } = paymentCompletedDataSchema.parse(event.data);
 * console.log(payment.invoice.totalAmount, payment.invoice.currency);
 * ```
 */
export const paymentCompletedDataSchema = z.looseObject({
  payment: paymentSchema,
  states: statesSchema.nullish(),
});
/** `data` of `PaymentCompleted`. */
export type PaymentCompletedData = KnownOutput<typeof paymentCompletedDataSchema>;
