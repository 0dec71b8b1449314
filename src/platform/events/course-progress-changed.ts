/**
 * `CourseProgressChanged`: a lesson's status changed for the user.
 * @module
 */

import { z } from 'zod';
import type { KnownOutput } from './known-output.js';
import {
  accessSchema,
  courseSchema,
  groupSchema,
  looseIdSchema,
  productSchema,
  statesSchema,
  userWithProfileSchema,
} from './entities.js';

/** The statuses of a lesson's progress (docs/platform.md#events). */
export const LESSON_PROGRESS_STATUSES = [
  'NotStarted',
  'OnTheory',
  'OnPractice',
  'OnReview',
  'OnCorrection',
  'Completed',
] as const;

/** A lesson's progress status (docs/platform.md#events). */
export const lessonProgressStatusSchema = z.enum(LESSON_PROGRESS_STATUSES);
/** A lesson's progress status. */
export type LessonProgressStatus = KnownOutput<typeof lessonProgressStatusSchema>;

/**
 * `data` of `CourseProgressChanged` (docs/platform.md#events): the user with profile and the course;
 * optionally the product, the access, the groups, the lesson's new `status` and its `lessonId`.
 *
 * @example
 * ```ts
 * const data = courseProgressChangedDataSchema.parse(event.data);
 * if (data.status === 'Completed') console.log(`lesson ${data.lessonId} done`);
 * ```
 */
export const courseProgressChangedDataSchema = z.looseObject({
  user: userWithProfileSchema,
  course: courseSchema,
  product: productSchema.nullish(),
  access: accessSchema.nullish(),
  states: statesSchema.nullish(),
  groups: z.array(groupSchema).nullish(),
  // The one set the interface closes (3.1): any other string is refused.
  status: lessonProgressStatusSchema.nullish(),
  lessonId: looseIdSchema.nullish(),
});
/** `data` of `CourseProgressChanged`. */
export type CourseProgressChangedData = KnownOutput<typeof courseProgressChangedDataSchema>;
