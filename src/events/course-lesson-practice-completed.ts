/**
 * `CourseLessonPracticeCompleted`: the user completed a lesson's practical assignment.
 * @module
 */

import { z } from 'zod';
import { courseSchema, looseIdSchema, statesSchema, userWithProfileSchema } from './entities.js';

/**
 * `data` of `CourseLessonPracticeCompleted` (interface 6): the user with profile; optionally the
 * course, the lesson, the practice, the attempt (with its score and status) and the `variantId`.
 * The lesson's and the practice's fields are not shown by the interface.
 */
export const courseLessonPracticeCompletedDataSchema = z.looseObject({
  user: userWithProfileSchema,
  course: courseSchema.optional(),
  lesson: z.looseObject({}).optional(),
  practice: z.looseObject({}).optional(),
  attempt: z
    .looseObject({
      // The types are not shown; an attempt that is not graded yet may carry no score.
      score: z.number().nullable(),
      status: z.string(),
    })
    .optional(),
  variantId: looseIdSchema.optional(),
  states: statesSchema.optional(),
});
/** `data` of `CourseLessonPracticeCompleted`. */
export type CourseLessonPracticeCompletedData = z.infer<
  typeof courseLessonPracticeCompletedDataSchema
>;
