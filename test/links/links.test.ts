import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  buildDeepLink,
  buildSignInUrl,
  COURSE_PAGE_ID,
  coursePage,
  LESSON_PAGE_ID,
  lessonPage,
  parseDeepLink,
  type DeepLink,
  type DeepLinkPage,
  type OpenPageAction,
} from '../../src/links/index.js';

/** The actions carried in a link's `extra`, decoded with Node's own base64url. */
function extraOf(link: string): unknown {
  const data = new URL(link).searchParams.get('data') ?? '';
  const extra = new URLSearchParams(data).get('extra');
  return extra === null ? undefined : JSON.parse(Buffer.from(extra, 'base64url').toString('utf8'));
}

function rawExtraOf(link: string): string | null {
  return new URLSearchParams(new URL(link).searchParams.get('data') ?? '').get('extra');
}

describe('lessonPage', () => {
  it('fills the lesson pattern, with page 1 by default and every value a string', () => {
    expect(lessonPage({ courseId: 12, lessonId: 345 })).toEqual({
      pageId: '/courses/:page([0-9]+)/:courseId([0-9]+)/study/:lessonId([0-9]+)',
      params: { page: '1', courseId: '12', lessonId: '345' },
    });
    expect(Object.keys(lessonPage({ courseId: 1, lessonId: 2 }).params)).toEqual([
      'page',
      'courseId',
      'lessonId',
    ]);
  });

  it('takes digit strings as they are, and another page', () => {
    expect(lessonPage({ courseId: '0012', lessonId: '9', page: '3' }).params).toEqual({
      page: '3',
      courseId: '0012',
      lessonId: '9',
    });
  });

  it.each([0, -1, 1.5, Number.NaN, 2 ** 53, '', '12a', ' 12', '١٢', '+1', '1e3'])(
    'refuses the id %o, which the pattern [0-9]+ does not match',
    (id) => {
      expect(() => lessonPage({ courseId: id, lessonId: 1 })).toThrow(TypeError);
      expect(() => lessonPage({ courseId: 1, lessonId: id })).toThrow(TypeError);
      expect(() => lessonPage({ courseId: 1, lessonId: 1, page: id })).toThrow(TypeError);
    },
  );
});

describe('coursePage', () => {
  it.each([
    [42, '42'],
    ['intro_2024', 'intro_2024'],
    ['ABC', 'ABC'],
  ])('fills the course pattern for %o', (courseId, expected) => {
    expect(coursePage({ courseId })).toEqual({
      pageId: '/course/:courseId([0-9_A-Za-z]+)',
      params: { courseId: expected },
    });
  });

  it.each(['', 'a-b', 'курс', 'a b', 0, 1.5])('refuses the id %o', (courseId) => {
    expect(() => coursePage({ courseId })).toThrow(TypeError);
  });
});

describe('buildDeepLink', () => {
  it('builds a lesson link with a login token, layer by layer as docs/platform.md#deep-links says', () => {
    const link = buildDeepLink({
      domain: 'school.example.com',
      page: lessonPage({ courseId: 12, lessonId: 345 }),
      loginToken: 'tok',
    });

    // Layer 3: base64url of the actions, login-by-token first (worked out by hand, checked below).
    const extra = 'eyJhY3Rpb25zIjpbeyJ0eXBlIjoibG9naW4tYnktdG9rZW4iLCJ0b2tlbiI6InRvayJ9XX0';
    // Layer 2: the inner query, each value URL-encoded by URLSearchParams.
    const inner =
      'action=open-page' +
      '&domain=school.example.com' +
      '&pageId=%2Fcourses%2F%3Apage%28%5B0-9%5D%2B%29%2F%3AcourseId%28%5B0-9%5D%2B%29%2Fstudy%2F%3AlessonId%28%5B0-9%5D%2B%29' +
      '&params=%7B%22page%22%3A%221%22%2C%22courseId%22%3A%2212%22%2C%22lessonId%22%3A%22345%22%7D' +
      `&extra=${extra}`;
    // Layer 1: the inner query encoded whole into data.
    expect(link).toBe(`serviceapp://?data=${encodeURIComponent(inner)}`);
    expect(
      link.startsWith(
        'serviceapp://?data=action%3Dopen-page%26domain%3Dschool.example.com%26pageId%3D%252Fcourses%252F',
      ),
    ).toBe(true);

    const data = decodeURIComponent(link.slice('serviceapp://?data='.length));
    expect(data).toBe(inner);
    const query = new URLSearchParams(data);
    expect([...query.keys()]).toEqual(['action', 'domain', 'pageId', 'params', 'extra']);
    expect(query.get('pageId')).toBe(LESSON_PAGE_ID);
    expect(query.get('params')).toBe('{"page":"1","courseId":"12","lessonId":"345"}');
    expect(Buffer.from(extra, 'base64url').toString('utf8')).toBe(
      '{"actions":[{"type":"login-by-token","token":"tok"}]}',
    );
  });

  it('builds a course link without extra when there is no token and no action', () => {
    const link = buildDeepLink({
      domain: 'school.example.com',
      page: coursePage({ courseId: 7 }),
      actions: [],
    });

    expect(link).toBe(
      'serviceapp://?data=' +
        encodeURIComponent(
          'action=open-page&domain=school.example.com&pageId=%2Fcourse%2F%3AcourseId%28%5B0-9_A-Za-z%5D%2B%29&params=%7B%22courseId%22%3A%227%22%7D',
        ),
    );
    expect(rawExtraOf(link)).toBeNull();
  });

  it('encodes twice: a space, + & and = in a value survive both layers', () => {
    const page = { pageId: '/search', params: { q: 'a b+c&d=e%f' } };
    const link = buildDeepLink({ domain: 'school.example.com', page });

    // URLSearchParams writes the space as + and + as %2B; encodeURIComponent then escapes those.
    expect(link).toContain(
      'params%3D%257B%2522q%2522%253A%2522a%2Bb%252Bc%2526d%253De%2525f%2522%257D',
    );
    expect(parseDeepLink(link).page).toEqual(page);
  });

  it('puts login-by-token first, then the actions in their order', () => {
    const course: OpenPageAction = { type: 'open-page', ...coursePage({ courseId: 'intro' }) };
    const lesson: OpenPageAction = {
      type: 'open-page',
      ...lessonPage({ courseId: 1, lessonId: 2 }),
    };
    const link = buildDeepLink({
      domain: 'school.example.com',
      page: lessonPage({ courseId: 1, lessonId: 3 }),
      actions: [course, lesson],
      loginToken: 'session-token',
    });

    expect(extraOf(link)).toEqual({
      actions: [
        { type: 'login-by-token', token: 'session-token' },
        { type: 'open-page', pageId: COURSE_PAGE_ID, params: { courseId: 'intro' } },
        {
          type: 'open-page',
          pageId: LESSON_PAGE_ID,
          params: { page: '1', courseId: '1', lessonId: '2' },
        },
      ],
    });
  });

  it('writes extra in the base64url alphabet, without padding', () => {
    // Standard base64 of these actions holds +, / and == padding, so the rule is put to work.
    const loginToken = '~?~~~';
    const json = JSON.stringify({ actions: [{ type: 'login-by-token', token: loginToken }] });
    expect(Buffer.from(json).toString('base64')).toMatch(/\+.*\/.*==$|\/.*\+.*==$/);

    const extra = rawExtraOf(
      buildDeepLink({ domain: 'a.example.com', page: coursePage({ courseId: 1 }), loginToken }),
    );

    expect(extra).toBe(
      'eyJhY3Rpb25zIjpbeyJ0eXBlIjoibG9naW4tYnktdG9rZW4iLCJ0b2tlbiI6In4_fn5-In1dfQ',
    );
    expect(extra).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('encodes a unicode token as UTF-8', () => {
    const loginToken = 'ключ-🔑-\u00e9';
    const link = buildDeepLink({
      domain: 'school.example.com',
      page: coursePage({ courseId: 1 }),
      loginToken,
    });

    expect(extraOf(link)).toEqual({ actions: [{ type: 'login-by-token', token: loginToken }] });
    expect(parseDeepLink(link).loginToken).toBe(loginToken);
  });

  it('uses another scheme when asked, in lower case', () => {
    const page = coursePage({ courseId: 1 });

    expect(buildDeepLink({ domain: 'a.example.com', page, scheme: 'mySchool+app' })).toMatch(
      /^myschool\+app:\/\/\?data=/,
    );
  });

  const page = coursePage({ courseId: 1 });
  it.each([
    ['a domain with a scheme', { domain: 'https://school.example.com', page }],
    ['a domain with a port', { domain: 'school.example.com:443', page }],
    ['a domain with a path', { domain: 'school.example.com/app', page }],
    ['a single-label domain', { domain: 'school', page }],
    ['an empty domain', { domain: '', page }],
    ['a label starting with a hyphen', { domain: '-school.example.com', page }],
    ['an empty label', { domain: 'school..example.com', page }],
    ['a scheme with a space', { domain: 'a.example.com', page, scheme: 'my app' }],
    ['a scheme starting with a digit', { domain: 'a.example.com', page, scheme: '1app' }],
    ['a web scheme', { domain: 'a.example.com', page, scheme: 'https' }],
    ['javascript:', { domain: 'a.example.com', page, scheme: 'JavaScript' }],
    ['an empty token', { domain: 'a.example.com', page, loginToken: '' }],
    ['an empty pageId', { domain: 'a.example.com', page: { pageId: '', params: {} } }],
    ['a number in params', { domain: 'a.example.com', page: { pageId: '/x', params: { id: 1 } } }],
    [
      'login-by-token among the actions',
      { domain: 'a.example.com', page, actions: [{ type: 'login-by-token', token: 't' }] },
    ],
  ])('refuses %s', (_case, options) => {
    expect(() => buildDeepLink(options as Parameters<typeof buildDeepLink>[0])).toThrow(TypeError);
  });
});

describe('parseDeepLink', () => {
  it('gives back what built the link, actions decoded', () => {
    const options: DeepLink = {
      scheme: 'serviceapp',
      domain: 'school.example.com',
      page: lessonPage({ courseId: 12, lessonId: 345 }),
      loginToken: 'tok',
      actions: [{ type: 'open-page', ...coursePage({ courseId: 'intro' }) }],
    };

    expect(parseDeepLink(buildDeepLink(options))).toStrictEqual(options);
  });

  it('leaves loginToken and actions out when the link has none', () => {
    const parsed = parseDeepLink(
      buildDeepLink({ domain: 'a.example.com', page: coursePage({ courseId: 1 }) }),
    );

    expect(parsed).toStrictEqual({
      scheme: 'serviceapp',
      domain: 'a.example.com',
      page: coursePage({ courseId: 1 }),
    });
  });

  const inner = (extra?: string): string =>
    'serviceapp://?data=' +
    encodeURIComponent(
      new URLSearchParams([
        ['action', 'open-page'],
        ['domain', 'a.example.com'],
        ['pageId', '/x'],
        ['params', '{}'],
        ...(extra === undefined ? [] : [['extra', extra]]),
      ]).toString(),
    );
  const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

  it.each([
    ['not a URL', 'school.example.com'],
    ['a web URL', 'https://school.example.com/?data=x'],
    ['a link with a host', 'serviceapp://host?data=action%3Dopen-page'],
    ['a link without data', 'serviceapp://?x=1'],
    ['another action', inner().replace('open-page', 'close-page')],
    ['params that are not JSON', inner().replace('%257B%257D', 'nope')],
    ['extra that is not base64url', inner('a+b/')],
    ['extra with padding', inner(Buffer.from('{"actions":[]}').toString('base64'))],
    ['extra that is not JSON', inner(Buffer.from('{"actions"').toString('base64url'))],
    ['extra without actions', inner(b64({}))],
    ['an unknown action', inner(b64({ actions: [{ type: 'close-app' }] }))],
    [
      'a sign-in after another action',
      inner(
        b64({
          actions: [
            { type: 'open-page', pageId: '/y', params: {} },
            { type: 'login-by-token', token: 't' },
          ],
        }),
      ),
    ],
  ])('refuses %s', (_case, link) => {
    expect(() => parseDeepLink(link)).toThrow(TypeError);
  });

  it('never quotes the token when it refuses a link', () => {
    const token = 'SECRET-TOKEN-42';
    const broken = [
      inner(`${b64({ actions: [{ type: 'login-by-token', token }] })}%%`),
      inner(
        Buffer.from(`{"actions":[{"type":"login-by-token","token":"${token}"`).toString(
          'base64url',
        ),
      ),
      `serviceapp://?data=${token}%ZZ`,
      `not a url ${token}`,
    ];

    for (const link of broken) {
      const error = (() => {
        try {
          parseDeepLink(link);
        } catch (caught) {
          return caught;
        }
        return new Error('parsed');
      })();
      expect(error).toBeInstanceOf(TypeError);
      expect(
        `${String(error)} ${(error as Error).stack ?? ''} ${JSON.stringify(error)}`,
      ).not.toContain(token);
      expect((error as Error).cause).toBeUndefined();
    }
  });

  // Canonical input: scheme given in lower case; loginToken and actions absent rather than empty;
  // pages and actions without keys of their own.
  const id = fc.oneof(fc.integer({ min: 1 }), fc.stringMatching(/^[0-9]{1,12}$/));
  const anyCodePoint = fc
    .integer({ min: 0, max: 0x10ffff })
    .map((point) => String.fromCodePoint(point));
  const params = fc.dictionary(
    fc.string({ unit: anyCodePoint, maxLength: 8 }),
    fc.string({ unit: anyCodePoint, maxLength: 16 }),
    { noNullPrototype: true, maxKeys: 4 },
  );
  const pageArb: fc.Arbitrary<DeepLinkPage> = fc.oneof(
    fc.record({ courseId: id, lessonId: id, page: id }).map(lessonPage),
    fc
      .oneof(id, fc.stringMatching(/^[0-9_A-Za-z]{1,12}$/))
      .map((courseId) => coursePage({ courseId })),
    fc.record(
      { pageId: fc.string({ unit: 'binary', minLength: 1, maxLength: 24 }), params },
      { noNullPrototype: true },
    ),
  );
  const action: fc.Arbitrary<OpenPageAction> = pageArb.map(({ pageId, params: values }) => ({
    type: 'open-page',
    pageId,
    params: values,
  }));
  const webSchemes = new Set([
    'http',
    'https',
    'ws',
    'wss',
    'ftp',
    'file',
    'javascript',
    'data',
    'blob',
    'about',
  ]);
  const deepLink: fc.Arbitrary<DeepLink> = fc.record(
    {
      scheme: fc
        .stringMatching(/^[a-z][a-z0-9+.-]{0,10}$/)
        .filter((scheme) => !webSchemes.has(scheme)),
      domain: fc.domain(),
      page: pageArb,
      loginToken: fc.string({
        unit: fc.oneof(anyCodePoint, fc.constant('+'), fc.constant('=')),
        minLength: 1,
        maxLength: 64,
      }),
      actions: fc.array(action, { minLength: 1, maxLength: 3 }),
    },
    { requiredKeys: ['scheme', 'domain', 'page'], noNullPrototype: true },
  );

  it('round-trips any valid link: parseDeepLink(buildDeepLink(x)) deep-equals x', () => {
    fc.assert(
      fc.property(deepLink, (link) => {
        const built = buildDeepLink(link);
        expect(built.startsWith(`${link.scheme}://?data=`)).toBe(true);
        expect(rawExtraOf(built) ?? '').toMatch(/^[A-Za-z0-9_-]*$/);
        expect(parseDeepLink(built)).toStrictEqual(link);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('buildSignInUrl', () => {
  it('appends ___uat to the school URL and the path', () => {
    expect(buildSignInUrl('https://school.example.com', 'courses/12', 'tok')).toBe(
      'https://school.example.com/courses/12?___uat=tok',
    );
  });

  it('joins with exactly one slash and keeps a path of the school URL', () => {
    expect(buildSignInUrl('https://school.example.com/', '/courses', 'tok')).toBe(
      'https://school.example.com/courses?___uat=tok',
    );
    expect(buildSignInUrl(new URL('https://example.com/school/'), 'courses', 'tok')).toBe(
      'https://example.com/school/courses?___uat=tok',
    );
    expect(buildSignInUrl('https://school.example.com', '', 'tok')).toBe(
      'https://school.example.com/?___uat=tok',
    );
  });

  it('keeps the query and the fragment of the path, in their encoding', () => {
    expect(
      buildSignInUrl('https://school.example.com', 'courses/12?tab=lessons&q=a%20b#top', 'tok'),
    ).toBe('https://school.example.com/courses/12?tab=lessons&q=a%20b&___uat=tok#top');
  });

  it('encodes the token so it reads back unchanged', () => {
    const token = 'a+b/c=d&e f';
    const url = buildSignInUrl('https://school.example.com', 'courses', token);

    expect(url).toBe('https://school.example.com/courses?___uat=a%2Bb%2Fc%3Dd%26e%20f');
    expect(new URL(url).searchParams.get('___uat')).toBe(token);
  });

  it.each(['http://localhost:3000', 'http://127.0.0.1', 'http://[::1]:8080'])(
    'accepts http:// on %s',
    (schoolUrl) => {
      expect(buildSignInUrl(schoolUrl, 'x', 'tok')).toBe(`${schoolUrl}/x?___uat=tok`);
    },
  );

  const token = 'SECRET-SESSION-TOKEN-7';
  it.each([
    ['an http:// school URL', 'http://school.example.com', 'courses', token],
    ['a school URL that is no URL', 'school.example.com', 'courses', token],
    ['a school URL with a query', 'https://school.example.com/?a=1', 'courses', token],
    ['a school URL with credentials', 'https://u:p@school.example.com', 'courses', token],
    [
      'an absolute URL as the path',
      'https://school.example.com',
      'https://evil.example.com/',
      token,
    ],
    ['a path that already has ___uat', 'https://school.example.com', 'x?___uat=other', token],
    ['an empty token', 'https://school.example.com', 'courses', ''],
    ['a token with a lone surrogate', 'https://school.example.com', 'courses', `${token}\ud800`],
  ])('refuses %s, without quoting the token', (_case, schoolUrl, path, value) => {
    let caught: unknown;
    try {
      buildSignInUrl(schoolUrl, path, value);
    } catch (error) {
      caught = error;
    }

    expect(caught).toBeInstanceOf(TypeError);
    expect(`${String(caught)} ${(caught as Error).stack ?? ''}`).not.toContain(token);
  });
});
