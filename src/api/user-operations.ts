/**
 * The platform's user operations (docs/platform.md#users-groups-and-exports): create, update,
 * upsert and find a user, and read and write a user's state. Every one but `createUser` is
 * retried as `RETRY_ON.repeatable` says; `createUser` only after a 429.
 * @module
 */

import { z } from 'zod';
import type { OpenUnion } from '../platform/events/entities.js';
import type { KnownOutput } from '../platform/events/known-output.js';
import { apiUserSchema, type ApiUser } from './api-user-schema.js';
import type { RequestContext } from './error-from-response.js';
import {
  NetworkError,
  type SchoolApiError,
  ServerError,
  TimeoutError,
  UserNotFoundError,
  type SchoolApiErrorOptions,
} from './errors.js';
import { isPositiveInteger } from './list-query.js';
import { RETRY_ON, type RetryOn } from './retry-delay.js';
import { sendWithRetries } from './send-with-retries.js';
import { answerSchema, type ApiRequest, type Client } from './transport.js';

/** What every call of the users, groups and exports takes besides its arguments. */
export interface ApiCallOptions {
  /** Aborts the call, retries and backoff included; it then rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** A profile's sex, as the platform names them today (an open union). */
export type UserSex = OpenUnion<'Ufo' | 'Women' | 'Men'>;
/** A profile's role, as the platform names them today (an open union). */
export type UserRole = OpenUnion<'Student' | 'Tutor' | 'Parent'>;

/** A profile's contacts, as the user operations send them; any field may be left out or null. */
export interface UserContactInput {
  phone?: string | null;
  email?: string | null;
  messengerUrl?: string | null;
}

/** A user's profile, as the user operations send it; any field may be left out or null. */
export interface UserProfileInput {
  firstName?: string | null;
  lastName?: string | null;
  /** The birth date, an ISO date (`2001-04-17`). */
  bdate?: string | null;
  sex?: UserSex | null;
  role?: UserRole | null;
  contact?: UserContactInput | null;
}

/**
 * A user as `createUser`, `updateUser` and `upsertUser` send it: its logins (`email`, `phone`,
 * `tgId`, `extId`), `banned` and `profile`. Any field may be left out, or null to clear it; a
 * field not named here is a compile error.
 */
export interface UserInput {
  email?: string | null;
  phone?: string | null;
  /** The user's Telegram id. */
  tgId?: number | null;
  /** The user's id in your own system (a CRM's). */
  extId?: string | null;
  banned?: boolean | null;
  profile?: UserProfileInput | null;
}

/** What `createUser` and `updateUser` resolve to. */
export interface UserResult {
  /** The user as the platform now holds it. */
  user: ApiUser;
}

/** What `upsertUser` resolves to. */
export interface UpsertUserResult extends UserResult {
  /** true when no user had these logins and one was created (the platform sends UserCreatedViaLms). */
  isCreated: boolean;
}

/** How `findUser` looks a user up: by exactly one of a login (an email or a phone), `tgId` or `extId`. */
export type FindUserBy =
  | { login: string; tgId?: never; extId?: never }
  | { tgId: number; login?: never; extId?: never }
  | { extId: string; login?: never; tgId?: never };

/** The states of a user the platform keeps, by key. */
export type UserStateKey = 'PersonalInfoFilled' | 'UtmSignupParams' | 'CustomField';

/** What `setUserState` resolves to. */
export interface SetUserStateResult {
  /** The platform's `set`: true when it stored the value. */
  set: boolean;
}

const userAnswer = answerSchema({ user: apiUserSchema });
const upsertAnswer = answerSchema({ user: apiUserSchema, isCreated: z.boolean() });
const foundAnswer = answerSchema({ user: apiUserSchema.nullish() });
const stateAnswer = answerSchema({ value: z.unknown() });
const setStateAnswer = answerSchema({ set: z.boolean() });
/** The keys of {@link FindUserBy}, as the platform's query names them. */
const FIND_KEYS = ['login', 'tgId', 'extId'] as const;

/** `POST /saas/v2/user/create`: never sent again once it may have reached the platform. */
export async function createUser(
  client: Client,
  input: UserInput,
  { signal }: ApiCallOptions = {},
): Promise<UserResult> {
  const call = { method: 'POST', path: '/saas/v2/user/create', body: userBody(input) } as const;
  try {
    const { user } = await send(client, call, userAnswer, {
      signal,
      retryOn: RETRY_ON.createUser,
    });
    return { user: known(user) };
  } catch (error) {
    throw mayHaveCreated(error);
  }
}

/** `PUT /saas/v2/user/<userId>/update`. */
export async function updateUser(
  client: Client,
  userId: number,
  input: UserInput,
  { signal }: ApiCallOptions = {},
): Promise<UserResult> {
  const call = {
    method: 'PUT',
    path: `${userPath(userId)}/update`,
    body: userBody(input),
  } as const;
  const { user } = await send(client, call, userAnswer, { signal, userId });
  return { user: known(user) };
}

/** `PUT /saas/v2/user/upsert`: the user of these logins, updated, or a new one. */
export async function upsertUser(
  client: Client,
  input: UserInput,
  { signal }: ApiCallOptions = {},
): Promise<UpsertUserResult> {
  const call = { method: 'PUT', path: '/saas/v2/user/upsert', body: userBody(input) } as const;
  const { user, isCreated } = await send(client, call, upsertAnswer, { signal });
  return { user: known(user), isCreated };
}

/** `GET /saas/v2/user/find`: the user, or null when the school has none with that login. */
export async function findUser(
  client: Client,
  by: FindUserBy,
  { signal }: ApiCallOptions = {},
): Promise<ApiUser | null> {
  const call = { method: 'GET', path: `/saas/v2/user/find?${findQuery(by)}` } as const;
  try {
    const { user } = await send(client, call, foundAnswer, { signal });
    return user ? known(user) : null;
  } catch (error) {
    // The reference answers `{ user: null }`; a platform that says UserNotFound means the same.
    if (error instanceof UserNotFoundError) return null;
    throw error;
  }
}

/** `GET /saas/v2/user/<userId>/state/get?key=<key>`: the value, or null when none is set. */
export async function getUserState(
  client: Client,
  userId: number,
  key: UserStateKey,
  { signal }: ApiCallOptions = {},
): Promise<unknown> {
  const call = { method: 'GET', path: statePath(userId, 'get', key) } as const;
  const { value } = await send(client, call, stateAnswer, { signal, userId });
  return value ?? null;
}

/** `PUT /saas/v2/user/<userId>/state/set?key=<key>` with `{ value }`. */
export async function setUserState(
  client: Client,
  userId: number,
  key: UserStateKey,
  value: unknown,
  { signal }: ApiCallOptions = {},
): Promise<SetUserStateResult> {
  if (value === undefined) throw new TypeError('value must be given (null to clear the state)');
  const body = JSON.stringify({ value });
  const call = { method: 'PUT', path: statePath(userId, 'set', key), body } as const;
  const { set } = await send(client, call, setStateAnswer, { signal, userId });
  return { set };
}

/** How {@link send} sends one user operation. */
interface SendUserCall {
  readonly signal: AbortSignal | undefined;
  /** The user the request is about, for the messages of its errors. */
  readonly userId?: number;
  /** Default: repeatable. */
  readonly retryOn?: RetryOn;
}

/** Sends one user operation and reads its answer with `schema`. */
function send<S extends z.ZodType>(
  client: Client,
  call: ApiRequest,
  schema: S,
  { signal, userId, retryOn = RETRY_ON.repeatable }: SendUserCall,
): Promise<z.output<S>> {
  const { sellerId, schoolId } = client.view;
  const context: RequestContext = { userId, sellerId, schoolId };
  return sendWithRetries(client, call, { schema, retryOn, context, signal });
}

/** The JSON body of a {@link UserInput}; a TypeError when it is not an object. */
function userBody(input: UserInput): string {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new TypeError('the user must be an object such as { email, profile: { firstName } }');
  }
  return JSON.stringify(input);
}

function userPath(userId: number): string {
  if (!isPositiveInteger(userId)) throw new TypeError('userId must be a positive integer');
  return `/saas/v2/user/${userId}`;
}

function statePath(userId: number, verb: 'get' | 'set', key: UserStateKey): string {
  if (typeof key !== 'string' || key.length === 0) throw new TypeError('key must be a state key');
  return `${userPath(userId)}/state/${verb}?${new URLSearchParams({ key })}`;
}

/** `login=…`, `tgId=…` or `extId=…`; a TypeError unless exactly one is given. */
function findQuery(by: FindUserBy): string {
  if (typeof by !== 'object' || by === null)
    throw new TypeError('findUser takes { login }, { tgId } or { extId }');
  const given = FIND_KEYS.filter((key) => by[key] !== undefined);
  const [name] = given;
  if (name === undefined || given.length > 1) {
    throw new TypeError('findUser takes exactly one of login, tgId and extId');
  }
  return new URLSearchParams({ [name]: String(by[name]) }).toString();
}

/** A user read by the tolerant schema, typed with its known fields (see `KnownOutput`). */
function known(user: z.output<typeof apiUserSchema>): ApiUser {
  return user as KnownOutput<typeof apiUserSchema>;
}

/**
 * A failure of `createUser` after which the user may exist (no answer, or a 5xx): the same
 * error, its message saying so and naming `upsertUser`, the call that is safe to repeat.
 */
function mayHaveCreated(error: unknown): unknown {
  if (!(
    error instanceof TimeoutError ||
    error instanceof NetworkError ||
    error instanceof ServerError
  )) {
    return error;
  }
  const Same = error.constructor as new (
    message: string,
    options: SchoolApiErrorOptions,
  ) => SchoolApiError;
  return new Same(
    `${error.message}; the user may have been created all the same: createUser is not sent again, ` +
      'since a second one would create a second user. Look the user up with findUser, or send ' +
      'upsertUser, which matches the user by its logins and is safe to repeat',
    { status: error.status, code: error.code, messages: error.messages, cause: error.cause },
  );
}
