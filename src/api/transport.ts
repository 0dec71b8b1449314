/**
 * One request of the API client and its answer: sent within `timeoutMs`, redirects refused, a
 * non-success answer turned into its {@link SchoolApiError}. Every operation of the client
 * (the session token, the lists, users, groups and exports) sends through {@link request}.
 * @module
 */

import { z } from 'zod';
import { errorFromResponse, type RequestContext } from './error-from-response.js';
import { InvalidResponseError, NetworkError, SchoolApiError, TimeoutError } from './errors.js';

/** The part of a client that is safe to print. */
export interface SchoolApiView {
  baseUrl: string;
  sellerId: number;
  schoolId: number;
}

/**
 * What one client needs to send a request. It holds the API key (in `headers` and `redact`), so it
 * lives only in the closures of the client's methods and is never returned.
 */
export interface Client {
  readonly view: SchoolApiView;
  readonly origin: string;
  /** `Authorization`, `Seller-Id`, `School-Id` and `Accept`: what every operation sends. */
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly send: typeof globalThis.fetch;
  /** Whatever the platform echoes back goes through this before it reaches an error. */
  readonly redact: (text: string) => string;
}

/** One request: its method, its path under the API root (query included) and its JSON body. */
export interface ApiRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Starts with `/saas/v2/`. */
  readonly path: string;
  /** A JSON text, sent with `Content-Type: application/json`. */
  readonly body?: string;
}

/**
 * Sends one attempt of `call` and gives the status and text of a 2xx answer. A redirect is a
 * {@link SchoolApiError} `redirect`; any other answer the error of `errorFromResponse`; no answer
 * a {@link NetworkError} or {@link TimeoutError}; the caller's abort rejects with its reason.
 */
export async function request(
  client: Client,
  call: ApiRequest,
  context: RequestContext,
  signal: AbortSignal | undefined,
): Promise<{ status: number; text: string }> {
  const { response, text } = await fetchAnswer(client, call, signal);
  const { status } = response;
  if (response.type === 'opaqueredirect' || (status >= 300 && status < 400)) {
    throw new SchoolApiError(`the platform answered with a redirect (${status}), not followed`, {
      status,
      code: 'redirect',
    });
  }
  if (!response.ok) throw errorFromResponse(response, text, context, client.redact);
  return { status, text };
}

/**
 * Reads a 2xx answer's `text` with `schema`. Not JSON, or not what the schema wants, is an
 * {@link InvalidResponseError} whose `messages` name the fields at fault and never their values
 * (Zod's wording and paths only), so no token or personal data can reach an error.
 */
export function readBody<S extends z.ZodType>(
  status: number,
  text: string,
  schema: S,
): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new InvalidResponseError(`the platform answered ${status} with a body that is not JSON`, {
      status,
      code: 'invalid_response',
    });
  }
  const result = schema.safeParse(json);
  if (result.success) return result.data;
  const messages = issueMessages(result.error);
  throw new InvalidResponseError(
    `the platform answered ${status} with an unexpected body: ${messages.join('; ')}`,
    { status, code: 'invalid_response', messages },
  );
}

/**
 * The answer of an operation whose fields are `shape`: inside `payload`, as the platform's
 * reference and its session-token operation answer (`{ success, code, payload: { user } }`), or
 * at the top level, as its own SDK reads them (`{ user }`); both are accepted
 * (docs/platform.md#users-groups-and-exports). Loose: fields added later pass through.
 */
export function answerSchema<Shape extends z.core.$ZodLooseShape>(shape: Shape) {
  return z.preprocess(
    (body) => (isRecord(body) && isRecord(body['payload']) ? body['payload'] : body),
    z.looseObject(shape),
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `path.to.field: what is wrong` for each issue: never the value, so no secret can leak. */
export function issueMessages(error: z.ZodError): string[] {
  return error.issues.map(
    (issue) => `${issue.path.map(String).join('.') || '(body)'}: ${issue.message}`,
  );
}

/**
 * Sends the request and reads the whole answer within `timeoutMs`. The caller's abort rejects
 * with its reason; a timeout is a {@link TimeoutError}; any other failure a {@link NetworkError}.
 */
async function fetchAnswer(
  client: Client,
  { method, path, body }: ApiRequest,
  signal: AbortSignal | undefined,
): Promise<{ response: Response; text: string }> {
  const { timeoutMs, origin } = client;
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    const response = await client.send(`${client.view.baseUrl}${path}`, {
      method,
      headers:
        body === undefined
          ? client.headers
          : { ...client.headers, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body }),
      // A redirect is not followed: the key goes to the configured host and nowhere else.
      redirect: 'manual',
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    return { response, text: await response.text() };
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    if (timeout.aborted) {
      throw new TimeoutError(`no answer from ${origin} within ${timeoutMs} ms`, {
        status: 0,
        code: 'timeout',
        cause: error,
      });
    }
    throw new NetworkError(`could not reach ${origin} (${client.redact(describe(error))})`, {
      status: 0,
      code: 'network',
      cause: error,
    });
  }
}

// undici reports "fetch failed" and keeps the reason (ECONNREFUSED, ENOTFOUND…) in `cause`.
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const { cause } = error;
  if (cause instanceof Error) {
    const code = 'code' in cause && typeof cause.code === 'string' ? cause.code : cause.message;
    return `${error.message}: ${code}`;
  }
  return error.message;
}
