/** The API client of the school platform (session tokens, the four lists, users, groups and exports) and its errors. @module schoolhooks/api */

export { createSchoolApi } from './create-school-api.js';
// A mistake in createSchoolApi's options; the same class as the receiver's, so one catch serves both.
export { ConfigError } from '../errors.js';
export type {
  CreateSessionTokenOptions,
  CreateSessionTokenResult,
  SchoolApi,
  SchoolApiOptions,
  SchoolApiList,
  SchoolApiView,
} from './create-school-api.js';
export type {
  CertificateListOptions,
  InvoiceListOptions,
  InvoiceType,
  ListKind,
  ListOptions,
  ProductAccessListOptions,
  UserListOptions,
  UserStatus,
} from './list-operations.js';
export type { DateRange } from './list-query.js';
export {
  certificateListItemSchema,
  invoiceListItemSchema,
  invoiceProductSchema,
  listedUserSchema,
  productAccessListItemSchema,
  userListItemSchema,
} from './list-schemas.js';
export type {
  CertificateListItem,
  InvoiceListItem,
  InvoiceProduct,
  ListedUser,
  ProductAccessListItem,
  UserListItem,
} from './list-schemas.js';
export type {
  ApiCallOptions,
  FindUserBy,
  SetUserStateResult,
  UpsertUserResult,
  UserContactInput,
  UserInput,
  UserProfileInput,
  UserResult,
  UserRole,
  UserSex,
  UserStateKey,
} from './user-operations.js';
export { apiUserContactSchema, apiUserSchema } from './api-user-schema.js';
export type { ApiUser, ApiUserContact } from './api-user-schema.js';
export { groupMemberSchema } from './group-members.js';
export type {
  AddGroupMembersResult,
  GroupMember,
  RemoveGroupMembersResult,
} from './group-members.js';
export type {
  ExportFile,
  ExportFormat,
  ExportQuery,
  ExportQueryOptions,
  ExportStatus,
  ExportType,
} from './export-query.js';
export { sessionSchema } from './session-schema.js';
export type { Session } from './session-schema.js';
export {
  AdminUserError,
  ApiValidationError,
  AuthenticationError,
  ExportError,
  ForeignUserError,
  InvalidListItemsError,
  InvalidResponseError,
  isSchoolApiError,
  NetworkError,
  PermissionError,
  RateLimitError,
  SchoolApiError,
  SchoolMismatchError,
  ServerError,
  TimeoutError,
  UserNotFoundError,
} from './errors.js';
export type {
  ExportErrorCode,
  ExportErrorOptions,
  InvalidListItem,
  InvalidListItemsErrorOptions,
  PermissionErrorOptions,
  RateLimitErrorOptions,
  SchoolApiErrorOptions,
} from './errors.js';
// Not exported: the error mapping, the retry policy, the response and page schemas and the query
// encoding; they are internal and may change. The retry policy is described on `retryDelay` and
// in docs/api.md.
