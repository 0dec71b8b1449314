/**
 * The client's user operations (docs/api.md#users-groups-and-exports), over real HTTP against
 * createMockSchoolApi: each one's request as docs/platform.md#users-groups-and-exports writes it,
 * its answer read (inside `payload` or at the top level), its errors typed, and its retries:
 * `createUser` is never sent twice once it may have reached the platform, `upsertUser` is.
 */

import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  ApiValidationError,
  AuthenticationError,
  ForeignUserError,
  NetworkError,
  PermissionError,
  ServerError,
  TimeoutError,
  UserNotFoundError,
  type FindUserBy,
  type SchoolApiOptions,
} from '../../src/api/index.js';
import { createMockSchoolApi, type MockSchoolApi } from '../../src/testing/mock-school-api.js';
import { apiFailure, clientOf, CREDENTIALS, sent } from '../helpers/school-api.js';

const STUDENT = 5121;
const OTHER_SCHOOL_STUDENT = 6000;
const UNKNOWN_USER = 404_404;
const ADA = { email: 'ada@example.com', profile: { firstName: 'Ada', lastName: 'Lovelace' } };

let mock: MockSchoolApi;

beforeEach(async () => {
  mock = await createMockSchoolApi({
    ...CREDENTIALS,
    users: [
      { id: STUDENT, email: 'grace@example.com', phone: '+15550100', tgId: 77, extId: 'crm-1' },
      { id: OTHER_SCHOOL_STUDENT, schoolId: 878 },
    ],
  });
});

afterEach(async () => {
  await mock.close();
});

const api = (options: Partial<SchoolApiOptions> = {}) => clientOf(mock, options);

describe('createUser', () => {
  it('is POST /saas/v2/user/create with the user as its JSON body, and resolves to the new user', async () => {
    const { user } = await api().createUser(ADA);

    expect(sent(mock)).toEqual([{ method: 'POST', path: '/saas/v2/user/create', body: ADA }]);
    expect(mock.requests[0]?.headers).toMatchObject({
      authorization: `Bearer ${CREDENTIALS.apiKey}`,
      'seller-id': '1042',
      'school-id': '877',
      'content-type': 'application/json',
    });
    expect(user).toMatchObject({ email: 'ada@example.com', profile: { firstName: 'Ada' } });
    expect(mock.users().find(({ id }) => id === user.id)).toEqual(user);
  });

  it('makes a second user for the same email: create is not idempotent', async () => {
    const first = await api().createUser(ADA);
    const second = await api().createUser(ADA);

    expect(second.user.id).not.toBe(first.user.id);
    expect(mock.users().filter(({ email }) => email === ADA.email)).toHaveLength(2);
  });

  it('is a typed ApiValidationError when the platform refuses a field, with its messages', async () => {
    const error = await apiFailure(api().createUser({ email: 'not an email' }));

    expect(error).toBeInstanceOf(ApiValidationError);
    expect([error.status, error.code, error.messages]).toEqual([
      400,
      'validation',
      ['email must be an email'],
    ]);
  });

  it('sends a misspelt field as it is (the types refuse it), and the platform refuses it', async () => {
    const error = await apiFailure(api().createUser({ emial: 'ada@example.com' } as never));

    expect(error).toBeInstanceOf(ApiValidationError);
    expect(error.messages).toEqual(['property emial should not exist']);
  });

  it('refuses a user that is not an object before anything is sent', async () => {
    await expect(api().createUser(null as never)).rejects.toThrow(TypeError);
    expect(mock.requests).toHaveLength(0);
  });
});

describe('createUser is never sent twice once it may have reached the platform', () => {
  it('a timeout: called once, and the error says the user may exist and names upsertUser', async () => {
    mock.delayNext(1_000);

    const error = await apiFailure(api({ timeoutMs: 200 }).createUser(ADA));

    expect(error).toBeInstanceOf(TimeoutError);
    expect([error.status, error.code]).toEqual([0, 'timeout']);
    expect(error.message).toMatch(/may have been created/);
    expect(error.message).toContain('upsertUser');
    expect(mock.requests).toHaveLength(1);
    // The platform went on with the request it had: the user exists after all.
    await expect
      .poll(() => mock.users().filter(({ email }) => email === ADA.email))
      .toHaveLength(1);
    expect(mock.requests).toHaveLength(1);
  });

  it('a lost answer: called once, a NetworkError that names upsertUser; the user was created', async () => {
    mock.dropNext();

    const error = await apiFailure(api().createUser(ADA));

    expect(error).toBeInstanceOf(NetworkError);
    expect(error.message).toContain('upsertUser');
    expect(mock.requests).toHaveLength(1);
    expect(mock.users().filter(({ email }) => email === ADA.email)).toHaveLength(1);
  });

  it('a 500: called once, a ServerError that names upsertUser', async () => {
    mock.failNext(500);

    const error = await apiFailure(api().createUser(ADA));

    expect(error).toBeInstanceOf(ServerError);
    expect(error.message).toContain('upsertUser');
    expect(mock.requests).toHaveLength(1);
  });

  it('a 429 Rate is waited out: the platform did not serve it', async () => {
    mock.rateLimitNext(1, 300);
    const started = Date.now();

    const { user } = await api().createUser(ADA);

    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(mock.requests).toHaveLength(2);
    expect(mock.users().filter(({ email }) => email === ADA.email)).toEqual([user]);
  });
});

describe('upsertUser', () => {
  it('is PUT /saas/v2/user/upsert: creates the user of new logins, then updates the same one', async () => {
    const created = await api().upsertUser(ADA);
    const updated = await api().upsertUser({ email: ADA.email, profile: { lastName: 'King' } });

    expect(sent(mock).map(({ method, path }) => `${method} ${path}`)).toEqual([
      'PUT /saas/v2/user/upsert',
      'PUT /saas/v2/user/upsert',
    ]);
    expect(created.isCreated).toBe(true);
    expect(updated.isCreated).toBe(false);
    expect(updated.user.id).toBe(created.user.id);
    expect(updated.user.profile).toMatchObject({ firstName: 'Ada', lastName: 'King' });
    expect(mock.users().filter(({ email }) => email === ADA.email)).toHaveLength(1);
  });

  it('is retried after a timeout, and the user exists once', async () => {
    mock.delayNext(2_000);

    const { isCreated } = await api({ timeoutMs: 200 }).upsertUser(ADA);

    expect(isCreated).toBe(true);
    expect(mock.requests).toHaveLength(2);
    expect(mock.users().filter(({ email }) => email === ADA.email)).toHaveLength(1);
  });

  it('waits out a 429 Rate until its retryAfter', async () => {
    mock.rateLimitNext(1, 400);
    const started = Date.now();

    await api().upsertUser(ADA);

    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    expect(mock.requests).toHaveLength(2);
  });

  it('without a login is refused by the platform: a typed 400 validation', async () => {
    const error = await apiFailure(api().upsertUser({ profile: { firstName: 'Ada' } }));

    expect(error).toBeInstanceOf(ApiValidationError);
    expect(error.code).toBe('validation');
  });
});

describe('updateUser', () => {
  it('is PUT /saas/v2/user/<userId>/update; null clears a field', async () => {
    const { user } = await api().updateUser(STUDENT, {
      phone: null,
      profile: { firstName: 'Grace' },
    });

    expect(sent(mock)).toEqual([
      {
        method: 'PUT',
        path: `/saas/v2/user/${STUDENT}/update`,
        body: { phone: null, profile: { firstName: 'Grace' } },
      },
    ]);
    expect(user).toMatchObject({ id: STUDENT, email: 'grace@example.com', phone: null });
    expect(user.profile?.firstName).toBe('Grace');
  });

  it('is a UserNotFoundError for an id the school has no user for', async () => {
    const error = await apiFailure(api().updateUser(UNKNOWN_USER, { banned: true }));

    expect(error).toBeInstanceOf(UserNotFoundError);
    expect([error.status, error.code]).toEqual([404, 'UserNotFound']);
    expect(error.message).toContain(String(UNKNOWN_USER));
    expect(mock.requests).toHaveLength(1);
  });

  it("is a ForeignUserError for another school's user", async () => {
    const error = await apiFailure(api().updateUser(OTHER_SCHOOL_STUDENT, { banned: true }));

    expect(error).toBeInstanceOf(ForeignUserError);
    expect([error.status, error.code]).toEqual([401, 'Forbidden']);
  });

  it('refuses a userId that is not a positive integer before anything is sent', async () => {
    await expect(api().updateUser(0, {})).rejects.toThrow(TypeError);
    expect(mock.requests).toHaveLength(0);
  });
});

describe('findUser', () => {
  it.each<[string, FindUserBy, string]>([
    ['an email as login', { login: 'grace@example.com' }, 'login=grace%40example.com'],
    ['a phone as login', { login: '+15550100' }, 'login=%2B15550100'],
    ['tgId', { tgId: 77 }, 'tgId=77'],
    ['extId', { extId: 'crm-1' }, 'extId=crm-1'],
  ])('finds the user by %s with GET /saas/v2/user/find', async (_, by, query) => {
    const user = await api().findUser(by);

    expect(user?.id).toBe(STUDENT);
    expect(sent(mock)).toEqual([
      { method: 'GET', path: `/saas/v2/user/find?${query}`, body: undefined },
    ]);
  });

  it('resolves to null when the school has no such user', async () => {
    expect(await api().findUser({ login: 'nobody@example.com' })).toBeNull();
  });

  it('resolves to null when the platform answers UserNotFound instead', async () => {
    mock.failNext(404, {
      success: false,
      code: 404,
      cause: 'UserNotFound',
      message: 'User not found',
      error: 'Not Found',
    });

    expect(await api().findUser({ login: 'nobody@example.com' })).toBeNull();
  });

  it('takes exactly one of login, tgId and extId, checked before anything is sent', async () => {
    const both = { login: 'a@example.com', tgId: 1 } as never;
    await expect(api().findUser(both)).rejects.toThrow(TypeError);
    await expect(api().findUser({} as never)).rejects.toThrow(TypeError);
    expect(mock.requests).toHaveLength(0);
  });
});

describe("a user's state", () => {
  it('is null until set; set with PUT …/state/set?key=, read with GET …/state/get?key=', async () => {
    const client = api();
    const before = await client.getUserState(STUDENT, 'CustomField');
    const { set } = await client.setUserState(STUDENT, 'CustomField', { plan: 'gold' });
    const after = await client.getUserState(STUDENT, 'CustomField');

    expect([before, set, after]).toEqual([null, true, { plan: 'gold' }]);
    expect(sent(mock)).toEqual([
      {
        method: 'GET',
        path: `/saas/v2/user/${STUDENT}/state/get?key=CustomField`,
        body: undefined,
      },
      {
        method: 'PUT',
        path: `/saas/v2/user/${STUDENT}/state/set?key=CustomField`,
        body: { value: { plan: 'gold' } },
      },
      {
        method: 'GET',
        path: `/saas/v2/user/${STUDENT}/state/get?key=CustomField`,
        body: undefined,
      },
    ]);
  });

  it('is a UserNotFoundError for an unknown user', async () => {
    const error = await apiFailure(api().getUserState(UNKNOWN_USER, 'PersonalInfoFilled'));

    expect(error).toBeInstanceOf(UserNotFoundError);
  });

  it('of a key the platform does not keep is a typed 400 validation', async () => {
    const error = await apiFailure(api().setUserState(STUDENT, 'Mood' as never, 'happy'));

    expect(error).toBeInstanceOf(ApiValidationError);
    expect(error.messages[0]).toMatch(/^key must be one of/);
  });
});

describe('what every user operation shares', () => {
  it('reads an answer whose fields are at the top level, as the platform SDK does', async () => {
    mock.failNext(200, { user: { id: 9, email: 'ada@example.com' } });

    const { user } = await api().updateUser(9, { email: 'ada@example.com' });

    expect(user).toMatchObject({ id: 9, email: 'ada@example.com' });
  });

  it('tolerates optional fields that are null or absent, and fields it does not know', async () => {
    const user = { id: 9, uuid: null, domain: null, updatedAt: null, profile: null, karma: 3 };
    mock.failNext(200, { success: true, code: 200, payload: { user, isCreated: false } });

    const answer = await api().upsertUser({ email: 'ada@example.com' });

    expect(answer).toEqual({ user, isCreated: false });
  });

  it('is an AuthenticationError 401 Unauthorized with a wrong key, which no error shows', async () => {
    const error = await apiFailure(api({ apiKey: 'sk_wrong_key_123' }).findUser({ tgId: 1 }));

    expect(error).toBeInstanceOf(AuthenticationError);
    expect([error.status, error.code]).toEqual([401, 'Unauthorized']);
    expect(inspect(error)).not.toContain('sk_wrong_key_123');
  });

  it('is a PermissionError naming SchoolManageUsers when the key lacks it', async () => {
    await mock.close();
    mock = await createMockSchoolApi({ ...CREDENTIALS, permissions: ['SellerSales'] });

    const error = await apiFailure(api().upsertUser(ADA));

    expect(error).toBeInstanceOf(PermissionError);
    expect((error as PermissionError).permission).toBe('SchoolManageUsers');
  });

  it("stops at the caller's signal with its reason", async () => {
    mock.delayNext(1_000);
    const controller = new AbortController();
    const pending = api()
      .upsertUser(ADA, { signal: controller.signal })
      .catch((error: unknown) => error);
    // Aborted once the request is at the server, not after a fixed time a slow machine outlasts.
    await vi.waitFor(() => expect(mock.requests).toHaveLength(1));
    controller.abort();
    const outcome = await pending;

    expect((outcome as DOMException).name).toBe('AbortError');
    // Not sent again: the caller's abort is no failure to retry.
    expect(mock.requests).toHaveLength(1);
  });
});
