/**
 * `CourseLessonPracticeCompleted`: the user completed a lesson's practical assignment.
 * @module
 */

import { z } from 'zod';
import type { KnownOutput } from './known-output.js';
import {
  courseSchema,
  lessonSchema,
  looseIdSchema,
  practiceAttemptSchema,
  practiceSchema,
  statesSchema,
  userWithProfileSchema,
} from './entities.js';

/**
 * `data` of `CourseLessonPracticeCompleted` (docs/platform.md#events): the user (the spine); optionally the
 * course, the lesson, the practice, the attempt (with its score and status) and the `variantId`.
 */
export const courseLessonPracticeCompletedDataSchema = z.looseObject({
  user: userWithProfileSchema,
  course: courseSchema.nullish(),
  lesson: lessonSchema.nullish(),
  practice: practiceSchema.nullish(),
  attempt: practiceAttemptSchema.nullish(),
  variantId: looseIdSchema.nullish(),
  states: statesSchema.nullish(),
});
/** `data` of `CourseLessonPracticeCompleted`. */
export type CourseLessonPracticeCompletedData = KnownOutput<
  typeof courseLessonPracticeCompletedDataSchema
>;
