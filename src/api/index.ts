/** The session-token client of the school platform and its errors. @module schoolhooks/api */

export { createSchoolApi } from './create-school-api.js';
// A mistake in createSchoolApi's options; the same class as the receiver's, so one catch serves both.
export { ConfigError } from '../errors.js';
export type {
  CreateSessionTokenOptions,
  CreateSessionTokenResult,
  SchoolApi,
  SchoolApiOptions,
  SchoolApiView,
} from './create-school-api.js';
export { sessionSchema } from './session-schema.js';
export type { Session } from './session-schema.js';
export {
  AdminUserError,
  ApiValidationError,
  AuthenticationError,
  ForeignUserError,
  InvalidResponseError,
  isSchoolApiError,
  NetworkError,
  PermissionError,
  RateLimitError,
  SchoolApiError,
  SchoolMismatchError,
  ServerError,
  TimeoutError,
} from './errors.js';
export type {
  PermissionErrorOptions,
  RateLimitErrorOptions,
  SchoolApiErrorOptions,
} from './errors.js';
// Not exported: the error mapping, the retry policy and the response schema; they are internal
// and may change. The retry policy is described on `retryDelay` and in docs/api.md.
