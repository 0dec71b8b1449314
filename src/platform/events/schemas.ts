/**
 * The schemas and types of every event's `data` and of the entities they carry: what the package
 * exports of `events/`, apart from the registry in `index.ts`.
 * @module
 */

export {
  accessMetaSchema,
  accessSchema,
  acquiringSchema,
  avatarSchema,
  certificateSchema,
  courseSchema,
  discountSchema,
  groupSchema,
  invoiceSchema,
  lessonSchema,
  lineItemSchema,
  looseIdSchema,
  paymentSchema,
  practiceAttemptSchema,
  practiceSchema,
  priceSchema,
  productSchema,
  profileSchema,
  schoolSchema,
  statesSchema,
  titleStateSchema,
  userSchema,
  userWithProfileSchema,
  utmParamsSchema,
} from './entities.js';
export type {
  Access,
  AccessMeta,
  Acquiring,
  Avatar,
  Certificate,
  Course,
  Currency,
  KnownCurrency,
  Discount,
  Group,
  Invoice,
  Lesson,
  LineItem,
  LooseId,
  OpenUnion,
  Payment,
  Practice,
  PracticeAttempt,
  Price,
  Product,
  Profile,
  School,
  States,
  TitleState,
  User,
  UserWithProfile,
  UtmParams,
} from './entities.js';

export { certificateIssuedDataSchema } from './certificate-issued.js';
export { courseCompletedDataSchema } from './course-completed.js';
export { courseLessonPracticeCompletedDataSchema } from './course-lesson-practice-completed.js';
export {
  courseProgressChangedDataSchema,
  LESSON_PROGRESS_STATUSES,
  lessonProgressStatusSchema,
} from './course-progress-changed.js';
export { paymentCompletedDataSchema } from './payment-completed.js';
export { productEnrolledByInviteLinkDataSchema } from './product-enrolled-by-invite-link.js';
export { productEnrolledToFreeDataSchema } from './product-enrolled-to-free.js';
export { productEnrolledViaLmsDataSchema } from './product-enrolled-via-lms.js';
export { productEnrolledViaPaymentDataSchema } from './product-enrolled-via-payment.js';
export { userAcquaintedDataSchema } from './user-acquainted.js';
export { userCreatedViaLmsDataSchema } from './user-created-via-lms.js';
export { userSignedUpDataSchema } from './user-signed-up.js';
export { userTgConnectedDataSchema } from './user-tg-connected.js';

export type { CertificateIssuedData } from './certificate-issued.js';
export type { CourseCompletedData } from './course-completed.js';
export type { CourseLessonPracticeCompletedData } from './course-lesson-practice-completed.js';
export type { CourseProgressChangedData, LessonProgressStatus } from './course-progress-changed.js';
export type { PaymentCompletedData } from './payment-completed.js';
export type { ProductEnrolledByInviteLinkData } from './product-enrolled-by-invite-link.js';
export type { ProductEnrolledToFreeData } from './product-enrolled-to-free.js';
export type { ProductEnrolledViaLmsData } from './product-enrolled-via-lms.js';
export type { ProductEnrolledViaPaymentData } from './product-enrolled-via-payment.js';
export type { UserAcquaintedData } from './user-acquainted.js';
export type { UserCreatedViaLmsData } from './user-created-via-lms.js';
export type { UserSignedUpData } from './user-signed-up.js';
export type { UserTgConnectedData } from './user-tg-connected.js';
