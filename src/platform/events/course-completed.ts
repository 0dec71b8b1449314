/**
 * `CourseCompleted`: the user completed the course.
 * @module
 */

import { z } from 'zod';
import type { KnownOutput } from './known-output.js';
import {
  accessSchema,
  courseSchema,
  groupSchema,
  productSchema,
  statesSchema,
  userWithProfileSchema,
} from './entities.js';

/**
 * `data` of `CourseCompleted` (docs/platform.md#events): the user with profile and the course; optionally the
 * product, the access and the groups.
 */
export const courseCompletedDataSchema = z.looseObject({
  user: userWithProfileSchema,
  course: courseSchema,
  product: productSchema.nullish(),
  access: accessSchema.nullish(),
  states: statesSchema.nullish(),
  groups: z.array(groupSchema).nullish(),
});
/** `data` of `CourseCompleted`. */
export type CourseCompletedData = KnownOutput<typeof courseCompletedDataSchema>;
