/**
 * The API client: `createSchoolApi`, its session-token operation (docs/platform.md#session-tokens and
 * #authentication), its lists (docs/platform.md#list-operations), and its users, groups and exports
 * (docs/platform.md#users-groups-and-exports).
 * @module
 */

import { ConfigError } from '../errors.js';
import { isSecureUrl } from '../links/is-secure-url.js';
import { listItems } from './list-pages.js';
import { isPositiveInteger } from './list-query.js';
import {
  CERTIFICATES,
  INVOICES,
  PRODUCT_ACCESSES,
  USERS,
  type CertificateListOptions,
  type InvoiceListOptions,
  type ProductAccessListOptions,
  type UserListOptions,
} from './list-operations.js';
import type {
  CertificateListItem,
  InvoiceListItem,
  ProductAccessListItem,
  UserListItem,
} from './list-schemas.js';
import { RETRY_ON } from './retry-delay.js';
import { sendWithRetries } from './send-with-retries.js';
import type { ApiUser } from './api-user-schema.js';
import {
  exportQuery,
  type ExportFile,
  type ExportQuery,
  type ExportQueryOptions,
} from './export-query.js';
import {
  addGroupMembers,
  removeGroupMembers,
  type AddGroupMembersResult,
  type RemoveGroupMembersResult,
} from './group-members.js';
import {
  createUser,
  findUser,
  getUserState,
  setUserState,
  updateUser,
  upsertUser,
  type ApiCallOptions,
  type FindUserBy,
  type SetUserStateResult,
  type UpsertUserResult,
  type UserInput,
  type UserResult,
  type UserStateKey,
} from './user-operations.js';
import { sessionTokenResponseSchema, type Session } from './session-schema.js';
import type { ApiRequest, Client, SchoolApiView } from './transport.js';

export type { SchoolApiView } from './transport.js';
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
  /** How many times a retryable failure is retried (which ones: docs/api.md#how-the-client-behaves). Default 2. */
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

/**
 * An async iterable of every item of a list, page after page (docs/api.md#lists). Stop early with
 * `break` (or `return()`): no further page is asked for.
 */
export type SchoolApiList<Item> = AsyncGenerator<Item, void, undefined>;

/** The client returned by {@link createSchoolApi}. */
export interface SchoolApi extends Readonly<SchoolApiView> {
  /**
   * Creates or returns a session token for a student (`POST /saas/v2/user/session/auth-token`).
   * Rejects with a {@link SchoolApiError} subclass; inputs are checked before anything is sent.
   */
  createSessionToken(options: CreateSessionTokenOptions): Promise<CreateSessionTokenResult>;
  /**
   * The school's invoices (`GET /saas/v2/invoice/list/raw`, permission SellerSales); `paid: true`
   * for paid ones only. Options are checked at the call (a TypeError); pages are read as the
   * iteration goes, `429 Rate` waited out; other failures throw a {@link SchoolApiError}.
   */
  invoices(options?: InvoiceListOptions): SchoolApiList<InvoiceListItem>;
  /**
   * The school's product accesses (`GET /saas/v2/product-access/list/raw`, permission
   * SchoolManageUsers or CourseStudentManage), read as {@link SchoolApi.invoices} is.
   */
  productAccesses(options?: ProductAccessListOptions): SchoolApiList<ProductAccessListItem>;
  /**
   * The school's certificates (`GET /saas/v2/certificate/list/raw`, permission CourseManage or
   * CourseStudentManage), read as {@link SchoolApi.invoices} is.
   */
  certificates(options?: CertificateListOptions): SchoolApiList<CertificateListItem>;
  /**
   * The school's users (`GET /saas/v2/user/list`, permission SchoolManageUsers), read as
   * {@link SchoolApi.invoices} is.
   */
  users(options?: UserListOptions): SchoolApiList<UserListItem>;
  /**
   * Creates a user (`POST /saas/v2/user/create`, permission SchoolManageUsers); the platform sends
   * UserCreatedViaLms. Not idempotent: once the request may have reached the platform (a timeout,
   * a lost connection, a 5xx) it is not sent again, and the error says the user may exist. Prefer
   * {@link SchoolApi.upsertUser}, which is safe to repeat.
   */
  createUser(user: UserInput, options?: ApiCallOptions): Promise<UserResult>;
  /** Updates a user's logins and profile (`PUT /saas/v2/user/<userId>/update`); null clears a field. */
  updateUser(userId: number, user: UserInput, options?: ApiCallOptions): Promise<UserResult>;
  /**
   * Updates the user these logins match, or creates one (`PUT /saas/v2/user/upsert`); safe to
   * repeat, so retried like every call but `createUser`.
   */
  upsertUser(user: UserInput, options?: ApiCallOptions): Promise<UpsertUserResult>;
  /**
   * The user with this login (an email or a phone), `tgId` or `extId` (`GET /saas/v2/user/find`),
   * or null when the school has none.
   */
  findUser(by: FindUserBy, options?: ApiCallOptions): Promise<ApiUser | null>;
  /** A user's state under `key` (`GET /saas/v2/user/<userId>/state/get`), or null when none is set. */
  getUserState(userId: number, key: UserStateKey, options?: ApiCallOptions): Promise<unknown>;
  /** Writes a user's state under `key` (`PUT /saas/v2/user/<userId>/state/set`). */
  setUserState(
    userId: number,
    key: UserStateKey,
    value: unknown,
    options?: ApiCallOptions,
  ): Promise<SetUserStateResult>;
  /**
   * Makes the users members of the group (`POST /saas/v2/group/<groupId>/member/create-many`):
   * any number of ids, sent 100 a call, one call after another; `created` and `exist` merged.
   * A failure ends the call, and the calls before it stay applied: calling again is safe.
   */
  addGroupMembers(
    groupId: number,
    userIds: readonly number[],
    options?: ApiCallOptions,
  ): Promise<AddGroupMembersResult>;
  /**
   * Removes the users from the group (`DELETE /saas/v2/group/<groupId>/member/delete-many`), sent
   * as {@link SchoolApi.addGroupMembers} sends them; `affected` summed.
   */
  removeGroupMembers(
    groupId: number,
    userIds: readonly number[],
    options?: ApiCallOptions,
  ): Promise<RemoveGroupMembersResult>;
  /**
   * Starts an export (`POST /saas/v2/query-export/generate`) and reads its result every
   * `intervalMs` until its file is ready; `Failed`, `Canceled` or no end within `maxWaitMs` is an
   * `ExportError`.
   */
  exportQuery(query: ExportQuery, options?: ExportQueryOptions): Promise<ExportFile>;
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
 * Creates a client of the platform's API: the session-token operation, the four lists, and the
 * users, groups and exports. The API key stays in a closure: no property, `JSON.stringify(api)`, `util.inspect(api)` or error ever
 * shows it.
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
 * for await (const invoice of api.invoices({ paid: true, createdAt: { from: '2026-11-01' } })) {
 *   console.log(invoice.invoiceId, invoice.user.id);
 * }
 * const { user } = await api.upsertUser({ email: 'ada@example.com', profile: { firstName: 'Ada' } });
 * await api.addGroupMembers(12, [user.id]);
 * ```
 */
export function createSchoolApi(options: SchoolApiOptions): SchoolApi {
  const client = connect(options);
  const { view } = client;
  const api = {
    ...view,
    createSessionToken: (call: CreateSessionTokenOptions): Promise<CreateSessionTokenResult> =>
      createSessionToken(client, call),
    invoices: (call?: InvoiceListOptions) => listItems(client, INVOICES, call),
    productAccesses: (call?: ProductAccessListOptions) => listItems(client, PRODUCT_ACCESSES, call),
    certificates: (call?: CertificateListOptions) => listItems(client, CERTIFICATES, call),
    users: (call?: UserListOptions) => listItems(client, USERS, call),
    createUser: (user: UserInput, call?: ApiCallOptions) => createUser(client, user, call),
    updateUser: (userId: number, user: UserInput, call?: ApiCallOptions) =>
      updateUser(client, userId, user, call),
    upsertUser: (user: UserInput, call?: ApiCallOptions) => upsertUser(client, user, call),
    findUser: (by: FindUserBy, call?: ApiCallOptions) => findUser(client, by, call),
    getUserState: (userId: number, key: UserStateKey, call?: ApiCallOptions) =>
      getUserState(client, userId, key, call),
    setUserState: (userId: number, key: UserStateKey, value: unknown, call?: ApiCallOptions) =>
      setUserState(client, userId, key, value, call),
    addGroupMembers: (groupId: number, userIds: readonly number[], call?: ApiCallOptions) =>
      addGroupMembers(client, groupId, userIds, call),
    removeGroupMembers: (groupId: number, userIds: readonly number[], call?: ApiCallOptions) =>
      removeGroupMembers(client, groupId, userIds, call),
    exportQuery: (query: ExportQuery, call?: ExportQueryOptions) =>
      exportQuery(client, query, call),
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
    origin: new URL(root).origin,
    headers: {
      Authorization: `Bearer ${apiKey}`,
      'Seller-Id': String(sellerId),
      'School-Id': String(schoolId),
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
  const call: ApiRequest = {
    method: 'POST',
    path: ENDPOINT_PATH,
    body: JSON.stringify({ userId, forceCreate }),
  };
  const { sellerId, schoolId } = client.view;
  const { payload } = await sendWithRetries(client, call, {
    schema: sessionTokenResponseSchema,
    retryOn: forceCreate ? RETRY_ON.forcedSession : RETRY_ON.createOrGet,
    context: { userId, sellerId, schoolId },
    signal,
  });
  return { isCreated: payload.isCreated, session: payload.session };
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

/** A per-call argument that is not a positive integer is a TypeError (a setup mistake, a ConfigError). */
function assertPositiveInteger(value: unknown, name: string): asserts value is number {
  if (!isPositiveInteger(value)) throw new TypeError(`${name} must be a positive integer`);
}
