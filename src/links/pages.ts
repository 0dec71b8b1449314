/**
 * The screens of docs/platform.md#deep-links: lesson and course.
 * @module
 */

/** The route pattern of the lesson screen. */
export const LESSON_PAGE_ID = '/courses/:page([0-9]+)/:courseId([0-9]+)/study/:lessonId([0-9]+)';
/** The route pattern of the course screen. */
export const COURSE_PAGE_ID = '/course/:courseId([0-9_A-Za-z]+)';

const NUMERIC = /^[0-9]+$/;
const COURSE_ID = /^[0-9_A-Za-z]+$/;

/** An id as a number (a positive integer) or a string that matches the screen's pattern. */
export type PageIdValue = number | string;

/** Options of {@link lessonPage}. */
export interface LessonPageOptions {
  courseId: PageIdValue;
  lessonId: PageIdValue;
  /** The page of the course; `1` reaches a lesson. Default 1. */
  page?: PageIdValue;
}

/** The lesson screen with its parameters. */
export interface LessonPage {
  readonly pageId: typeof LESSON_PAGE_ID;
  readonly params: { readonly page: string; readonly courseId: string; readonly lessonId: string };
}

/** Options of {@link coursePage}. */
export interface CoursePageOptions {
  courseId: PageIdValue;
}

/** The course screen with its parameters. */
export interface CoursePage {
  readonly pageId: typeof COURSE_PAGE_ID;
  readonly params: { readonly courseId: string };
}

/**
 * The lesson screen. Each id is a positive integer or a string of digits (`[0-9]+`).
 *
 * @example
 * ```ts
 * lessonPage({ courseId: 12, lessonId: 345 });
 * // { pageId: '/courses/:page([0-9]+)/:courseId([0-9]+)/study/:lessonId([0-9]+)',
 * //   params: { page: '1', courseId: '12', lessonId: '345' } }
 * ```
 */
export function lessonPage({ courseId, lessonId, page = 1 }: LessonPageOptions): LessonPage {
  return {
    pageId: LESSON_PAGE_ID,
    params: {
      page: idParam(page, 'page', NUMERIC),
      courseId: idParam(courseId, 'courseId', NUMERIC),
      lessonId: idParam(lessonId, 'lessonId', NUMERIC),
    },
  };
}

/**
 * The course screen. `courseId` is a positive integer or a string of `[0-9_A-Za-z]+`.
 *
 * @example
 * ```ts
 * coursePage({ courseId: 'intro_2024' });
 * // { pageId: '/course/:courseId([0-9_A-Za-z]+)', params: { courseId: 'intro_2024' } }
 * ```
 */
export function coursePage({ courseId }: CoursePageOptions): CoursePage {
  return { pageId: COURSE_PAGE_ID, params: { courseId: idParam(courseId, 'courseId', COURSE_ID) } };
}

function idParam(value: unknown, name: string, pattern: RegExp): string {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return String(value);
  if (typeof value === 'string' && pattern.test(value)) return value;
  throw new TypeError(`${name} must be a positive integer or a string matching ${pattern.source}`);
}
