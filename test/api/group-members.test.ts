/**
 * A group's members through the client (docs/api.md#users-groups-and-exports), over real HTTP
 * against createMockSchoolApi: any number of ids sent in calls of at most 100 (the platform's
 * limit, docs/platform.md#users-groups-and-exports), their answers merged, their errors typed.
 */

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ApiValidationError,
  AuthenticationError,
  UserNotFoundError,
  type SchoolApiOptions,
} from '../../src/api/index.js';
import { createMockSchoolApi, type MockSchoolApi } from '../../src/testing/mock-school-api.js';
import { apiFailure, clientOf, CREDENTIALS, sent } from '../helpers/school-api.js';

const GROUP = 12;
/** 250 users: more than two calls' worth at the platform's 100 a call. */
const USERS = Array.from({ length: 250 }, (_, index) => 1_000 + index);

let mock: MockSchoolApi;

beforeEach(async () => {
  mock = await createMockSchoolApi({ ...CREDENTIALS, users: USERS, groups: [GROUP] });
});

afterEach(async () => {
  await mock.close();
});

const api = (options: Partial<SchoolApiOptions> = {}) => clientOf(mock, options);

/** The calls the mock received from the `from`-th on. */
function callsSince(from: number): ReturnType<typeof sent> {
  return sent(mock).slice(from);
}

/** The `userIds` of each call the mock received from the `from`-th on. */
function idsSent(from = 0): number[][] {
  return callsSince(from).map(({ body }) => (body as { userIds: number[] }).userIds);
}

describe('addGroupMembers', () => {
  it('adds 250 users in 3 calls of at most 100, and merges created and exist in order', async () => {
    const earlier = USERS.slice(95, 105);
    await api().addGroupMembers(GROUP, earlier);
    const before = mock.requests.length;

    const { created, exist } = await api().addGroupMembers(GROUP, USERS);

    expect(callsSince(before).map(({ method, path }) => `${method} ${path}`)).toEqual(
      Array(3).fill(`POST /saas/v2/group/${GROUP}/member/create-many`),
    );
    expect(idsSent(before).map((ids) => ids.length)).toEqual([100, 100, 50]);
    expect(idsSent(before).flat()).toEqual(USERS);
    expect(exist.map((member) => member.userId)).toEqual(earlier);
    expect(created.map((member) => member.userId)).toEqual(
      USERS.filter((id) => !earlier.includes(id)),
    );
    expect(mock.groupMembers(GROUP).sort()).toEqual([...USERS].sort());
  });

  it('sends each id once, and nothing for no ids', async () => {
    const client = api();
    expect(await client.addGroupMembers(GROUP, [])).toEqual({ created: [], exist: [] });
    expect(mock.requests).toHaveLength(0);

    const { created } = await client.addGroupMembers(GROUP, [1_000, 1_001, 1_000]);

    expect(idsSent()).toEqual([[1_000, 1_001]]);
    expect(created).toHaveLength(2);
  });

  it('is a UserNotFoundError for an id the school has no user for', async () => {
    const error = await apiFailure(api().addGroupMembers(GROUP, [1_000, 99]));

    expect(error).toBeInstanceOf(UserNotFoundError);
    expect([error.status, error.code]).toEqual([404, 'UserNotFound']);
  });

  it('is a 401 AuthenticationError with a wrong key', async () => {
    const error = await apiFailure(api({ apiKey: 'sk_wrong' }).addGroupMembers(GROUP, [1_000]));

    expect(error).toBeInstanceOf(AuthenticationError);
    expect([error.status, error.code]).toEqual([401, 'Unauthorized']);
  });

  it('is the platform 400 validation for more than 100 ids in one call (sent past the client)', async () => {
    const ids = JSON.stringify({ userIds: USERS.slice(0, 101) });
    const client = api({ fetch: (input, init) => fetch(input, { ...init, body: ids }) });

    const error = await apiFailure(client.addGroupMembers(GROUP, [1_000]));

    expect(error).toBeInstanceOf(ApiValidationError);
    expect(error.messages).toEqual(['userIds must contain no more than 100 elements']);
  });

  it('refuses ids that are not positive integers before anything is sent', async () => {
    await expect(api().addGroupMembers(GROUP, [1, 2.5])).rejects.toThrow(TypeError);
    await expect(api().addGroupMembers(0, [1])).rejects.toThrow(TypeError);
    expect(mock.requests).toHaveLength(0);
  });

  it('waits out a 429 Rate between its calls', async () => {
    mock.rateLimitNext(1, 300);

    const { created } = await api().addGroupMembers(GROUP, USERS.slice(0, 150));

    expect(created).toHaveLength(150);
    expect(mock.requests).toHaveLength(3);
  });
});

describe('removeGroupMembers', () => {
  it('removes 250 users in 3 DELETE calls, and sums affected', async () => {
    await api().addGroupMembers(GROUP, USERS.slice(0, 200));
    const before = mock.requests.length;

    const { affected } = await api().removeGroupMembers(GROUP, USERS);

    expect(callsSince(before).map(({ method, path }) => `${method} ${path}`)).toEqual(
      Array(3).fill(`DELETE /saas/v2/group/${GROUP}/member/delete-many`),
    );
    expect(idsSent(before).map((ids) => ids.length)).toEqual([100, 100, 50]);
    expect(affected).toBe(200);
    expect(mock.groupMembers(GROUP)).toEqual([]);
  });

  it('reads an answer whose fields are at the top level', async () => {
    mock.failNext(200, { affected: 1 });

    expect(await api().removeGroupMembers(GROUP, [1_000])).toEqual({ affected: 1 });
  });
});
