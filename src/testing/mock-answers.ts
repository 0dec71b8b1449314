/**
 * The answers of the mock platform API, shaped as the platform answers (docs/platform.md#api-errors
 * and #users-groups-and-exports): `{ success: true, code, payload }` for a success,
 * `{ success: false, code, cause, message, error }` for an error.
 * @module
 */

/** An answer of the mock: a status and a JSON body. */
export interface MockAnswer {
  status: number;
  body: unknown;
}

/** A success: `{ success: true, code: status, payload }`. */
export function okAnswer(payload: unknown, status = 200): MockAnswer {
  return { status, body: { success: true, code: status, payload } };
}

/** An error of the platform: its `cause`, and `message` and `error` the same text. */
export function errorAnswer(status: number, cause: string, message: string): MockAnswer {
  return { status, body: { success: false, code: status, cause, message, error: message } };
}

/** The platform's 400 `validation` answer, with its messages (every mock route answers it so). */
export function validation(messages: string[]): MockAnswer {
  return {
    status: 400,
    body: {
      success: false,
      code: 400,
      cause: 'validation',
      message: messages,
      error: 'Bad Request',
    },
  };
}

/** Whether `value` is a plain JSON object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A request to one of the mock's operations, as its route reads it. */
export interface MockCall {
  /** The path's ids, as the route's pattern captured them. */
  readonly params: readonly string[];
  readonly query: URLSearchParams;
  /** The JSON body, parsed; undefined for a GET. */
  readonly body: unknown;
}

/** One operation of the mock beside the session token and the lists. */
export interface MockRoute {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** The whole path; its groups are the ids in it. */
  readonly pattern: RegExp;
  /** Any one of them lets the key call it. */
  readonly permissions: readonly string[];
  readonly serve: (call: MockCall) => MockAnswer;
}
