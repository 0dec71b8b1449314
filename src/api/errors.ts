/**
 * Errors of the API client. Every one extends {@link SchoolApiError}; none ever carries
 * the API key or a session token in its message or its fields.
 * @module
 */

import type { ListKind } from './list-operations.js';

const BRAND = Symbol.for('schoolhooks.api-error');

/** What every {@link SchoolApiError} is made of. */
export interface SchoolApiErrorOptions {
  /** The HTTP status of the platform's answer; `0` when no answer arrived (network, timeout). */
  status: number;
  /** The platform's `cause` string (`Forbidden`, `validation`…), or a client code such as `timeout`. */
  code: string;
  /** The platform's `message` (an array for validation errors, otherwise one entry). */
  messages?: readonly string[] | undefined;
  /** The standard `Error.cause`: what went wrong underneath (a fetch `TypeError`, for instance). */
  cause?: unknown;
}

/**
 * The base class of every error the API client throws. It is also thrown as such for an answer
 * no subclass describes (a 404, a redirect).
 *
 * @example
 * ```ts
 * try {
 *   await api.createSessionToken({ userId });
 * } catch (error) {
 *   if (isSchoolApiError(error)) console.warn(error.status, error.code, error.messages);
 *   else throw error;
 * }
 * ```
 */
export class SchoolApiError extends Error {
  override name: string = 'SchoolApiError';
  /** The HTTP status; `0` when no answer arrived. */
  readonly status: number;
  /** The platform's `cause`, or a client code (`network`, `timeout`, `invalid_response`…). */
  readonly code: string;
  /** The platform's messages, with any occurrence of the API key redacted. */
  readonly messages: readonly string[];

  constructor(message: string, { status, code, messages = [], cause }: SchoolApiErrorOptions) {
    super(message, cause === undefined ? undefined : { cause });
    this.status = status;
    this.code = code;
    this.messages = Object.freeze([...messages]);
    Object.defineProperty(this, BRAND, { value: true });
  }
}

/**
 * True for any {@link SchoolApiError}, even one created by another copy of this package (another
 * realm, a CJS and an ESM copy side by side), where `instanceof` would say false.
 *
 * @example
 * ```ts
 * if (isSchoolApiError(error) && error.status === 401) rotateApiKey();
 * ```
 */
export function isSchoolApiError(value: unknown): value is SchoolApiError {
  return typeof value === 'object' && value !== null && BRAND in value;
}

/**
 * 401 `Forbidden`: the user is not found for this seller or belongs to another school
 * ("Forbidden seller resource - seller not entity owner").
 *
 * @example
 * ```ts
 * if (error instanceof ForeignUserError) return reply(404, 'unknown student');
 * ```
 */
export class ForeignUserError extends SchoolApiError {
  override name = 'ForeignUserError' as const;
}

/**
 * 400 `ForbiddenSchoolMismatch`: the `School-Id` header is not the seller's school. A
 * configuration error: check `schoolId` against the API keys page.
 *
 * @example
 * ```ts
 * if (error instanceof SchoolMismatchError) logger.error('schoolId is misconfigured');
 * ```
 */
export class SchoolMismatchError extends SchoolApiError {
  override name = 'SchoolMismatchError' as const;
}

/**
 * 400 `Forbidden`: the user has admin-panel permissions ("User is school admin or manager");
 * session tokens are issued to students only.
 *
 * @example
 * ```ts
 * if (error instanceof AdminUserError) return reply(403, 'staff sign in with a password');
 * ```
 */
export class AdminUserError extends SchoolApiError {
  override name = 'AdminUserError' as const;
}

/**
 * 400 `validation` (or any other 400): the platform rejected the request; `messages` lists why,
 * e.g. `['userId must be an integer number']`.
 *
 * @example
 * ```ts
 * if (error instanceof ApiValidationError) console.warn(error.messages.join('; '));
 * ```
 */
export class ApiValidationError extends SchoolApiError {
  override name = 'ApiValidationError' as const;
}

/**
 * 401 for any reason but a foreign user or a missing permission; `code` is the platform's cause:
 * `Unauthorized` (the API key is missing, wrong or revoked), `Blocked` (the key's user is
 * banned), `Forbidden` (`Seller-Id` is missing or not a seller the key belongs to).
 *
 * @example
 * ```ts
 * if (error instanceof AuthenticationError && error.code === 'Blocked') alertOps('the API user is banned');
 * ```
 */
export class AuthenticationError extends SchoolApiError {
  override name = 'AuthenticationError' as const;
}

/**
 * The platform found no such user (its cause `UserNotFound`): `updateUser`, `getUserState` or
 * `setUserState` named an id the school has no user for. (`findUser` resolves to null instead.)
 *
 * @example
 * ```ts
 * try {
 *   await api.updateUser(userId, { profile: { firstName } });
 * } catch (error) {
 *   if (error instanceof UserNotFoundError) return api.upsertUser({ email, profile: { firstName } });
 *   throw error;
 * }
 * ```
 */
export class UserNotFoundError extends SchoolApiError {
  override name = 'UserNotFoundError' as const;
}

/** What a {@link PermissionError} is made of. */
export interface PermissionErrorOptions extends SchoolApiErrorOptions {
  /** The permission code the platform named, e.g. `SchoolManageUsers`. */
  permission?: string | undefined;
}

/**
 * The API key may not do this. Either a 401 `Forbidden` whose message names a missing permission
 * (`Forbidden seller resource - permissions SchoolManageUsers`), with that code in `permission`
 * and a message naming the checkbox to tick; or a 403, the key's user is not an API client
 * (`permission` undefined).
 *
 * @example
 * ```ts
 * if (error instanceof PermissionError) alertOps(error.message); // says which permission to grant, and where
 * ```
 */
export class PermissionError extends SchoolApiError {
  override name = 'PermissionError' as const;
  /** The permission code the platform named (`SchoolManageUsers`), if it named one. */
  readonly permission: string | undefined;

  constructor(message: string, options: PermissionErrorOptions) {
    super(message, options);
    this.permission = options.permission;
  }
}

/** What a {@link RateLimitError} is made of. */
export interface RateLimitErrorOptions extends SchoolApiErrorOptions {
  /** When the platform allows the next request, if it said so. */
  retryAfter?: Date | undefined;
}

/**
 * 429: too many requests. Thrown once the retries are spent, or at once when the platform asks
 * to wait longer than the client's longest backoff.
 *
 * @example
 * ```ts
 * if (error instanceof RateLimitError) queue.retryAt(error.retryAfter ?? new Date(Date.now() + 60_000));
 * ```
 */
export class RateLimitError extends SchoolApiError {
  override name = 'RateLimitError' as const;
  /** From the body's `data.retryAfter` or the `Retry-After` header (seconds or an HTTP date). */
  readonly retryAfter: Date | undefined;

  constructor(message: string, options: RateLimitErrorOptions) {
    super(message, options);
    this.retryAfter = options.retryAfter;
  }
}

/**
 * 5xx: the platform failed. Thrown once the retries are spent.
 *
 * @example
 * ```ts
 * if (error instanceof ServerError) return reply(503, 'try again shortly');
 * ```
 */
export class ServerError extends SchoolApiError {
  override name = 'ServerError' as const;
}

/**
 * No answer: DNS, connection refused or reset, TLS. `status` is 0, `code` is `network`, and
 * `cause` holds the underlying fetch error.
 *
 * @example
 * ```ts
 * if (error instanceof NetworkError) console.warn('platform unreachable', error.cause);
 * ```
 */
export class NetworkError extends SchoolApiError {
  override name = 'NetworkError' as const;
}

/**
 * No complete answer within `timeoutMs` (per attempt). `status` is 0, `code` is `timeout`.
 * Retried only by the calls that are safe to repeat (users but `createUser`, groups, exports);
 * never by the session token (the platform may still be creating the session) or `createUser`.
 *
 * @example
 * ```ts
 * if (error instanceof TimeoutError) console.warn(error.message);
 * ```
 */
export class TimeoutError extends SchoolApiError {
  override name = 'TimeoutError' as const;
}

/**
 * A success status whose body is not what the operation answers (the session token's
 * `{ payload: { isCreated, session } }`, a list's page, a user operation's `{ user }`…);
 * `code` is `invalid_response` and `messages` name the fields at fault (never their values).
 *
 * @example
 * ```ts
 * if (error instanceof InvalidResponseError) console.error(error.messages);
 * ```
 */
export class InvalidResponseError extends SchoolApiError {
  override name = 'InvalidResponseError' as const;
}

/** How an export ended without its file: its `code`. */
export type ExportErrorCode = 'export_failed' | 'export_canceled' | 'export_timeout';

/** What an {@link ExportError} is made of. */
export interface ExportErrorOptions extends SchoolApiErrorOptions {
  code: ExportErrorCode;
  /** The export's workflow execution (its result is read at `/workflow-execution/<uuid>/result`). */
  uuid: string;
  /** The workflow's last status: `Failed`, `Canceled`, or the one it still had when the wait ended. */
  exportStatus: string;
}

/**
 * An export that ended without its file: `code` is `export_failed` or `export_canceled` when the
 * platform's workflow says `Failed` or `Canceled`, and `export_timeout` when it had not finished
 * within `maxWaitMs` (it may still finish: `uuid` names it). `status` is the HTTP status of the
 * last answer read (200).
 *
 * @example
 * ```ts
 * try {
 *   const file = await api.exportQuery({ type: 'GroupMemberFindMany', filter: { groupId: 12 } });
 *   console.log(file.fileUrl);
 * } catch (error) {
 *   if (error instanceof ExportError && error.code === 'export_timeout') retryLater(error.uuid);
 *   else throw error;
 * }
 * ```
 */
export class ExportError extends SchoolApiError {
  override name = 'ExportError' as const;
  declare readonly code: ExportErrorCode;
  /** The export's workflow execution uuid. */
  readonly uuid: string;
  /** The workflow's last status (`Failed`, `Canceled`, or `Waiting`/`Processing` on a timeout). */
  readonly exportStatus: string;

  constructor(message: string, options: ExportErrorOptions) {
    super(message, options);
    this.uuid = options.uuid;
    this.exportStatus = options.exportStatus;
  }
}

/** An item of a list that did not match its schema (see {@link InvalidListItemsError}). */
export interface InvalidListItem {
  /** Which list: `invoice`, `access`, `certificate` or `user`. */
  readonly kind: ListKind;
  /**
   * The item's id field (`invoiceId`, `accessId`, `certificateId`, `id`) when it holds a number or
   * a string; undefined when the id itself is missing or unreadable.
   */
  readonly id: number | string | undefined;
  /** Where the item stood in the listing, from 0: its page's `skip` plus its index on the page. */
  readonly position: number;
  /** What is wrong, as `path: message`; never a value, so no personal data reaches a log. */
  readonly issues: readonly string[];
}

/** What an {@link InvalidListItemsError} is made of. */
export interface InvalidListItemsErrorOptions extends SchoolApiErrorOptions {
  /** The items that did not match, in the order they were met. */
  items: readonly InvalidListItem[];
}

/**
 * Items of a list that did not match their schema, thrown when the listing is over (every valid
 * item has been yielded first) unless the call passed `onInvalidItem`. `status` is 200, `code`
 * `invalid_items`; `items` name each one by its id (or its position when the id is missing).
 *
 * @example
 * ```ts
 * try {
 *   for await (const invoice of api.invoices({ paid: true })) await grant(invoice);
 * } catch (error) {
 *   if (error instanceof InvalidListItemsError) alertOps(error.items.map((item) => item.id));
 *   else throw error;
 * }
 * ```
 */
export class InvalidListItemsError extends SchoolApiError {
  override name = 'InvalidListItemsError' as const;
  /** The items that did not match, in the order they were met. */
  readonly items: readonly InvalidListItem[];

  constructor(message: string, options: InvalidListItemsErrorOptions) {
    super(message, options);
    this.items = Object.freeze([...options.items]);
  }
}
