/**
 * The users, groups and exports of createMockSchoolApi on their own, over raw fetch: the checks
 * and answers the client's tests (test/api/) do not reach, read against
 * docs/platform.md#users-groups-and-exports and #api-errors.
 */

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { apiUserSchema } from '../../src/api/index.js';
import { createMockSchoolApi, type MockSchoolApi } from '../../src/testing/mock-school-api.js';

const HEADERS = {
  authorization: 'Bearer test-api-key',
  'seller-id': '1',
  'school-id': '1',
  'content-type': 'application/json',
};

let mock: MockSchoolApi;

beforeEach(async () => {
  mock = await createMockSchoolApi({
    users: [7, { id: 8, schoolId: 2, email: 'other@example.com' }],
    groups: [12],
  });
});

afterEach(async () => {
  await mock.close();
});

/** The mock's answer to `method path` with `body` and the good headers (`headers` over them). */
async function call(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${mock.url}/saas/v2${path}`, {
    method,
    headers: { ...HEADERS, ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

describe("createMockSchoolApi's users", () => {
  it('answers a created user in payload, a user the client schema reads, of the school', async () => {
    const { status, json } = await call('POST', '/user/create', { email: 'ada@example.com' });

    expect([status, json['success'], json['code']]).toEqual([201, true, 201]);
    const { user } = json['payload'] as { user: unknown };
    expect(apiUserSchema.parse(user)).toMatchObject({ email: 'ada@example.com' });
    expect(mock.users().map(({ id }) => id)).toContain((user as { id: number }).id);
  });

  it('gives a user it created a session, as a user of the school', async () => {
    const created = await call('POST', '/user/create', { email: 'ada@example.com' });
    const { id } = (created.json['payload'] as { user: { id: number } }).user;

    const { status } = await call('POST', '/user/session/auth-token', { userId: id });

    expect(status).toBe(201);
  });

  it('refuses a body that is not JSON, or sent without Content-Type application/json', async () => {
    const plain = await call(
      'PUT',
      '/user/upsert',
      { email: 'a@example.com' },
      {
        'content-type': 'text/plain',
      },
    );
    const response = await fetch(`${mock.url}/saas/v2/user/upsert`, {
      method: 'PUT',
      headers: HEADERS,
      body: '{',
    });

    expect([plain.status, plain.json['cause']]).toEqual([400, 'validation']);
    expect(response.status).toBe(400);
  });

  it('answers 401 Forbidden "not entity owner" for a user of another school', async () => {
    const { status, json } = await call('GET', '/user/8/state/get?key=CustomField');

    expect([status, json['cause'], json['message']]).toEqual([
      401,
      'Forbidden',
      'Forbidden seller resource - seller not entity owner',
    ]);
  });

  it('finds no user of another school', async () => {
    const { json } = await call('GET', '/user/find?login=other%40example.com');

    expect(json['payload']).toEqual({ user: null });
  });

  it('checks each field of a profile, its contact included', async () => {
    const { json } = await call('POST', '/user/create', {
      profile: { sex: 'Woman', contact: { email: 'nope', fax: '1' } },
    });

    expect(json['message']).toEqual([
      'profile.sex must be one of the following values: Ufo, Women, Men',
      'profile.contact.email must be an email',
      'property profile.contact.fax should not exist',
    ]);
  });
});

describe("createMockSchoolApi's groups and exports", () => {
  it('answers 404 GroupNotFound for a group the school does not have', async () => {
    const { status, json } = await call('POST', '/group/13/member/create-many', { userIds: [7] });

    expect([status, json['cause']]).toEqual([404, 'GroupNotFound']);
  });

  it('refuses an empty userIds', async () => {
    const { status, json } = await call('DELETE', '/group/12/member/delete-many', { userIds: [] });

    expect([status, json['message']]).toEqual([400, ['userIds must contain at least 1 elements']]);
  });

  it('answers 404 for the result of an export it never started', async () => {
    const { status, json } = await call('GET', '/workflow-execution/nope/result');

    expect([status, json['cause']]).toEqual([404, 'WorkflowExecutionNotFound']);
  });

  it('starts an export Waiting, and reads Waiting, Processing, then Completed with its file', async () => {
    const { json } = await call('POST', '/query-export/generate', {
      type: 'QUERY_EXPORT_TYPE_COURSE_LESSON_PRACTICE_ATTEMPT_FIND_MANY',
      variables: { filter: { courseId: 3 } },
    });
    const started = json['payload'] as { uuid: string; status: string; isCompleted: boolean };
    const statuses: unknown[] = [];
    for (let read = 0; read < 3; read += 1) {
      const result = await call('GET', `/workflow-execution/${started.uuid}/result`);
      statuses.push((result.json['payload'] as { status: string }).status);
    }

    expect([started.status, started.isCompleted]).toEqual(['Waiting', false]);
    expect(statuses).toEqual(['Waiting', 'Processing', 'Completed']);
  });
});
