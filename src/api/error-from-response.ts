/**
 * Maps a non-success answer of the session-token operation to its error class (interface 7).
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
} from './errors.js';
import { parseRetryAfter } from './parse-retry-after.js';

/** Who the failed request was about, for messages that say what to fix. */
export interface RequestContext {
  readonly userId: number;
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
  const { status } = response;
  const body = readErrorBody(text);
  const messages = body.messages.map(redact);
  const cause = body.cause === undefined ? undefined : redact(body.cause);
  const said = messages.length > 0 ? `: ${messages.join('; ')}` : '';
  const { userId, sellerId, schoolId } = context;

  if (status === 401) {
    // The table of section 7 names this 401 by its text; a rejected key is a 401 as well.
    if (messages.some((message) => message.includes('not entity owner'))) {
      return new ForeignUserError(
        `user ${userId} is not a user of school ${schoolId} of seller ${sellerId}`,
        { status, code: cause ?? 'Forbidden', messages },
      );
    }
    return new AuthenticationError(`the platform rejected the API key (401)${said}`, {
      status,
      code: cause ?? 'unauthorized',
      messages,
    });
  }
  if (status === 400) {
    if (cause === 'ForbiddenSchoolMismatch') {
      return new SchoolMismatchError(
        `School-Id ${schoolId} is not the school of seller ${sellerId}`,
        { status, code: cause, messages },
      );
    }
    if (cause === 'Forbidden') {
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
  if (status === 403) {
    return new PermissionError(
      `the API key lacks a permission (SchoolManageUsers) for seller ${sellerId} (403)${said}`,
      { status, code: cause ?? 'forbidden', messages },
    );
  }
  if (status === 429) {
    const retryAfter =
      parseRetryAfter(body.retryAfter) ?? parseRetryAfter(response.headers.get('retry-after'));
    const when = retryAfter ? `; retry after ${retryAfter.toISOString()}` : '';
    return new RateLimitError(`rate limited by the platform (429)${when}${said}`, {
      status,
      code: cause ?? 'rate_limited',
      messages,
      retryAfter,
    });
  }
  if (status >= 500) {
    return new ServerError(`the platform failed (${status})${said}`, {
      status,
      code: cause ?? 'server_error',
      messages,
    });
  }
  return new SchoolApiError(`unexpected answer from the platform (${status})${said}`, {
    status,
    code: cause ?? 'unexpected_status',
    messages,
  });
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
