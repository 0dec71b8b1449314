/** Mobile deep links and `___uat` sign-in links; no Node-only API. @module schoolhooks/links */

export { buildDeepLink, DEFAULT_DEEP_LINK_SCHEME } from './build-deep-link.js';
export { parseDeepLink } from './parse-deep-link.js';
export { buildSignInUrl, SIGN_IN_TOKEN_PARAM } from './build-sign-in-url.js';
export { COURSE_PAGE_ID, coursePage, LESSON_PAGE_ID, lessonPage } from './pages.js';
export type {
  CoursePage,
  CoursePageOptions,
  LessonPage,
  LessonPageOptions,
  PageIdValue,
} from './pages.js';
export type {
  DeepLink,
  DeepLinkAction,
  DeepLinkOptions,
  DeepLinkPage,
  LoginByTokenAction,
  OpenPageAction,
  PageParams,
} from './types.js';
// Not exported: the base64url codec and the checks (internal), and isSecureUrl, which the
// session-token client shares.
