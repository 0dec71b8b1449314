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

// Events: the schemas and types of each event and entity, and the registry. The registry is named
// one by one: its module also holds the receiver's own parse of the envelope, no part of the API.
export * from './platform/events/schemas.js';
export {
  envelopeSchema,
  eventDataSchemas,
  FIXED_CONTRACT_EVENTS,
  isFixedContractEvent,
  isKnownEvent,
  KNOWN_EVENTS,
  UNCONTRACTED_EVENTS,
  validateEventData,
} from './platform/events/index.js';
export type {
  DataValidation,
  Envelope,
  EventData,
  EventDataMap,
  FixedEventName,
  KnownEventName,
  UncontractedEventName,
  WebhookEvent,
} from './platform/events/index.js';
export { getUtm, isInviteLinkEnrollment } from './platform/utm.js';
export type { EventUtm } from './platform/utm.js';
