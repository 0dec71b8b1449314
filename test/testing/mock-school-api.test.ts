import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sessionSchema } from '../../src/api/index.js';
import { createMockSchoolApi, type MockSchoolApi } from '../../src/testing/mock-school-api.js';

const PATH = '/saas/v2/user/session/auth-token';
const KEY = 'mock-key';
const STUDENT = 31;
const OTHER_STUDENT = 32;
const OTHER_SCHOOL_STUDENT = 40;
const ADMIN = 2;
const DAY_MS = 86_400_000;

type Json = Record<string, unknown>;

let mock: MockSchoolApi;

beforeEach(async () => {
  mock = await createMockSchoolApi({
    apiKey: KEY,
    sellerId: 7,
    schoolId: 70,
    users: [STUDENT, { id: OTHER_STUDENT }, { id: OTHER_SCHOOL_STUDENT, schoolId: 71 }],
    admins: [ADMIN],
  });
});

afterEach(async () => {
  await mock.close();
});

const goodHeaders = {
  authorization: `Bearer ${KEY}`,
  'seller-id': '7',
  'school-id': '70',
  'content-type': 'application/json',
};

async function post(
  body: unknown,
  headers: Record<string, string | undefined> = {},
): Promise<{ status: number; json: Record<string, unknown> }> {
  const merged = Object.fromEntries(
    Object.entries({ ...goodHeaders, ...headers }).filter(
      (entry): entry is [string, string] => entry[1] !== undefined,
    ),
  );
  const response = await fetch(`${mock.url}${PATH}`, {
    method: 'POST',
    headers: merged,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

function errorBody(code: number, cause: string, message: string | string[], error: string) {
  return { success: false, code, cause, message, error };
}

describe('createMockSchoolApi', () => {
  it('listens on 127.0.0.1 on a free port', () => {
    expect(mock.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('answers 201 with a new session, valid per docs/platform.md#session-tokens, expiring in about two years', async () => {
    const { status, json } = await post({ userId: STUDENT });

    expect(status).toBe(201);
    expect(json).toMatchObject({ success: true, code: 201, payload: { isCreated: true } });
    const session = sessionSchema.parse((json['payload'] as { session: unknown }).session);
    expect(session).toMatchObject({ userId: STUDENT, alive: true, archivedAt: null });
    const lifetime = Date.parse(session.expireAt) - Date.parse(session.createdAt);
    expect(lifetime).toBeGreaterThanOrEqual(730 * DAY_MS);
    expect(lifetime).toBeLessThanOrEqual(731 * DAY_MS);
    expect(session.token.length).toBeGreaterThanOrEqual(32);
  });

  it('returns the active session unless forceCreate, which adds one and ends none', async () => {
    const first = await post({ userId: STUDENT });
    const again = await post({ userId: STUDENT, forceCreate: false });
    const forced = await post({ userId: STUDENT, forceCreate: true });
    const other = await post({ userId: OTHER_STUDENT });

    const payload = (answer: { json: Record<string, unknown> }) =>
      answer.json['payload'] as { isCreated: boolean; session: { token: string } };
    expect(payload(again)).toEqual({ isCreated: false, session: payload(first).session });
    expect(payload(forced).isCreated).toBe(true);
    expect(payload(forced).session.token).not.toBe(payload(first).session.token);
    expect(payload(other).session.token).not.toBe(payload(first).session.token);
    expect(mock.sessions(STUDENT).map((session) => session.alive)).toEqual([true, true]);
    expect(mock.sessions(OTHER_STUDENT)).toHaveLength(1);
  });

  it('gives copies of its sessions', async () => {
    await post({ userId: STUDENT });
    const [copy] = mock.sessions(STUDENT);
    if (copy) copy.alive = false;

    expect(mock.sessions(STUDENT)[0]?.alive).toBe(true);
  });

  it.each([
    ['a wrong key', { authorization: 'Bearer nope' }],
    ['no Authorization', { authorization: undefined }],
    ['a key without Bearer', { authorization: KEY }],
  ])('answers 401 Unauthorized for %s', async (_case, headers) => {
    const answer = await post({ userId: STUDENT }, headers);

    expect(answer).toEqual({
      status: 401,
      json: errorBody(401, 'Unauthorized', 'Unauthorized', 'Unauthorized'),
    });
  });

  it.each([
    ['a Seller-Id the key does not belong to', { 'seller-id': '8' }],
    ['no Seller-Id', { 'seller-id': undefined }],
  ])('answers 401 Forbidden for %s', async (_case, headers) => {
    const answer = await post({ userId: STUDENT }, headers);

    expect(answer).toEqual({
      status: 401,
      json: errorBody(401, 'Forbidden', 'Forbidden seller resource', 'Forbidden seller resource'),
    });
  });

  /** POST a good request to a mock started with `options`, and close it. */
  async function postTo(
    options: Parameters<typeof createMockSchoolApi>[0],
  ): Promise<{ status: number; json: unknown }> {
    const other = await createMockSchoolApi({ apiKey: KEY, sellerId: 7, schoolId: 70, ...options });
    try {
      const response = await fetch(`${other.url}${PATH}`, {
        method: 'POST',
        headers: goodHeaders,
        body: JSON.stringify({ userId: STUDENT }),
      });
      return { status: response.status, json: await response.json() };
    } finally {
      await other.close();
    }
  }

  it('answers 401 Forbidden naming the permission when the key lacks SchoolManageUsers', async () => {
    const message = 'Forbidden seller resource - permissions SchoolManageUsers';
    expect(await postTo({ permissions: [] })).toEqual({
      status: 401,
      json: errorBody(401, 'Forbidden', message, message),
    });
  });

  it("answers 401 Blocked when the key's user is banned", async () => {
    expect(await postTo({ banned: true })).toEqual({
      status: 401,
      json: errorBody(401, 'Blocked', 'User is blocked', 'User is blocked'),
    });
  });

  it("answers 403 when the key's user is not an API client", async () => {
    expect(await postTo({ apiClient: false })).toEqual({
      status: 403,
      json: errorBody(403, 'Forbidden', 'Forbidden resource', 'Forbidden resource'),
    });
  });

  it('checks the key before the ban, and the ban before anything else', async () => {
    const other = await createMockSchoolApi({ apiKey: KEY, banned: true, apiClient: false });
    try {
      const send = (authorization: string) =>
        fetch(`${other.url}${PATH}`, {
          method: 'POST',
          headers: { ...goodHeaders, authorization },
          body: '{}',
        }).then(async (response) => [response.status, ((await response.json()) as Json).cause]);
      expect(await send('Bearer nope')).toEqual([401, 'Unauthorized']);
      expect(await send(`Bearer ${KEY}`)).toEqual([401, 'Blocked']);
    } finally {
      await other.close();
    }
  });

  it("answers 400 ForbiddenSchoolMismatch when School-Id is not the seller's school", async () => {
    const answer = await post({ userId: STUDENT }, { 'school-id': '71' });

    expect(answer.status).toBe(400);
    expect(answer.json).toMatchObject({
      success: false,
      code: 400,
      cause: 'ForbiddenSchoolMismatch',
    });
  });

  it.each([
    [
      'a Seller-Id that is not a number',
      { 'seller-id': 'x' },
      'Seller-Id must be an integer number',
    ],
    [
      'a School-Id that is not a number',
      { 'school-id': 'x' },
      'School-Id must be an integer number',
    ],
    [
      'a body that is not JSON',
      { 'content-type': 'text/plain' },
      'Content-Type must be application/json',
    ],
  ])('answers 400 validation for %s', async (_case, headers, message) => {
    const answer = await post({ userId: STUDENT }, headers);

    expect(answer).toEqual({
      status: 400,
      json: errorBody(400, 'validation', [message], 'Bad Request'),
    });
  });

  it.each([{ userId: '31' }, { userId: 3.5 }, { userId: null }, {}, '[31]', '{"userId":'])(
    "answers 400 validation ['userId must be an integer number'] or a body error for %j",
    async (body) => {
      const answer = await post(body);

      expect(answer.status).toBe(400);
      expect(answer.json).toMatchObject({ cause: 'validation', error: 'Bad Request' });
      expect(answer.json['message']).toEqual(
        typeof body === 'string'
          ? ['body must be a JSON object']
          : ['userId must be an integer number'],
      );
    },
  );

  it('answers 400 validation for a forceCreate that is not a boolean', async () => {
    const answer = await post({ userId: STUDENT, forceCreate: 'yes' });

    expect(answer.json['message']).toEqual(['forceCreate must be a boolean value']);
  });

  it.each([
    ['a user of another school', OTHER_SCHOOL_STUDENT],
    ['an unknown user', 999],
  ])('answers 401 Forbidden for %s, the text in both message and error', async (_case, userId) => {
    const text = 'Forbidden seller resource - seller not entity owner';

    expect(await post({ userId })).toEqual({
      status: 401,
      json: errorBody(401, 'Forbidden', text, text),
    });
  });

  it('answers 400 Forbidden for a school admin or manager', async () => {
    const text = 'User is school admin or manager';

    expect(await post({ userId: ADMIN })).toEqual({
      status: 400,
      json: errorBody(400, 'Forbidden', text, text),
    });
    expect(mock.sessions(ADMIN)).toEqual([]);
  });

  it('answers 404 on another path and 405 on another method', async () => {
    const other = await fetch(`${mock.url}/saas/v2/user/delete`, { method: 'POST' });
    const get = await fetch(`${mock.url}${PATH}`);
    const postFind = await fetch(`${mock.url}/saas/v2/user/find`, { method: 'POST' });

    expect([other.status, get.status, postFind.status]).toEqual([404, 405, 405]);
  });

  it('records every request, faulted ones included', async () => {
    mock.failNext(500);
    await post({ userId: STUDENT });
    await post({ userId: STUDENT }, { 'x-extra': 'one' });

    expect(mock.requests.map((request) => [request.method, request.path, request.body])).toEqual([
      ['POST', PATH, '{"userId":31}'],
      ['POST', PATH, '{"userId":31}'],
    ]);
    expect(mock.requests[1]?.headers).toMatchObject({ ...goodHeaders, 'x-extra': 'one' });
  });

  it('answers queued faults in order, with a section-7 body by default, then serves again', async () => {
    mock.failNext(429, undefined, { 'retry-after': '3' });
    mock.failNext(503, { custom: true });
    mock.failNext(502, '<html>Bad Gateway</html>', { 'content-type': 'text/html' });

    const limited = await fetch(`${mock.url}${PATH}`, { method: 'POST' });
    const unavailable = await post({ userId: STUDENT });
    const gateway = await fetch(`${mock.url}${PATH}`, { method: 'POST' });
    const served = await post({ userId: STUDENT });

    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('3');
    expect(await limited.json()).toEqual(
      errorBody(429, 'TooManyRequests', 'Too Many Requests', 'Too Many Requests'),
    );
    expect(unavailable).toEqual({ status: 503, json: { custom: true } });
    expect(gateway.headers.get('content-type')).toBe('text/html');
    expect(await gateway.text()).toBe('<html>Bad Gateway</html>');
    expect(served.status).toBe(201);
    expect(mock.sessions(STUDENT)).toHaveLength(1);
  });

  it('dropNext serves the request but closes the connection unanswered', async () => {
    mock.dropNext();

    await expect(post({ userId: STUDENT })).rejects.toThrow(TypeError);
    expect(mock.sessions(STUDENT)).toHaveLength(1);
  });

  it('delayNext holds the answer back', async () => {
    mock.delayNext(300);
    const started = Date.now();

    const answer = await post({ userId: STUDENT });

    expect(answer.status).toBe(201);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('closes promptly with a delayed request pending', async () => {
    const other = await createMockSchoolApi({
      apiKey: KEY,
      sellerId: 7,
      schoolId: 70,
      users: [STUDENT],
    });
    other.delayNext(60_000);
    const pending = fetch(`${other.url}${PATH}`, { method: 'POST' }).catch(
      (error: unknown) => error,
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = Date.now();

    await other.close();

    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await pending).toBeInstanceOf(TypeError);
  });
});

describe('createMockSchoolApi() with no options', () => {
  it('treats every positive id as a student of school 1, with the key test-api-key', async () => {
    const bare = await createMockSchoolApi();
    try {
      const response = await fetch(`${bare.url}${PATH}`, {
        method: 'POST',
        headers: {
          authorization: 'Bearer test-api-key',
          'seller-id': '1',
          'school-id': '1',
          'content-type': 'application/json',
        },
        body: JSON.stringify({ userId: 987 }),
      });
      expect(response.status).toBe(201);
      const json = (await response.json()) as { payload: { isCreated: boolean } };
      expect(json.payload.isCreated).toBe(true);
      expect(bare.sessions(987)).toHaveLength(1);
    } finally {
      await bare.close();
    }
  });
});
