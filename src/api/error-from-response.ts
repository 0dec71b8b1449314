/**
 * Maps a non-success answer of the API to its error class (docs/platform.md#api-errors).
 * @module
 */

import {
  AdminUserError,
  ApiValidationError,
  AuthenticationError,
  ForeignUserError,
  PermissionError,
  RateLimitError,
  SchoolApiError,
  SchoolMismatchError,
  ServerError,
  UserNotFoundError,
} from './errors.js';
import { parseRetryAfter } from './parse-retry-after.js';

/**
 * Who the failed request was about, for messages that say what to fix. `userId` is the user the
 * request names (the session token's, or the user of `updateUser` and the state operations); the
 * rows about that user (a user of another school, an admin) are read only when it is given: a list
 * names no user, so its 401 and 400 are read as the key's and the request's.
 */
export interface RequestContext {
  readonly userId?: number | undefined;
  readonly sellerId: number;
  readonly schoolId: number;
}

/** The fields of the platform's error body `{ success, code, cause, message, error }`. */
interface ErrorBody {
  cause: string | undefined;
  messages: string[];
  retryAfter: unknown;
}

/**
 * The error for an answer that is not 2xx. `redact` removes the API key from anything the
 * platform echoed back, so no message or field can carry it.
 */
export function errorFromResponse(
  response: { status: number; headers: Headers },
  text: string,
  context: RequestContext,
  redact: (text: string) => string,
): SchoolApiError {
  const answer = readAnswer(response, text, context, redact);
  const { status } = answer;
  // Named by its cause whatever its status (docs/platform.md#users-groups-and-exports).
  if (answer.cause === 'UserNotFound') return userNotFoundError(answer);
  if (status === 401) return unauthorizedError(answer);
  if (status === 400) return badRequestError(answer);
  if (status === 403) return forbiddenError(answer);
  if (status === 429) return rateLimitError(answer, response.headers);
  if (status >= 500) {
    return new ServerError(`the platform failed (${status})${answer.said}`, {
      status,
      code: answer.cause ?? 'server_error',
      messages: answer.messages,
    });
  }
  return new SchoolApiError(`unexpected answer from the platform (${status})${answer.said}`, {
    status,
    code: answer.cause ?? 'unexpected_status',
    messages: answer.messages,
  });
}

/** A failed answer, read and redacted, with the request it answered. */
interface FailedAnswer extends RequestContext {
  readonly status: number;
  /** The platform's messages, API key removed. */
  readonly messages: string[];
  /** The platform's `cause`, API key removed. */
  readonly cause: string | undefined;
  /** `: message; message` to append to an error message, or `''` when the platform said nothing. */
  readonly said: string;
  /** `data.retryAfter` of the body, unparsed. */
  readonly retryAfter: unknown;
}

function readAnswer(
  { status }: { status: number },
  text: string,
  { userId, sellerId, schoolId }: RequestContext,
  redact: (text: string) => string,
): FailedAnswer {
  const body = readErrorBody(text);
  const messages = body.messages.map(redact);
  return {
    status,
    messages,
    cause: body.cause === undefined ? undefined : redact(body.cause),
    said: messages.length > 0 ? `: ${messages.join('; ')}` : '',
    retryAfter: body.retryAfter,
    userId,
    sellerId,
    schoolId,
  };
}

/** 401: a user of another school, a missing permission, or a rejected key. */
function unauthorizedError(answer: FailedAnswer): SchoolApiError {
  const { status, messages, cause, said, userId, sellerId, schoolId } = answer;
  // The table of docs/platform.md#api-errors names this 401 by its text; a rejected key is a 401 as well.
  if (userId !== undefined && messages.some((message) => message.includes('not entity owner'))) {
    return new ForeignUserError(
      `user ${userId} is not a user of school ${schoolId} of seller ${sellerId}`,
      { status, code: cause ?? 'Forbidden', messages },
    );
  }
  const permission = missingPermission(messages);
  if (permission !== undefined) {
    return new PermissionError(permissionMessage(permission, sellerId), {
      status,
      code: cause ?? 'Forbidden',
      messages,
      permission,
    });
  }
  return new AuthenticationError(`${AUTHENTICATION_FAILURES[cause ?? ''] ?? GENERIC_401}${said}`, {
    status,
    code: cause ?? 'unauthorized',
    messages,
  });
}

/** 400: a school that is not the seller's, an admin instead of a student, or invalid input. */
function badRequestError(answer: FailedAnswer): SchoolApiError {
  const { status, messages, cause, said, userId, sellerId, schoolId } = answer;
  if (cause === 'ForbiddenSchoolMismatch') {
    return new SchoolMismatchError(
      `School-Id ${schoolId} is not the school of seller ${sellerId}`,
      { status, code: cause, messages },
    );
  }
  if (cause === 'Forbidden' && userId !== undefined) {
    return new AdminUserError(
      `user ${userId} is a school admin or manager; tokens are issued to students only`,
      { status, code: cause, messages },
    );
  }
  return new ApiValidationError(`the platform rejected the request (400)${said}`, {
    status,
    code: cause ?? 'bad_request',
    messages,
  });
}

/** Any status whose cause is `UserNotFound`: the request named a user the school does not have. */
function userNotFoundError({
  status,
  messages,
  cause,
  said,
  userId,
}: FailedAnswer): SchoolApiError {
  const who = userId === undefined ? 'the user' : `user ${userId}`;
  return new UserNotFoundError(`the platform found no ${who} (${status} UserNotFound)${said}`, {
    status,
    code: cause ?? 'UserNotFound',
    messages,
  });
}

/** 403: the key's user is not an API client. */
function forbiddenError({ status, messages, cause, said }: FailedAnswer): SchoolApiError {
  return new PermissionError(
    `the user the API key belongs to is not an API client (403); issue the key to a service ` +
      `user at ${API_KEYS_PAGE}${said}`,
    { status, code: cause ?? 'forbidden', messages },
  );
}

/** 429: when to retry comes from the body's `data.retryAfter`, else the `Retry-After` header. */
function rateLimitError(answer: FailedAnswer, headers: Headers): SchoolApiError {
  const { status, messages, cause, said } = answer;
  const retryAfter =
    parseRetryAfter(answer.retryAfter) ?? parseRetryAfter(headers.get('retry-after'));
  const when = retryAfter ? `; retry after ${retryAfter.toISOString()}` : '';
  return new RateLimitError(`rate limited by the platform (429)${when}${said}`, {
    status,
    code: cause ?? 'rate_limited',
    messages,
    retryAfter,
  });
}

/** Where the school owner issues API keys and grants their permissions (docs/platform.md#authentication). */
const API_KEYS_PAGE = 'Manage → School → For developers → API keys';

/** The checkbox labels of permission codes the platform names (docs/platform.md#authentication and #webhook-endpoints). */
const PERMISSION_LABELS: Readonly<Record<string, string>> = {
  SchoolManageUsers: 'School User Management',
  SchoolManageSettings: 'School Settings Management',
};

const GENERIC_401 = 'the platform rejected the API key (401)';

/** What each 401 cause of the platform means, and what to do about it. */
const AUTHENTICATION_FAILURES: Readonly<Record<string, string>> = {
  Unauthorized: `the platform rejected the API key (401 Unauthorized): it is missing, wrong or revoked; check it at ${API_KEYS_PAGE}`,
  Blocked: `the user the API key belongs to is blocked (401 Blocked); unblock it, or issue a key to another user at ${API_KEYS_PAGE}`,
  Forbidden: `the API key may not act for this seller (401 Forbidden): check sellerId against ${API_KEYS_PAGE}, card Integration data → Identifiers`,
};

/** The permission code in `Forbidden seller resource - permissions SchoolManageUsers`. */
function missingPermission(messages: readonly string[]): string | undefined {
  for (const message of messages) {
    const code = /\bpermissions?\s+([A-Za-z][A-Za-z0-9_]*)/.exec(message)?.[1];
    if (code !== undefined) return code;
  }
  return undefined;
}

function permissionMessage(permission: string, sellerId: number): string {
  const label = PERMISSION_LABELS[permission];
  const checkbox = label === undefined ? permission : `"${label}" (${permission})`;
  return (
    `the API key lacks the permission ${permission} for seller ${sellerId} (401 Forbidden): ` +
    `tick ${checkbox} for the key at ${API_KEYS_PAGE}`
  );
}

function readErrorBody(text: string): ErrorBody {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // An HTML page from a proxy, or nothing at all: the status alone decides.
    return { cause: undefined, messages: [], retryAfter: undefined };
  }
  if (!isRecord(json)) return { cause: undefined, messages: [], retryAfter: undefined };
  const messages = toMessages(json['message']);
  return {
    cause: typeof json['cause'] === 'string' ? json['cause'] : undefined,
    messages: messages.length > 0 ? messages : toMessages(json['error']),
    retryAfter: isRecord(json['data']) ? json['data']['retryAfter'] : undefined,
  };
}

function toMessages(value: unknown): string[] {
  if (typeof value === 'string') return value === '' ? [] : [value];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string');
  return [];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
