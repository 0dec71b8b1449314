/**
 * schoolhooks: verify, validate, deduplicate and dispatch the school platform's webhooks.
 * @module schoolhooks
 */

// The receiver
export { createReceiver } from './receiving/receiver.js';
export type {
  ErrorHandler,
  EventHandler,
  EventName,
  HandlerOptions,
  Logger,
  OnOptions,
  Receiver,
  ReceiverOptions,
  TenantReader,
  WebhookRequest,
  WebhookResponseBody,
  WebhookResult,
} from './receiving/receiver.js';
export type {
  HandlerContext,
  HandlerTransaction,
  HandlerTransactions,
} from './receiving/run-handlers.js';
export { OUTCOME_STATUS, OUTCOMES } from './receiving/outcome.js';
export type {
  Outcome,
  OutcomeClass,
  OutcomeLogLevel,
  OutcomeRule,
  OutcomeRun,
} from './receiving/outcome.js';
export type { HeadersInput, HeadersLike } from './receiving/request.js';
export { nodeBodyReader, requestBodyReader } from './receiving/request.js';
export type { BodyReader, NodeBodyStream } from './receiving/request.js';
export { answerHeaders, closingHeaders, defineAdapter } from './adapters/adapter-kit.js';
export type {
  Adapter,
  AdapterArgs,
  AdapterDefinition,
  AdapterOptions,
} from './adapters/adapter-kit.js';

// Many schools on one endpoint: a secret per tenant (docs/tenants.md)
export type {
  SecretLookup,
  SecretLookupAnswer,
  SecretLookupRequest,
} from './receiving/secret-source.js';
export {
  deliveryKeyOf,
  entityKeyOf,
  isTenantName,
  MAX_TENANT_LENGTH,
  recordKeyOf,
} from './keys/delivery-key.js';

// Signatures
export { computeSignature, verifySignature } from './platform/signature.js';
export type { RawBody } from './platform/signature.js';
export { signatureFailureOf } from './platform/signature-failure.js';
export type { SignatureFailure, SignatureFailureReason } from './platform/signature-failure.js';

// Stores (redisStore lives in `schoolhooks/redis`, so the core never loads ioredis)
export { memoryStore } from './stores/memory.js';
export type { MemoryStoreOptions } from './stores/memory.js';
export type {
  Claim,
  ClaimRequest,
  ClaimTransaction,
  Completion,
  HeldClaim,
  IdempotencyStore,
  InFlight,
  KeyState,
  RecordClaim,
  Settlement,
  VersionRequest,
} from './stores/types.js';

// The inbox (bullmqInbox lives in `schoolhooks/bullmq`, so the core never loads BullMQ)
export { memoryInbox } from './inbox/index.js';
export { DEFAULT_RETRY_POLICY, exponentialDelay, nextRetry } from './inbox/retry-policy.js';
export type { RetryPolicy } from './inbox/retry-policy.js';
export type {
  Inbox,
  InboxAdmin,
  InboxJob,
  InboxJobAdmin,
  InboxJobLookup,
  InboxJobState,
  InboxReconcileOptions,
  InboxWatchOptions,
  InboxWorker,
  InboxWorkers,
  InboxWorkOptions,
  ManagedInbox,
  MemoryInbox,
  MemoryInboxOptions,
  StoredDelivery,
  StoredRunOptions,
  ScheduledReconciler,
  StoredRunResult,
  WatchedWatchdog,
} from './inbox/index.js';

// Telemetry (openTelemetry lives in `schoolhooks/otel`)
export type {
  DeliveryObservation,
  HandlersRecord,
  Telemetry,
  TelemetryRecord,
  TelemetryStart,
  TraceCarrier,
} from './telemetry/telemetry.js';

// Errors
export {
  ConfigError,
  HandlerError,
  HandlerTimeoutError,
  IdempotencyConflictError,
  InboxUnavailableError,
  isSchoolhooksError,
  MalformedEnvelopeError,
  PayloadValidationError,
  RequestRejectedError,
  SchoolhooksError,
  SecretUnavailableError,
  SignatureError,
  StaleEventError,
  StoreUnavailableError,
  UnknownTenantError,
} from './errors.js';
export type { PayloadIssue, SchoolhooksErrorCode } from './errors.js';

// The entity each event is about (the ordering guard's `latestOnly`, docs/receiving.md)
export { entityOf } from './platform/entity-of.js';
export type {
  EntityEventInput,
  EntityEventName,
  EntityKind,
  EventEntity,
} from './platform/entity-of.js';

// Events: schemas, names and types. Named one by one: the same module holds the receiver's own
// parse of the envelope, which is no part of the package's API.
export {
  FIXED_CONTRACT_EVENTS,
  KNOWN_EVENTS,
  LESSON_PROGRESS_STATUSES,
  UNCONTRACTED_EVENTS,
  accessMetaSchema,
  accessSchema,
  acquiringSchema,
  avatarSchema,
  certificateIssuedDataSchema,
  certificateSchema,
  courseCompletedDataSchema,
  courseLessonPracticeCompletedDataSchema,
  courseProgressChangedDataSchema,
  courseSchema,
  discountSchema,
  envelopeSchema,
  eventDataSchemas,
  groupSchema,
  invoiceSchema,
  isFixedContractEvent,
  isKnownEvent,
  lessonProgressStatusSchema,
  lessonSchema,
  lineItemSchema,
  looseIdSchema,
  paymentCompletedDataSchema,
  paymentSchema,
  practiceAttemptSchema,
  practiceSchema,
  priceSchema,
  productEnrolledByInviteLinkDataSchema,
  productEnrolledToFreeDataSchema,
  productEnrolledViaLmsDataSchema,
  productEnrolledViaPaymentDataSchema,
  productSchema,
  profileSchema,
  schoolSchema,
  statesSchema,
  titleStateSchema,
  userAcquaintedDataSchema,
  userCreatedViaLmsDataSchema,
  userSchema,
  userSignedUpDataSchema,
  userTgConnectedDataSchema,
  userWithProfileSchema,
  utmParamsSchema,
  validateEventData,
} from './platform/events/index.js';
export type {
  Access,
  AccessMeta,
  Acquiring,
  Avatar,
  Certificate,
  CertificateIssuedData,
  Course,
  CourseCompletedData,
  CourseLessonPracticeCompletedData,
  CourseProgressChangedData,
  Currency,
  DataValidation,
  Discount,
  Envelope,
  EventData,
  EventDataMap,
  FixedEventName,
  Group,
  Invoice,
  KnownCurrency,
  KnownEventName,
  Lesson,
  LessonProgressStatus,
  LineItem,
  LooseId,
  OpenUnion,
  Payment,
  PaymentCompletedData,
  Practice,
  PracticeAttempt,
  Price,
  Product,
  ProductEnrolledByInviteLinkData,
  ProductEnrolledToFreeData,
  ProductEnrolledViaLmsData,
  ProductEnrolledViaPaymentData,
  Profile,
  School,
  States,
  TitleState,
  UncontractedEventName,
  User,
  UserAcquaintedData,
  UserCreatedViaLmsData,
  UserSignedUpData,
  UserTgConnectedData,
  UserWithProfile,
  UtmParams,
  WebhookEvent,
} from './platform/events/index.js';
export { getUtm, isInviteLinkEnrollment } from './platform/utm.js';
export type { EventUtm } from './platform/utm.js';
