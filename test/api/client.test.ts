import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  AdminUserError,
  ApiValidationError,
  AuthenticationError,
  createSchoolApi,
  ForeignUserError,
  InvalidResponseError,
  isSchoolApiError,
  NetworkError,
  PermissionError,
  RateLimitError,
  SchoolApiError,
  SchoolMismatchError,
  ServerError,
  sessionSchema,
  TimeoutError,
  type SchoolApi,
  type SchoolApiOptions,
} from '../../src/api/index.js';
import { createMockSchoolApi, type MockSchoolApi } from '../../src/testing/mock-school-api.js';
import { ConfigError } from '../../src/errors.js';
import { apiFailure as failure } from '../helpers/school-api.js';

const API_KEY = 'sk_live_Q7f3c9a1e5b2d4f608a9c1e3b5d7f9a1c';
const SELLER_ID = 1042;
const SCHOOL_ID = 877;
const STUDENT = 5121;
const OTHER_SCHOOL_STUDENT = 6000;
const ADMIN = 17;
const UNKNOWN_USER = 404_404;

let mock: MockSchoolApi;

beforeEach(async () => {
  mock = await createMockSchoolApi({
    apiKey: API_KEY,
    sellerId: SELLER_ID,
    schoolId: SCHOOL_ID,
    users: [STUDENT, { id: OTHER_SCHOOL_STUDENT, schoolId: 878 }],
    admins: [ADMIN],
  });
});

afterEach(async () => {
  await mock.close();
});

function api(options: Partial<SchoolApiOptions> = {}): SchoolApi {
  return createSchoolApi({
    baseUrl: mock.url,
    apiKey: API_KEY,
    sellerId: SELLER_ID,
    schoolId: SCHOOL_ID,
    ...options,
  });
}

function platformError(status: number, cause: string, message: string | string[]): unknown {
  return { success: false, code: status, cause, message, error: 'Error' };
}

describe('the request', () => {
  it('is POST /saas/v2/user/session/auth-token with the headers and JSON body of docs/platform.md#session-tokens', async () => {
    await api().createSessionToken({ userId: STUDENT });

    expect(mock.requests).toHaveLength(1);
    const [request] = mock.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/saas/v2/user/session/auth-token');
    expect(request?.headers).toMatchObject({
      authorization: `Bearer ${API_KEY}`,
      'seller-id': '1042',
      'school-id': '877',
      'content-type': 'application/json',
    });
    expect(request?.body).toBe('{"userId":5121,"forceCreate":false}');
  });

  it('sends forceCreate: true when asked', async () => {
    await api().createSessionToken({ userId: STUDENT, forceCreate: true });

    expect(JSON.parse(mock.requests[0]?.body ?? '')).toEqual({
      userId: STUDENT,
      forceCreate: true,
    });
  });

  it('tolerates a trailing slash on baseUrl', async () => {
    await api({ baseUrl: `${mock.url}/` }).createSessionToken({ userId: STUDENT });

    expect(mock.requests[0]?.path).toBe('/saas/v2/user/session/auth-token');
  });

  it('keeps a path prefix of baseUrl, and reports an unexpected status as SchoolApiError', async () => {
    const error = await failure(
      api({ baseUrl: `${mock.url}/api/` }).createSessionToken({ userId: STUDENT }),
    );

    expect(mock.requests[0]?.path).toBe('/api/saas/v2/user/session/auth-token');
    expect(error.constructor).toBe(SchoolApiError);
    expect([error.status, error.code, error.messages]).toEqual([404, 'NotFound', ['Not Found']]);
  });
});

describe('redirects', () => {
  it('are not followed, so the key goes to the configured host only', async () => {
    mock.failNext(307, '', {
      location: 'https://elsewhere.example.com/saas/v2/user/session/auth-token',
    });

    const error = await failure(api().createSessionToken({ userId: STUDENT }));

    expect(error.constructor).toBe(SchoolApiError);
    expect([error.status, error.code]).toEqual([307, 'redirect']);
    expect(mock.requests).toHaveLength(1);
  });
});

describe('sessions', () => {
  it('creates a session, then returns the same active one with isCreated false', async () => {
    const client = api();
    const first = await client.createSessionToken({ userId: STUDENT });
    const second = await client.createSessionToken({ userId: STUDENT });

    expect(first.isCreated).toBe(true);
    expect(first.session).toEqual(mock.sessions(STUDENT)[0]);
    expect(sessionSchema.safeParse(first.session).success).toBe(true);
    expect(second.isCreated).toBe(false);
    expect(second.session).toEqual(first.session);
    expect(mock.sessions(STUDENT)).toHaveLength(1);
  });

  it('with forceCreate adds a session and ends none', async () => {
    const client = api();
    const first = await client.createSessionToken({ userId: STUDENT });
    const forced = await client.createSessionToken({ userId: STUDENT, forceCreate: true });

    expect(forced.isCreated).toBe(true);
    expect(forced.session.token).not.toBe(first.session.token);
    expect(mock.sessions(STUDENT).map((session) => session.alive)).toEqual([true, true]);
  });

  it('rejects a 201 whose body is not a session, naming the field but not its value', async () => {
    const { session } = await api().createSessionToken({ userId: STUDENT });
    const broken = { ...session, expireAt: 'soon' };
    mock.failNext(201, { success: true, code: 201, payload: { isCreated: true, session: broken } });

    const error = await failure(api().createSessionToken({ userId: STUDENT }));

    expect(error).toBeInstanceOf(InvalidResponseError);
    expect([error.status, error.code]).toEqual([201, 'invalid_response']);
    expect(error.messages).toHaveLength(1);
    expect(error.messages[0]).toMatch(/^payload\.session\.expireAt: /);
    expect(error.message).not.toContain('soon');
    expect(mock.requests).toHaveLength(2);
  });

  it('rejects a 201 whose body is not JSON', async () => {
    mock.failNext(201, 'created!');

    const error = await failure(api().createSessionToken({ userId: STUDENT }));

    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error.code).toBe('invalid_response');
  });
});

describe('the errors of docs/platform.md#api-errors and #authentication', () => {
  const foreign = ['Forbidden seller resource - seller not entity owner'];
  const cases = [
    {
      when: 'the user belongs to another school',
      call: () => api().createSessionToken({ userId: OTHER_SCHOOL_STUDENT }),
      type: ForeignUserError,
      expected: { status: 401, code: 'Forbidden', messages: foreign },
    },
    {
      when: 'the user is not found for this seller',
      call: () => api().createSessionToken({ userId: UNKNOWN_USER }),
      type: ForeignUserError,
      expected: { status: 401, code: 'Forbidden', messages: foreign },
    },
    {
      when: "School-Id is not the seller's school",
      call: () => api({ schoolId: 878 }).createSessionToken({ userId: STUDENT }),
      type: SchoolMismatchError,
      expected: {
        status: 400,
        code: 'ForbiddenSchoolMismatch',
        messages: ['Forbidden school mismatch'],
      },
    },
    {
      when: 'the user is a school admin or manager',
      call: () => api().createSessionToken({ userId: ADMIN }),
      type: AdminUserError,
      expected: { status: 400, code: 'Forbidden', messages: ['User is school admin or manager'] },
    },
    {
      when: 'userId is not an integer (sent past the client by a rewriting fetch)',
      call: () =>
        api({
          fetch: (input, init) => fetch(input, { ...init, body: '{"userId":"5121"}' }),
        }).createSessionToken({ userId: STUDENT }),
      type: ApiValidationError,
      expected: { status: 400, code: 'validation', messages: ['userId must be an integer number'] },
    },
    {
      when: 'the API key is wrong',
      call: () => api({ apiKey: 'sk_live_wrong' }).createSessionToken({ userId: STUDENT }),
      type: AuthenticationError,
      expected: { status: 401, code: 'Unauthorized', messages: ['Unauthorized'] },
    },
    {
      when: 'the key does not belong to Seller-Id',
      call: () => api({ sellerId: 1043 }).createSessionToken({ userId: STUDENT }),
      type: AuthenticationError,
      expected: { status: 401, code: 'Forbidden', messages: ['Forbidden seller resource'] },
    },
  ];

  it.each(cases)('$type.name when $when, without a retry', async ({ call, type, expected }) => {
    const error = await failure(call());

    expect(error).toBeInstanceOf(type);
    expect(error).toBeInstanceOf(SchoolApiError);
    expect(error.name).toBe(type.name);
    expect({ status: error.status, code: error.code, messages: error.messages }).toEqual(expected);
    expect(mock.requests).toHaveLength(1);
  });

  /** A client of a mock started with `options` (same key, seller and school), and the mock. */
  async function withMock<T>(
    options: Parameters<typeof createMockSchoolApi>[0],
    run: (client: SchoolApi, other: MockSchoolApi) => Promise<T>,
  ): Promise<T> {
    const other = await createMockSchoolApi({
      apiKey: API_KEY,
      sellerId: SELLER_ID,
      schoolId: SCHOOL_ID,
      ...options,
    });
    try {
      return await run(api({ baseUrl: other.url }), other);
    } finally {
      await other.close();
    }
  }

  it('PermissionError naming the permission and the checkbox, for a 401 Forbidden permissions', async () => {
    await withMock({ permissions: [] }, async (client, other) => {
      const error = await failure(client.createSessionToken({ userId: STUDENT }));

      expect(error).toBeInstanceOf(PermissionError);
      expect(error).toMatchObject({
        status: 401,
        code: 'Forbidden',
        permission: 'SchoolManageUsers',
        messages: ['Forbidden seller resource - permissions SchoolManageUsers'],
      });
      expect(error.message).toContain('"School User Management" (SchoolManageUsers)');
      expect(error.message).toContain('Manage → School → For developers → API keys');
      expect(error.message).toContain(String(SELLER_ID));
      expect(other.requests).toHaveLength(1);
    });
  });

  it('PermissionError with any permission code the platform names', async () => {
    const message = 'Forbidden seller resource - permissions SchoolManageReports';
    mock.failNext(401, platformError(401, 'Forbidden', message));

    const error = await failure(api().createSessionToken({ userId: STUDENT }));

    expect(error).toBeInstanceOf(PermissionError);
    expect((error as PermissionError).permission).toBe('SchoolManageReports');
    expect(error.message).toContain('tick SchoolManageReports');
  });

  it("AuthenticationError with code Blocked when the key's user is banned", async () => {
    await withMock({ banned: true }, async (client) => {
      const error = await failure(client.createSessionToken({ userId: STUDENT }));

      expect(error).toBeInstanceOf(AuthenticationError);
      expect(error).toMatchObject({ status: 401, code: 'Blocked' });
      expect(error.message).toMatch(/blocked/);
    });
  });

  it('AuthenticationError with code Unauthorized and a message saying where keys live', async () => {
    const error = await failure(api({ apiKey: 'sk_live_wrong' }).createSessionToken({ userId: 1 }));

    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.code).toBe('Unauthorized');
    expect(error.message).toContain('API keys');
    expect(error.message).not.toContain('sk_live_wrong');
  });

  it("PermissionError without a permission for a 403: the key's user is not an API client", async () => {
    await withMock({ apiClient: false }, async (client) => {
      const error = await failure(client.createSessionToken({ userId: STUDENT }));

      expect(error).toBeInstanceOf(PermissionError);
      expect(error).toMatchObject({ status: 403, code: 'Forbidden', permission: undefined });
      expect(error.message).toContain('not an API client');
    });
  });

  it('ServerError for a 5xx whose body is not JSON, with the client code server_error', async () => {
    mock.failNext(502, '<html>Bad Gateway</html>', { 'content-type': 'text/html' });

    const error = await failure(api({ retries: 0 }).createSessionToken({ userId: STUDENT }));

    expect(error).toBeInstanceOf(ServerError);
    expect([error.status, error.code, error.messages]).toEqual([502, 'server_error', []]);
  });
});

describe('retries', () => {
  it.each([429, 500, 503])('retries a %i twice and then succeeds', async (status) => {
    mock.failNext(status);
    mock.failNext(status);

    const { isCreated } = await api().createSessionToken({ userId: STUDENT });

    expect(isCreated).toBe(true);
    expect(mock.requests).toHaveLength(3);
  });

  it.each([
    [429, RateLimitError],
    [500, ServerError],
    [503, ServerError],
  ])('throws the last %i once the retries are spent', async (status, type) => {
    for (let i = 0; i < 3; i += 1) mock.failNext(status);

    const error = await failure(api().createSessionToken({ userId: STUDENT }));

    expect(error).toBeInstanceOf(type);
    expect(error.status).toBe(status);
    expect(mock.requests).toHaveLength(3);
    expect(mock.sessions(STUDENT)).toHaveLength(0);
  });

  it('sends once with retries: 0', async () => {
    mock.failNext(503);

    const creating = api({ retries: 0 }).createSessionToken({ userId: STUDENT });
    await expect(creating).rejects.toBeInstanceOf(ServerError);
    await expect(creating).rejects.toMatchObject({ name: 'ServerError', status: 503 });
    expect(mock.requests).toHaveLength(1);
  });

  it.each([400, 401, 403])('does not retry a %i', async (status) => {
    mock.failNext(status);

    await failure(api().createSessionToken({ userId: STUDENT }));

    expect(mock.requests).toHaveLength(1);
  });

  it("waits for a 429's data.retryAfter from the body", async () => {
    const retryAfter = new Date(Date.now() + 700);
    mock.failNext(429, { ...rateLimited(), data: { retryAfter: retryAfter.toISOString() } });
    const started = Date.now();

    await api().createSessionToken({ userId: STUDENT });

    // The backoff alone would have waited 250 ms.
    expect(Date.now()).toBeGreaterThanOrEqual(retryAfter.getTime() - 20);
    expect(Date.now() - started).toBeGreaterThanOrEqual(600);
    expect(mock.requests).toHaveLength(2);
  });

  it('reads retryAfter from the body first, then from the Retry-After header', async () => {
    const inBody = new Date(Date.now() + 60_000);
    mock.failNext(
      429,
      { ...rateLimited(), data: { retryAfter: inBody.toISOString() } },
      {
        'retry-after': '5',
      },
    );

    const error = await failure(api({ retries: 0 }).createSessionToken({ userId: STUDENT }));

    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).retryAfter?.toISOString()).toBe(inBody.toISOString());
  });

  it('waits for a Retry-After header in seconds', async () => {
    mock.failNext(429, undefined, { 'retry-after': '1' });
    const started = Date.now();

    await api().createSessionToken({ userId: STUDENT });

    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(mock.requests).toHaveLength(2);
  });

  it('gives up at once when a Retry-After HTTP date is beyond the longest backoff', async () => {
    const later = new Date(Math.ceil((Date.now() + 120_000) / 1000) * 1000);
    mock.failNext(429, undefined, { 'retry-after': later.toUTCString() });

    const error = await failure(api().createSessionToken({ userId: STUDENT }));

    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).retryAfter).toEqual(later);
    expect(error.message).toContain(later.toISOString());
    expect(mock.requests).toHaveLength(1);
  });

  it('leaves retryAfter undefined when the platform gives none', async () => {
    mock.failNext(429);

    const error = await failure(api({ retries: 0 }).createSessionToken({ userId: STUDENT }));

    expect((error as RateLimitError).retryAfter).toBeUndefined();
    expect(error.code).toBe('TooManyRequests');
  });

  it('retries a lost answer without forceCreate, and gets the session the lost one created', async () => {
    mock.dropNext();

    const { isCreated, session } = await api().createSessionToken({ userId: STUDENT });

    expect(mock.requests).toHaveLength(2);
    expect(isCreated).toBe(false);
    expect(mock.sessions(STUDENT)).toEqual([session]);
  });

  it('does not retry a lost answer with forceCreate, which could leave a second session', async () => {
    mock.dropNext();

    const error = await failure(api().createSessionToken({ userId: STUDENT, forceCreate: true }));

    expect(error).toBeInstanceOf(NetworkError);
    expect([error.status, error.code]).toEqual([0, 'network']);
    expect(mock.requests).toHaveLength(1);
    expect(mock.sessions(STUDENT)).toHaveLength(1);
  });

  it('throws NetworkError when the connection is refused', async () => {
    const { url } = mock;
    await mock.close();

    const error = await failure(api({ baseUrl: url }).createSessionToken({ userId: STUDENT }));

    expect(error).toBeInstanceOf(NetworkError);
    expect([error.status, error.code]).toEqual([0, 'network']);
    expect(error.message).toContain('ECONNREFUSED');
    expect(error.cause).toBeInstanceOf(Error);
    mock = await createMockSchoolApi();
  });

  it('throws TimeoutError when an attempt outlasts timeoutMs, and does not retry it', async () => {
    mock.delayNext(2_000);
    const started = Date.now();

    const error = await failure(api({ timeoutMs: 200 }).createSessionToken({ userId: STUDENT }));

    expect(error).toBeInstanceOf(TimeoutError);
    expect([error.status, error.code]).toEqual([0, 'timeout']);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(mock.requests).toHaveLength(1);
  });

  it('gives each attempt its own timeout', async () => {
    mock.failNext(503);
    mock.delayNext(150);

    const { isCreated } = await api({ timeoutMs: 300 }).createSessionToken({ userId: STUDENT });

    expect(isCreated).toBe(true);
    expect(mock.requests).toHaveLength(2);
  });

  it("stops at the caller's abort signal, during a backoff too, with the signal's reason", async () => {
    mock.failNext(503);
    const controller = new AbortController();
    const call = api()
      .createSessionToken({ userId: STUDENT, signal: controller.signal })
      .catch((error: unknown) => error);
    // Aborted once the first attempt has reached the API (answered 503), within the 250 ms
    // backoff before the retry: a timer started with the call fired before the request arrived
    // on a loaded machine, and the test then saw no request at all.
    await vi.waitFor(() => expect(mock.requests).toHaveLength(1), { interval: 5 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort();

    const outcome = await call;

    expect(outcome).toBeInstanceOf(DOMException);
    expect((outcome as DOMException).name).toBe('AbortError');
    expect(mock.requests).toHaveLength(1);
  });
});

describe('inputs are checked before anything is sent', () => {
  it.each([0, -1, 1.5, Number.NaN, 2 ** 53, '5121', undefined, null])(
    'rejects userId %o',
    async (userId) => {
      const creating = api().createSessionToken({ userId: userId as unknown as number });
      await expect(creating).rejects.toBeInstanceOf(TypeError);
      await expect(creating).rejects.toMatchObject({
        name: 'TypeError',
        message: 'userId must be a positive integer',
      });
      expect(mock.requests).toHaveLength(0);
    },
  );

  it('rejects a forceCreate that is not a boolean', async () => {
    await expect(
      api().createSessionToken({ userId: STUDENT, forceCreate: 'yes' as unknown as boolean }),
    ).rejects.toThrow(TypeError);
    expect(mock.requests).toHaveLength(0);
  });

  it.each([
    'http://api.example.com',
    'http://10.0.0.5:8080',
    'ftp://api.example.com',
    'api.example.com',
    '',
  ])('refuses baseUrl %s (https:// only, http:// only on loopback)', (baseUrl) => {
    expect(() => api({ baseUrl })).toThrow(ConfigError);
  });

  it.each([
    'https://api.example.com',
    'http://localhost:8080',
    'http://127.0.0.1:1',
    'http://[::1]:1',
  ])('accepts baseUrl %s', (baseUrl) => {
    expect(api({ baseUrl }).baseUrl).toBe(baseUrl);
  });

  it.each([
    'https://user:pass@api.example.com',
    'https://api.example.com/?v=2',
    'https://api.example.com/#x',
  ])('refuses baseUrl %s, which is not an API root', (baseUrl) => {
    expect(() => api({ baseUrl })).toThrow(ConfigError);
  });

  it.each([
    { apiKey: '' },
    { apiKey: ` ${API_KEY}` },
    { apiKey: `${API_KEY}\r\nX-Evil: 1` },
    { sellerId: 0 },
    { schoolId: 1.5 },
    { schoolId: '877' as unknown as number },
    { timeoutMs: 0 },
    { retries: -1 },
    { retries: 1.5 },
  ])('refuses the option %o', (options) => {
    expect(() => api(options)).toThrow(ConfigError);
  });
});

describe('secrets', () => {
  it('are absent from util.inspect(api) and JSON.stringify(api)', () => {
    const client = api();

    expect(JSON.parse(JSON.stringify(client))).toEqual({
      baseUrl: mock.url,
      sellerId: SELLER_ID,
      schoolId: SCHOOL_ID,
    });
    expect(inspect(client, { depth: Infinity, showHidden: true })).not.toContain(API_KEY);
    expect(inspect(client)).toBe(
      `SchoolApi { baseUrl: '${mock.url}', sellerId: ${SELLER_ID}, schoolId: ${SCHOOL_ID} }`,
    );
    expect(Object.values(client).map(String).join(' ')).not.toContain(API_KEY);
  });

  it('never reach an error: message, stack, fields, cause or JSON', async () => {
    const { session } = await api().createSessionToken({ userId: STUDENT });
    const { token } = session;
    const errors: unknown[] = [];
    const collect = async (promise: Promise<unknown>): Promise<void> => {
      errors.push(
        await promise.then(
          () => new Error('resolved'),
          (error: unknown) => error,
        ),
      );
    };

    // A platform that echoes the key back, a body holding the token that fails validation.
    mock.failNext(500, platformError(500, 'Internal', [`bad header Bearer ${API_KEY}`]));
    await collect(api({ retries: 0 }).createSessionToken({ userId: STUDENT }));
    mock.failNext(201, { payload: { isCreated: true, session: { ...session, id: 'x' } } });
    await collect(api().createSessionToken({ userId: STUDENT }));
    await collect(api().createSessionToken({ userId: ADMIN }));
    await collect(api().createSessionToken({ userId: UNKNOWN_USER }));
    await collect(api({ schoolId: 878 }).createSessionToken({ userId: STUDENT }));
    await collect(api({ sellerId: 1043 }).createSessionToken({ userId: STUDENT }));
    await collect(api({ apiKey: `${API_KEY}x` }).createSessionToken({ userId: STUDENT }));
    mock.failNext(401, platformError(401, 'Blocked', `blocked: Bearer ${API_KEY}`));
    await collect(api().createSessionToken({ userId: STUDENT }));
    mock.failNext(
      401,
      platformError(401, 'Forbidden', `permissions SchoolManageUsers for ${API_KEY}`),
    );
    await collect(api().createSessionToken({ userId: STUDENT }));
    mock.failNext(429, rateLimited());
    await collect(api({ retries: 0 }).createSessionToken({ userId: STUDENT }));
    mock.delayNext(1_000);
    await collect(api({ timeoutMs: 100 }).createSessionToken({ userId: STUDENT }));
    mock.dropNext();
    await collect(api().createSessionToken({ userId: STUDENT, forceCreate: true }));
    await collect(api().createSessionToken({ userId: 0 }));
    errors.push(catchSync(() => api({ apiKey: `${API_KEY}\n` })));
    errors.push(catchSync(() => api({ baseUrl: `http://example.com/${API_KEY}` })));

    expect(errors).toHaveLength(15);
    expect(errors.filter(isSchoolApiError)).toHaveLength(12);
    expect((errors[0] as SchoolApiError).messages).toEqual(['bad header Bearer [redacted]']);
    for (const error of errors) {
      expect(error).toBeInstanceOf(Error);
      const shown = [
        String(error),
        (error as Error).stack ?? '',
        JSON.stringify(error),
        inspect(error, { depth: Infinity, showHidden: true }),
      ].join('\n');
      expect(shown).not.toContain(API_KEY);
      expect(shown).not.toContain(token);
    }
  });
});

describe('isSchoolApiError', () => {
  it('recognises an error of another copy of the package by its brand', () => {
    const foreignCopy = Object.defineProperty(new Error('x'), Symbol.for('schoolhooks.api-error'), {
      value: true,
    });

    expect(foreignCopy).not.toBeInstanceOf(SchoolApiError);
    expect(isSchoolApiError(foreignCopy)).toBe(true);
    expect(isSchoolApiError(new ServerError('x', { status: 500, code: 'server_error' }))).toBe(
      true,
    );
    expect(isSchoolApiError(new Error('x'))).toBe(false);
    expect(isSchoolApiError(null)).toBe(false);
    expect(isSchoolApiError('ServerError')).toBe(false);
  });
});

function rateLimited(): Record<string, unknown> {
  return {
    success: false,
    code: 429,
    cause: 'TooManyRequests',
    message: 'Too Many Requests',
    error: 'Too Many Requests',
  };
}

function catchSync(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return new Error('did not throw');
}
