/**
 * A local stand-in for the platform's API: its session-token operation (docs/platform.md#session-tokens, #authentication and #api-errors),
 * its four lists (docs/platform.md#list-operations), and its users, groups and exports
 * (docs/platform.md#users-groups-and-exports), served over real HTTP on 127.0.0.1, with fault
 * injection for retry, rate-limit and timeout tests.
 * @module
 */

import { randomBytes, randomUUID } from 'node:crypto';
import {
  createServer,
  STATUS_CODES,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApiUser } from '../api/api-user-schema.js';
import type { Session } from '../api/session-schema.js';
import {
  errorAnswer,
  isRecord,
  validation,
  type MockAnswer,
  type MockRoute,
} from './mock-answers.js';
import { MockExports } from './mock-exports.js';
import { MockGroups } from './mock-groups.js';
import { listPermissions, MockLists, type MockListItems } from './mock-lists.js';
import { MockUsers, type MockSchoolApiUser } from './mock-users.js';

export type { MockSchoolApiUser } from './mock-users.js';

/** Options of {@link createMockSchoolApi}. */
export interface MockSchoolApiOptions {
  /** The one API key the mock accepts. Default `'test-api-key'`. */
  apiKey?: string;
  /** The seller the key belongs to. Default 1. */
  sellerId?: number;
  /** The seller's school. Default 1. */
  schoolId?: number;
  /**
   * Users, as ids (of the seller's school) or `{ id, schoolId?, email?, phone?, tgId?, extId?,
   * profile? }`; any other id is unknown: a foreign user to the session token, `UserNotFound` to
   * the user operations. Default: not given, so every positive id is a student of the seller's
   * school. Users created through the API are added.
   */
  users?: readonly (number | MockSchoolApiUser)[];
  /** The school's group ids; any other is 404 `GroupNotFound`. Default: every positive id. */
  groups?: readonly number[];
  /**
   * How many reads of an export's result answer that it is still running (`Waiting`, then
   * `Processing`) before the one that says it is done. Default 2.
   */
  exportPolls?: number;
  /** Ids of the school's users with admin-panel permissions; they need not be in `users`. */
  admins?: readonly number[];
  /**
   * The key's permissions. Default: `SchoolManageUsers` (the session token, users, product
   * accesses, groups, exports), `SellerSales` (invoices), `CourseManage` and
   * `CourseStudentManage` (certificates, product accesses, groups, exports). A call the key lacks
   * every permission for is answered as the platform does: 401 `Forbidden`, `Forbidden seller
   * resource - permissions <Code>`.
   */
  permissions?: readonly string[];
  /**
   * What the four lists hold (`GET /saas/v2/invoice/list/raw`, `/product-access/list/raw`,
   * `/certificate/list/raw`, `/user/list`); each item is served as given. Default: all empty.
   * The users list is this one, apart from `users` above.
   */
  lists?: MockListItems;
  /** The key's user is banned: every call with the key gets 401 `Blocked`. Default false. */
  banned?: boolean;
  /** The key's user is an API client. Default true; false: every call with the key gets 403. */
  apiClient?: boolean;
  /** The port to listen on. Default 0: a free one. */
  port?: number;
}

/** One request as the mock received it. */
export interface MockSchoolApiRequest {
  method: string;
  /** Path and query, as sent. */
  path: string;
  /** Header names in lower case; repeated headers joined with `, `. */
  headers: Record<string, string>;
  /** The raw body. */
  body: string;
  /** When the mock received it (`Date.now()`). */
  receivedAt: number;
}

/** A running mock, returned by {@link createMockSchoolApi}. */
export interface MockSchoolApi {
  /** The API root to pass as `baseUrl`, e.g. `http://127.0.0.1:53124`. */
  readonly url: string;
  /** Every request received so far, faulted ones included, oldest first. */
  readonly requests: readonly MockSchoolApiRequest[];
  /** Copies of the user's sessions, oldest first. */
  sessions(userId: number): Session[];
  /** Copies of the school's users the mock holds (given, created, or used), oldest first. */
  users(): ApiUser[];
  /** The user ids of the group's members, in the order they joined. */
  groupMembers(groupId: number): number[];
  /** The next export started ends `Failed` (or `Canceled`) instead of `Completed`. */
  failNextExport(end?: 'Failed' | 'Canceled'): void;
  /**
   * Answers the next request with `status` (and `body`, `headers`) instead of serving it. The
   * default body is shaped like docs/platform.md#api-errors: `{ success: false, code, cause, message, error }`;
   * a string body is sent as it is (an HTML error page, say).
   */
  failNext(status: number, body?: unknown, headers?: Readonly<Record<string, string>>): void;
  /** Serves the next request (a session may be created) but closes the connection unanswered. */
  dropNext(): void;
  /** Waits `ms` before serving the next request. */
  delayNext(ms: number): void;
  /**
   * Answers the next `calls` requests (default 1) as the platform's rate limit does: 429, cause
   * `Rate`, `data.retryAfter` an ISO date `retryAfterMs` (default 1 000) after the answer. Until
   * that date, every further request is answered the same way, as a real limiter would.
   */
  rateLimitNext(calls?: number, retryAfterMs?: number): void;
  /** Appends items to the lists (see {@link MockSchoolApiOptions.lists}). */
  addListItems(items: MockListItems): void;
  /**
   * Takes items out of a list, as the platform's lists change while a client reads them (an
   * invoice whose latest payment is no longer completed leaves the paid list): every item of
   * `list` that `match` is true of. Returns how many went.
   *
   * @example
   * ```ts
   * mock.removeListItems('invoices', (item) => item['invoiceId'] === 877051);
   * ```
   */
  removeListItems(
    list: keyof MockListItems,
    match: (item: Readonly<Record<string, unknown>>) => boolean,
  ): number;
  /** Stops the server, closing open connections. */
  close(): Promise<void>;
}

type Fault =
  | { kind: 'fail'; status: number; body: unknown; headers: Readonly<Record<string, string>> }
  | { kind: 'drop' }
  | { kind: 'delay'; ms: number }
  | { kind: 'rate'; retryAfterMs: number };

const ENDPOINT_PATH = '/saas/v2/user/session/auth-token';
const MAX_BODY_BYTES = 64 * 1024;
const FOREIGN_SELLER = 'Forbidden seller resource';
const NO_API_CLIENT = 'Forbidden resource';
/** What the session-token operation needs (docs/platform.md#session-tokens). */
const SESSION_NEEDS: Needs = { permissions: ['SchoolManageUsers'], json: true };
/**
 * A request this close to the end of a rate limit is served: the client's timer and the mock's
 * clock may disagree by a few ms, and a test should not flake on it.
 */
const RATE_LIMIT_LENIENCY_MS = 25;
/**
 * Starts a mock of the platform's API on 127.0.0.1: the session-token operation, the four lists,
 * and the users, groups and exports. It checks the key, `Seller-Id` and `School-Id`, the body,
 * the user's school and admin rights in the order a request meets them (a banned key user, a key
 * user that is no API client and a missing permission included), keeps sessions per user
 * (create-or-get, `forceCreate` adds one and ends none), the school's users (a create always
 * makes a new one; an upsert matches by logins), the groups' members, and exports that finish
 * after `exportPolls` reads of their result, and answers every error of
 * docs/platform.md#api-errors with its documented body.
 *
 * @example
 * ```ts
 * const mock = await createMockSchoolApi({ users: [5121], admins: [1] });
 * const api = createSchoolApi({ baseUrl: mock.url, apiKey: 'test-api-key', sellerId: 1, schoolId: 1 });
 * mock.failNext(503);
 * const { session } = await api.createSessionToken({ userId: 5121 }); // retried, then served
 * await api.addGroupMembers(12, [5121]);
 * console.log(mock.groupMembers(12)); // [ 5121 ]
 * await mock.close();
 * ```
 */
export async function createMockSchoolApi(
  options: MockSchoolApiOptions = {},
): Promise<MockSchoolApi> {
  const platform = platformOf(options);
  const { sessions, lists, users, groups, exports } = platform;
  const requests: MockSchoolApiRequest[] = [];
  const faults = new FaultQueue();
  const limiter = new RateLimiter();

  /** Records the request, applies the next fault, and answers. */
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const headers = flattenHeaders(req.headers);
    requests.push({ ...requestLine(req), headers, body, receivedAt: Date.now() });
    const fault = faults.next();
    if (fault?.kind === 'delay') await faults.wait(fault.ms);
    if (fault?.kind === 'fail') return send(res, fault.status, fault.body, fault.headers);
    if (fault?.kind === 'rate') limiter.limitFor(fault.retryAfterMs);
    const limited = limiter.answer(fault?.kind === 'rate');
    if (limited !== undefined) return send(res, limited.status, limited.body);
    const { method, path } = requestLine(req);
    const answer = serve(platform, method, path, headers, body);
    if (fault?.kind === 'drop') return void res.socket?.destroy();
    send(res, answer.status, answer.body);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      res.destroy(error instanceof Error ? error : undefined);
    });
  });
  const url = await listen(server, options.port ?? 0);

  return {
    url,
    requests,
    sessions: (userId) => sessions.copies(userId),
    users: () => users.copies(),
    groupMembers: (groupId) => groups.memberIds(groupId),
    failNextExport(end = 'Failed') {
      exports.endNext(end);
    },
    failNext(status, body = defaultErrorBody(status), headers = {}) {
      faults.add({ kind: 'fail', status, body, headers });
    },
    dropNext() {
      faults.add({ kind: 'drop' });
    },
    delayNext(ms) {
      faults.add({ kind: 'delay', ms });
    },
    rateLimitNext(calls = 1, retryAfterMs = 1_000) {
      for (let call = 0; call < calls; call += 1) faults.add({ kind: 'rate', retryAfterMs });
    },
    addListItems(items) {
      lists.add(items);
    },
    removeListItems: (list, match) => lists.remove(list, match),
    close() {
      // A delayed request is abandoned: its timer would otherwise keep the process alive.
      faults.clear();
      return new Promise((resolve, reject) => {
        server.close((closeError) => (closeError ? reject(closeError) : resolve()));
        server.closeAllConnections();
      });
    },
  };
}

/** What the mock platform holds. */
interface MockPlatform {
  readonly access: Access;
  readonly users: MockUsers;
  readonly sessions: SessionBook;
  readonly lists: MockLists;
  readonly groups: MockGroups;
  readonly exports: MockExports;
  /** The users, groups and exports operations. */
  readonly routes: readonly MockRoute[];
}

/** The mock platform of `options`, defaults applied. */
function platformOf({
  apiKey = 'test-api-key',
  sellerId = 1,
  schoolId = 1,
  users: given,
  admins = [],
  permissions = ['SchoolManageUsers', 'SellerSales', 'CourseManage', 'CourseStudentManage'],
  banned = false,
  apiClient = true,
  lists: listItems,
  groups: groupIds,
  exportPolls = 2,
}: MockSchoolApiOptions): MockPlatform {
  const users = new MockUsers(schoolId, given, admins);
  const groups = new MockGroups(users, groupIds);
  const exports = new MockExports(exportPolls);
  return {
    access: { apiKey, sellerId, schoolId, permissions, banned, apiClient },
    users,
    sessions: new SessionBook(),
    lists: new MockLists(listItems),
    groups,
    exports,
    routes: [...users.routes(), ...groups.routes(), ...exports.routes()],
  };
}

/** The platform's answer to a request that meets no fault. */
function serve(
  platform: MockPlatform,
  method: string,
  path: string,
  headers: Record<string, string>,
  text: string,
): MockAnswer {
  const { access, users, sessions, lists } = platform;
  const url = new URL(path, 'http://mock');
  const listNeeds = listPermissions(url.pathname);
  if (listNeeds !== undefined) {
    if (method !== 'GET') return errorAnswer(405, 'MethodNotAllowed', 'Method Not Allowed');
    const refused = refusal(access, headers, { permissions: listNeeds, json: false });
    return refused ?? lists.serve(url.pathname, url.searchParams);
  }
  const route = platform.routes.find(({ pattern }) => pattern.test(url.pathname));
  if (route !== undefined) return serveRoute(route, access, method, url, headers, text);
  if (url.pathname !== ENDPOINT_PATH) return errorAnswer(404, 'NotFound', 'Not Found');
  if (method !== 'POST') return errorAnswer(405, 'MethodNotAllowed', 'Method Not Allowed');
  const refused = refusal(access, headers, SESSION_NEEDS);
  if (refused !== undefined) return refused;
  const input = sessionInput(text);
  if ('status' in input) return input;
  return (
    users.sessionRefusal(input.userId) ?? sessions.createOrGet(input.userId, input.forceCreate)
  );
}

/** A users, groups or exports operation: its method, the key's checks, its JSON body, its answer. */
function serveRoute(
  route: MockRoute,
  access: Access,
  method: string,
  url: URL,
  headers: Record<string, string>,
  text: string,
): MockAnswer {
  if (method !== route.method) return errorAnswer(405, 'MethodNotAllowed', 'Method Not Allowed');
  const json = method !== 'GET';
  const refused = refusal(access, headers, { permissions: route.permissions, json });
  if (refused !== undefined) return refused;
  let body: unknown;
  if (json) {
    try {
      body = JSON.parse(text);
    } catch {
      return validationAnswer('body must be a JSON object');
    }
  }
  const params = route.pattern.exec(url.pathname)?.slice(1) ?? [];
  return route.serve({ params, query: url.searchParams, body });
}

/** What the mock's API key may do, from {@link MockSchoolApiOptions}. */
interface Access {
  readonly apiKey: string;
  readonly sellerId: number;
  readonly schoolId: number;
  readonly permissions: readonly string[];
  readonly banned: boolean;
  readonly apiClient: boolean;
}

/** What an operation needs of a request: any one of `permissions`, and a JSON body when `json`. */
interface Needs {
  readonly permissions: readonly string[];
  readonly json: boolean;
}

/**
 * The platform's refusal of a request's key, seller, school or content type, checked in the
 * order of the error table of docs/platform.md#api-errors; undefined when it passes.
 */
function refusal(
  access: Access,
  headers: Record<string, string>,
  needs: Needs,
): MockAnswer | undefined {
  if (headers['authorization'] !== `Bearer ${access.apiKey}`) {
    return errorAnswer(401, 'Unauthorized', 'Unauthorized');
  }
  if (access.banned) return errorAnswer(401, 'Blocked', 'User is blocked');
  if (!access.apiClient) return errorAnswer(403, 'Forbidden', NO_API_CLIENT);
  const headerSellerId = headers['seller-id'];
  const headerSchoolId = headers['school-id'];
  // A missing or foreign Seller-Id: the key's permissions are checked against it (docs/platform.md#authentication).
  if (headerSellerId === undefined) return errorAnswer(401, 'Forbidden', FOREIGN_SELLER);
  if (!isDigits(headerSellerId)) return validationAnswer('Seller-Id must be an integer number');
  if (Number(headerSellerId) !== access.sellerId) {
    return errorAnswer(401, 'Forbidden', FOREIGN_SELLER);
  }
  if (!needs.permissions.some((permission) => access.permissions.includes(permission))) {
    return errorAnswer(401, 'Forbidden', `${FOREIGN_SELLER} - permissions ${needs.permissions[0]}`);
  }
  if (!isDigits(headerSchoolId)) return validationAnswer('School-Id must be an integer number');
  if (Number(headerSchoolId) !== access.schoolId) {
    return errorAnswer(400, 'ForbiddenSchoolMismatch', 'Forbidden school mismatch');
  }
  if (needs.json && !(headers['content-type'] ?? '').toLowerCase().startsWith('application/json')) {
    return validationAnswer('Content-Type must be application/json');
  }
  return undefined;
}

/** The body's `userId` and `forceCreate`, or the platform's validation answer. */
function sessionInput(text: string): { userId: number; forceCreate: boolean } | MockAnswer {
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch {
    return validationAnswer('body must be a JSON object');
  }
  if (!isRecord(input)) return validationAnswer('body must be a JSON object');
  const { userId, forceCreate = false } = input;
  if (typeof userId !== 'number' || !Number.isInteger(userId)) {
    return validationAnswer('userId must be an integer number');
  }
  if (typeof forceCreate !== 'boolean') {
    return validationAnswer('forceCreate must be a boolean value');
  }
  return { userId, forceCreate };
}

/** The sessions the mock keeps, per user: create-or-get, as the platform does. */
class SessionBook {
  readonly #byUser = new Map<number, Session[]>();
  #lastId = 0;

  /** The user's latest live session, or a new one (always a new one with `forceCreate`). */
  createOrGet(userId: number, forceCreate: boolean): MockAnswer {
    const sessions = this.#byUser.get(userId) ?? [];
    this.#byUser.set(userId, sessions);
    const active = sessions.filter(
      (session) => session.alive && Date.parse(session.expireAt) > Date.now(),
    );
    const latest = active[active.length - 1];
    if (latest && !forceCreate) return createdAnswer(false, latest);
    this.#lastId += 1;
    const session = newSession(this.#lastId, userId);
    sessions.push(session);
    return createdAnswer(true, session);
  }

  /** Copies of the user's sessions, oldest first. */
  copies(userId: number): Session[] {
    return structuredClone(this.#byUser.get(userId) ?? []);
  }
}

/** A session as the platform makes one: a fresh token, alive for two years. */
function newSession(id: number, userId: number): Session {
  const now = new Date();
  const expireAt = new Date(now);
  expireAt.setUTCFullYear(expireAt.getUTCFullYear() + 2);
  return {
    id,
    createdAt: now.toISOString(),
    updatedAt: now.toISOString(),
    archivedAt: null,
    userId,
    uuid: randomUUID(),
    deviceUuid: randomUUID(),
    token: randomBytes(32).toString('base64url'),
    alive: true,
    isOnline: false,
    appLocation: null,
    appLocationParams: {},
    language: null,
    timezone: null,
    appVersion: null,
    launcher: 'api',
    lastActivityAt: now.toISOString(),
    expireAt: expireAt.toISOString(),
  };
}

/** The faults queued for the next requests, and the timers of the delayed ones. */
class FaultQueue {
  readonly #queue: Fault[] = [];
  readonly #timers = new Set<NodeJS.Timeout>();

  add(fault: Fault): void {
    this.#queue.push(fault);
  }

  /** The fault for the request at hand, if one is queued. */
  next(): Fault | undefined {
    return this.#queue.shift();
  }

  /** Waits `ms`, on a timer {@link clear} cancels. */
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        resolve();
      }, ms);
      this.#timers.add(timer);
    });
  }

  /** Cancels every delay in progress (its request is abandoned). */
  clear(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }
}

/** The mock's rate limit: 429 `Rate` for every request until a date. */
class RateLimiter {
  #until = 0;

  /** Limits every request from now for `ms`. */
  limitFor(ms: number): void {
    this.#until = Date.now() + ms;
  }

  /**
   * The platform's 429 while the limit holds (always when `queued`: the request a
   * `rateLimitNext` was for), with `data.retryAfter` its end; else undefined.
   */
  answer(queued: boolean): MockAnswer | undefined {
    if (!queued && Date.now() + RATE_LIMIT_LENIENCY_MS >= this.#until) return undefined;
    const message = 'Too Many Requests';
    return {
      status: 429,
      body: {
        success: false,
        code: 429,
        cause: 'Rate',
        message,
        error: message,
        data: { retryAfter: new Date(this.#until).toISOString() },
      },
    };
  }
}

/** Listens on 127.0.0.1 and gives the server's URL. */
async function listen(server: Server, port: number): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function createdAnswer(isCreated: boolean, session: Session): MockAnswer {
  return { status: 201, body: { success: true, code: 201, payload: { isCreated, session } } };
}

function validationAnswer(message: string): MockAnswer {
  return validation([message]);
}

function defaultErrorBody(status: number): unknown {
  const text = STATUS_CODES[status] ?? 'Error';
  return {
    success: false,
    code: status,
    cause: text.replace(/[^A-Za-z]/g, ''),
    message: text,
    error: text,
  };
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  if (res.destroyed) return;
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new Error('request body too large for the mock');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function requestLine(req: IncomingMessage): { method: string; path: string } {
  return { method: req.method ?? '', path: req.url ?? '' };
}

function flattenHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

function isDigits(value: string | undefined): value is string {
  return value !== undefined && /^\d+$/.test(value);
}
