/**
 * `CertificateIssued`: a certificate was issued for completing a course, once per user and course.
 * @module
 */

import { z } from 'zod';
import type { KnownOutput } from './known-output.js';
import {
  certificateSchema,
  courseSchema,
  productSchema,
  statesSchema,
  userWithProfileSchema,
} from './entities.js';

/**
 * `data` of `CertificateIssued` (docs/platform.md#events): the user with profile, the course, optionally the
 * product, and the certificate.
 */
export const certificateIssuedDataSchema = z.looseObject({
  user: userWithProfileSchema,
  course: courseSchema,
  product: productSchema.nullish(),
  // The certificate's public link is what a handler sends on: part of the spine (docs/events.md).
  certificate: certificateSchema.extend({ link: z.string() }),
  states: statesSchema.nullish(),
});
/** `data` of `CertificateIssued`. */
export type CertificateIssuedData = KnownOutput<typeof certificateIssuedDataSchema>;
