/**
 * The session-token client: `createSchoolApi` (docs/platform.md#session-tokens and #authentication).
 * @module
 */

import { ConfigError } from '../errors.js';
import { isSecureUrl } from '../links/is-secure-url.js';
import { errorFromResponse, type RequestContext } from './error-from-response.js';
import { InvalidResponseError, NetworkError, SchoolApiError, TimeoutError } from './errors.js';
import { retryDelay, sleep } from './retry-delay.js';
import { sessionTokenResponseSchema, type Session } from './session-schema.js';
import { API_CLIENT_DEFAULTS } from '../defaults.js';

/** Options of {@link createSchoolApi}. */
export interface SchoolApiOptions {
  /**
   * The API root, e.g. `https://api.example.com` (a trailing slash is fine). Must be https://;
   * http:// is accepted only for localhost, 127.0.0.1 and [::1].
   */
  baseUrl: string | URL;
  /** The service user's API token (Manage → School → For developers → API keys). Secret. */
  apiKey: string;
  /** The seller's numeric id (Integration data → Identifiers). */
  sellerId: number;
  /** The school's numeric id; must be the seller's school. */
  schoolId: number;
  /** How long one attempt may take, answer body included. Default 30 000 ms. */
  timeoutMs?: number;
  /** How many times a retryable failure is retried (see `retryDelay`). Default 2. */
  retries?: number;
  /** The fetch to use. Default: the global `fetch`, looked up on each call. */
  fetch?: typeof globalThis.fetch;
}

/** Arguments of {@link SchoolApi.createSessionToken}. */
export interface CreateSessionTokenOptions {
  /** The student's numeric id; must belong to the school. */
  userId: number;
  /** true: always create a new session (earlier ones stay alive). Default false: create or get. */
  forceCreate?: boolean;
  /** Aborts the call, retries and backoff included; it then rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** What {@link SchoolApi.createSessionToken} resolves to. */
export interface CreateSessionTokenResult {
  /** true when a new session was created; false when the active one was returned. */
  isCreated: boolean;
  /** The session. Its `token` is a secret: never log this object. */
  session: Session;
}

/** The part of a {@link SchoolApi} that is safe to print. */
export interface SchoolApiView {
  baseUrl: string;
  sellerId: number;
  schoolId: number;
}

/** The session-token client returned by {@link createSchoolApi}. */
export interface SchoolApi extends Readonly<SchoolApiView> {
  /**
   * Creates or returns a session token for a student (`POST /saas/v2/user/session/auth-token`).
   * Rejects with a {@link SchoolApiError} subclass; inputs are checked before anything is sent.
   */
  createSessionToken(options: CreateSessionTokenOptions): Promise<CreateSessionTokenResult>;
  /** `{ baseUrl, sellerId, schoolId }`: never the API key. */
  toJSON(): SchoolApiView;
}

const ENDPOINT_PATH = '/saas/v2/user/session/auth-token';
// Visible ASCII only: a header value with a control character would make fetch throw an error
// that quotes the value, key included.
const API_KEY_PATTERN = /^[\x21-\x7e]+$/;
const INSPECT = Symbol.for('nodejs.util.inspect.custom');
// Timers hold a signed 32-bit delay; beyond it Node fires after 1 ms instead.
const MAX_TIMEOUT_MS = 2_147_483_647;

/**
 * Creates a client of the platform's session-token operation. The API key stays in a closure:
 * no property, `JSON.stringify(api)`, `util.inspect(api)` or error ever shows it.
 *
 * @example
 * ```ts
 * const api = createSchoolApi({
 *   baseUrl: 'https://api.example.com',
 *   apiKey: process.env.SCHOOL_API_KEY!,
 *   sellerId: 1042,
 *   schoolId: 877,
 * });
 * const { isCreated, session } = await api.createSessionToken({ userId: 5121 });
 * ```
 */
export function createSchoolApi(options: SchoolApiOptions): SchoolApi {
  const client = connect(options);
  const { view } = client;
  const api = {
    ...view,
    createSessionToken: (call: CreateSessionTokenOptions): Promise<CreateSessionTokenResult> =>
      createSessionToken(client, call),
    toJSON: (): SchoolApiView => ({ ...view }),
    [INSPECT]: (
      _depth: number,
      inspectOptions: unknown,
      inspect?: (value: unknown, options: unknown) => string,
    ) =>
      `SchoolApi ${typeof inspect === 'function' ? inspect(view, inspectOptions) : JSON.stringify(view)}`,
  };
  return Object.freeze(api);
}

/**
 * What one client needs to send a request. It holds the API key (in `headers` and `redact`), so it
 * lives only in the closures of {@link createSchoolApi}'s methods and is never returned.
 */
interface Client {
  readonly view: SchoolApiView;
  readonly endpoint: string;
  readonly origin: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly send: typeof globalThis.fetch;
  /** Whatever the platform echoes back goes through this before it reaches an error. */
  readonly redact: (text: string) => string;
}

/** Checks the options (a {@link ConfigError} for the first wrong one) and builds the {@link Client}. */
function connect(options: SchoolApiOptions): Client {
  const {
    baseUrl,
    apiKey,
    sellerId,
    schoolId,
    timeoutMs = API_CLIENT_DEFAULTS.timeoutMs,
    retries = API_CLIENT_DEFAULTS.retries,
    fetch: fetchFn,
  } = options;
  const root = apiRoot(baseUrl);
  checkOptions({ apiKey, sellerId, schoolId, timeoutMs, retries, fetch: fetchFn });
  return {
    view: { baseUrl: root, sellerId, schoolId },
    endpoint: `${root}${ENDPOINT_PATH}`,
    origin: new URL(root).origin,
    headers: {
      Authorization: `Bearer ${apiKey}`,
      'Seller-Id': String(sellerId),
      'School-Id': String(schoolId),
      'Content-Type': 'application/json',
      Accept: 'application/json',
    },
    timeoutMs,
    retries,
    send: fetchFn ?? ((input, init) => globalThis.fetch(input, init)),
    redact: (text) => text.replaceAll(apiKey, '[redacted]'),
  };
}

/** The options other than `baseUrl`, defaults applied; `fetch` may still be undefined. */
type OptionsToCheck = Required<Omit<SchoolApiOptions, 'baseUrl' | 'fetch'>> & {
  fetch: SchoolApiOptions['fetch'] | undefined;
};

/** The options other than `baseUrl`, checked in the order they are documented. */
function checkOptions({
  apiKey,
  sellerId,
  schoolId,
  timeoutMs,
  retries,
  fetch: fetchFn,
}: OptionsToCheck): void {
  if (typeof apiKey !== 'string' || !API_KEY_PATTERN.test(apiKey)) {
    throw new ConfigError('apiKey must be a non-empty string of visible ASCII characters');
  }
  if (!isPositiveInteger(sellerId)) throw new ConfigError('sellerId must be a positive integer');
  if (!isPositiveInteger(schoolId)) throw new ConfigError('schoolId must be a positive integer');
  if (typeof timeoutMs !== 'number' || !(timeoutMs > 0 && timeoutMs <= MAX_TIMEOUT_MS)) {
    throw new ConfigError(
      `timeoutMs must be a positive number of milliseconds, at most ${MAX_TIMEOUT_MS}`,
    );
  }
  if (!Number.isSafeInteger(retries) || retries < 0) {
    throw new ConfigError('retries must be a non-negative integer');
  }
  if (fetchFn !== undefined && typeof fetchFn !== 'function') {
    throw new ConfigError('fetch must be a function');
  }
}

/** {@link SchoolApi.createSessionToken}: checks the arguments, then sends with retries and backoff. */
async function createSessionToken(
  client: Client,
  { userId, forceCreate = false, signal }: CreateSessionTokenOptions,
): Promise<CreateSessionTokenResult> {
  assertPositiveInteger(userId, 'userId');
  if (typeof forceCreate !== 'boolean') throw new TypeError('forceCreate must be a boolean');
  signal?.throwIfAborted();
  const body = JSON.stringify({ userId, forceCreate });
  const { sellerId, schoolId } = client.view;
  const context: RequestContext = { userId, sellerId, schoolId };
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await sendOnce(client, body, context, signal);
    } catch (error) {
      const delay = attempt < client.retries ? retryDelay(error, attempt, forceCreate) : undefined;
      if (delay === undefined) throw error;
      await sleep(delay, signal);
    }
  }
}

/** One attempt: the request, then its answer read as a result or a {@link SchoolApiError}. */
async function sendOnce(
  client: Client,
  body: string,
  context: RequestContext,
  signal: AbortSignal | undefined,
): Promise<CreateSessionTokenResult> {
  const { response, text } = await fetchAnswer(client, body, signal);
  const { status } = response;
  if (response.type === 'opaqueredirect' || (status >= 300 && status < 400)) {
    throw new SchoolApiError(`the platform answered with a redirect (${status}), not followed`, {
      status,
      code: 'redirect',
    });
  }
  if (!response.ok) throw errorFromResponse(response, text, context, client.redact);
  return readSuccess(status, text);
}

/**
 * Sends the request and reads the whole answer within `timeoutMs`. The caller's abort rejects
 * with its reason; a timeout is a {@link TimeoutError}; any other failure a {@link NetworkError}.
 */
async function fetchAnswer(
  client: Client,
  body: string,
  signal: AbortSignal | undefined,
): Promise<{ response: Response; text: string }> {
  const { timeoutMs, origin } = client;
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    const response = await client.send(client.endpoint, {
      method: 'POST',
      headers: client.headers,
      body,
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

function readSuccess(status: number, text: string): CreateSessionTokenResult {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new InvalidResponseError(`the platform answered ${status} with a body that is not JSON`, {
      status,
      code: 'invalid_response',
    });
  }
  const result = sessionTokenResponseSchema.safeParse(json);
  if (!result.success) {
    // Paths and Zod's wording only: an issue never quotes the value, so the token cannot leak.
    const messages = result.error.issues.map(
      (issue) => `${issue.path.map(String).join('.') || '(body)'}: ${issue.message}`,
    );
    throw new InvalidResponseError(
      `the platform answered ${status} with an unexpected body: ${messages.join('; ')}`,
      { status, code: 'invalid_response', messages },
    );
  }
  return { isCreated: result.data.payload.isCreated, session: result.data.payload.session };
}

function apiRoot(baseUrl: string | URL): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new ConfigError('baseUrl must be an absolute URL such as https://api.example.com');
  }
  if (!isSecureUrl(url)) {
    throw new ConfigError(
      'baseUrl must use https:// (http:// only for localhost, 127.0.0.1 and [::1]): the API key must not cross a network in clear text',
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw new ConfigError('baseUrl must not carry credentials; the key goes in apiKey');
  }
  if (url.search !== '' || url.hash !== '') {
    throw new ConfigError('baseUrl must be the API root, without a query or a fragment');
  }
  return url.href.replace(/\/+$/, '');
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

/** A per-call argument that is not a positive integer is a TypeError (a setup mistake, a ConfigError). */
function assertPositiveInteger(value: unknown, name: string): asserts value is number {
  if (!isPositiveInteger(value)) throw new TypeError(`${name} must be a positive integer`);
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
