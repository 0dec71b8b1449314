// The entity each event is about, checked against the platform's events (docs/events.md): each row
// written out here from the platform's payloads (fixtures/, as production sends them), never read
// from src/platform/entity-of.ts.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { entityOf, KNOWN_EVENTS, type EventEntity } from '../src/index.js';

interface FixtureEnvelope {
  event: string;
  data: Record<string, unknown>;
}

function fixture(path: string): FixtureEnvelope {
  return JSON.parse(readFileSync(new URL(`../fixtures/${path}`, import.meta.url), 'utf8'));
}

/** `data` with the field at `path` set to `value` (undefined: removed), on a deep copy. */
function withField(data: Record<string, unknown>, path: string[], value: unknown): unknown {
  const copy = structuredClone(data);
  let at: Record<string, unknown> = copy;
  for (const name of path.slice(0, -1)) at = at[name] as Record<string, unknown>;
  const last = path.at(-1)!;
  if (value === undefined) delete at[last];
  else at[last] = value;
  return copy;
}

const ENROLLMENTS = [
  'ProductEnrolledToFree',
  'ProductEnrolledViaLms',
  'ProductEnrolledViaPayment',
  'ProductEnrolledByInviteLink',
];

describe('entityOf: the entity of each event, on the full fixtures', () => {
  it('PaymentCompleted is the invoice: invoice:<data.payment.invoice.id>', () => {
    const { event, data } = fixture('PaymentCompleted.json');
    expect(entityOf({ event, data })).toEqual({
      kind: 'invoice',
      id: '877051',
      key: 'invoice:877051',
    });
  });

  it.each(ENROLLMENTS)('%s is the product access: access:<data.access.id>', (name) => {
    const { event, data } = fixture(`${name}.json`);
    expect(event).toBe(name);
    expect(entityOf({ event, data })).toEqual({
      kind: 'access',
      id: '2418830',
      key: 'access:2418830',
    });
  });

  it('CertificateIssued is the certificate: certificate:<data.certificate.id>', () => {
    const { event, data } = fixture('CertificateIssued.json');
    expect(entityOf({ event, data })?.key).toBe('certificate:660314');
  });

  it.each([
    ['UserSignedUp', '1937465'],
    ['UserCreatedViaLms', '1937588'],
  ])('%s is the user: user:<data.user.id>', (name, id) => {
    const { event, data } = fixture(`${name}.json`);
    expect(entityOf({ event, data })).toEqual({ kind: 'user', id, key: `user:${id}` });
  });

  it('CourseProgressChanged is the lesson progress: progress:<user.id>:<course.id>:<lessonId>', () => {
    const { event, data } = fixture('CourseProgressChanged.json');
    expect(entityOf({ event, data })).toEqual({
      kind: 'progress',
      id: '1937465:73120:884213',
      key: 'progress:1937465:73120:884213',
    });
  });

  it('CourseCompleted is the completion: completion:<user.id>:<course.id>', () => {
    const { event, data } = fixture('CourseCompleted.json');
    expect(entityOf({ event, data })).toEqual({
      kind: 'completion',
      id: '1937465:73120',
      key: 'completion:1937465:73120',
    });
  });

  it.each(['UserAcquainted', 'UserTgConnected', 'CourseLessonPracticeCompleted'])(
    '%s has no entity (any other event)',
    (name) => {
      const { event, data } = fixture(`${name}.json`);
      expect(entityOf({ event, data })).toBeUndefined();
    },
  );

  it('gives no entity to any known event outside the table, nor to one this version does not know', () => {
    const inTable = new Set([
      'PaymentCompleted',
      ...ENROLLMENTS,
      'CertificateIssued',
      'UserSignedUp',
      'UserCreatedViaLms',
      'CourseProgressChanged',
      'CourseCompleted',
    ]);
    // The richest payload of all: every field the table reads is there.
    const data = {
      payment: { invoice: { id: 1 } },
      access: { id: 2 },
      certificate: { id: 3 },
      user: { id: 4 },
      course: { id: 5 },
      lessonId: 6,
    };
    for (const event of KNOWN_EVENTS) {
      expect(entityOf({ event, data }) !== undefined, event).toBe(inTable.has(event));
    }
    expect(entityOf({ event: 'SomethingNew', data })).toBeUndefined();
  });
});

describe('entityOf on the sparse fixtures and variants (what the platform may leave out)', () => {
  const files = [
    ...readdirSync(new URL('../fixtures/sparse/', import.meta.url)).map((f) => `sparse/${f}`),
    ...readdirSync(new URL('../fixtures/variants/', import.meta.url)).map((f) => `variants/${f}`),
  ];

  it.each(files)('%s: the entity of the table, or none when the payload lacks its ids', (file) => {
    const { event, data } = fixture(file);
    const expected = expectedKey(event, data);
    expect(entityOf({ event, data })?.key).toBe(expected);
  });

  it('a sparse enrollment, sent without its access, has no entity', () => {
    for (const name of ENROLLMENTS) {
      const { event, data } = fixture(`sparse/${name}.json`);
      expect(data['access']).toBeUndefined();
      expect(entityOf({ event, data })).toBeUndefined();
    }
  });

  it('a sparse CourseProgressChanged, without a lessonId, is the course progress: progress:<user.id>:<course.id>', () => {
    const { event, data } = fixture('sparse/CourseProgressChanged.json');
    expect(entityOf({ event, data })?.key).toBe('progress:1937465:73120');
  });
});

/** The key the table gives, written from its rows (or undefined), for the sparse and variant files. */
function expectedKey(event: string, data: Record<string, unknown>): string | undefined {
  const id = (value: unknown) => (value as { id?: number } | undefined)?.id;
  const payment = data['payment'] as { invoice?: unknown } | undefined;
  const ids: Record<string, () => (number | undefined)[] | undefined> = {
    PaymentCompleted: () => [id(payment?.invoice)],
    ProductEnrolledToFree: () => [id(data['access'])],
    ProductEnrolledViaLms: () => [id(data['access'])],
    ProductEnrolledViaPayment: () => [id(data['access'])],
    ProductEnrolledByInviteLink: () => [id(data['access'])],
    CertificateIssued: () => [id(data['certificate'])],
    UserSignedUp: () => [id(data['user'])],
    UserCreatedViaLms: () => [id(data['user'])],
    CourseProgressChanged: () =>
      [id(data['user']), id(data['course']), data['lessonId'] as number | undefined].filter(
        (part, i) => i < 2 || (part !== undefined && part !== null),
      ),
    CourseCompleted: () => [id(data['user']), id(data['course'])],
  };
  const kinds: Record<string, string> = {
    PaymentCompleted: 'invoice',
    CertificateIssued: 'certificate',
    UserSignedUp: 'user',
    UserCreatedViaLms: 'user',
    CourseProgressChanged: 'progress',
    CourseCompleted: 'completion',
  };
  const parts = ids[event]?.();
  if (parts === undefined || parts.some((part) => part === undefined)) return undefined;
  return `${kinds[event] ?? 'access'}:${parts.join(':')}`;
}

describe('entityOf with fields absent, null or of another type: no entity, never a throw', () => {
  const cases: [string, string[]][] = [
    ['PaymentCompleted', ['payment', 'invoice', 'id']],
    ['PaymentCompleted', ['payment', 'invoice']],
    ['PaymentCompleted', ['payment']],
    ['ProductEnrolledViaPayment', ['access', 'id']],
    ['ProductEnrolledViaPayment', ['access']],
    ['CertificateIssued', ['certificate', 'id']],
    ['CertificateIssued', ['certificate']],
    ['UserSignedUp', ['user', 'id']],
    ['UserSignedUp', ['user']],
    ['CourseProgressChanged', ['user', 'id']],
    ['CourseProgressChanged', ['course']],
    ['CourseCompleted', ['user']],
    ['CourseCompleted', ['course', 'id']],
  ];

  it.each(cases)('%s without %j', (event, path) => {
    const { data } = fixture(`${event}.json`);
    expect(entityOf({ event, data: withField(data, path, undefined) })).toBeUndefined();
  });

  it.each(cases)('%s with %j null', (event, path) => {
    const { data } = fixture(`${event}.json`);
    expect(entityOf({ event, data: withField(data, path, null) })).toBeUndefined();
  });

  it.each([
    ['an object', { id: 1 }],
    ['an array', [1]],
    ['a boolean', true],
    ['an empty string', ''],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
  ])('an id that is %s is no id', (_, value) => {
    const { event, data } = fixture('PaymentCompleted.json');
    expect(entityOf({ event, data: withField(data, ['payment', 'invoice', 'id'], value) })).toBe(
      undefined,
    );
  });

  it.each([null, undefined, 'text', 42, [], true])('data %j gives no entity', (data) => {
    for (const event of ['PaymentCompleted', 'CourseProgressChanged', 'UserSignedUp']) {
      expect(entityOf({ event, data })).toBeUndefined();
    }
    expect(entityOf({ event: 'PaymentCompleted' })).toBeUndefined();
  });

  it('a CourseProgressChanged whose lessonId is null is the course progress, like one without', () => {
    const { event, data } = fixture('CourseProgressChanged.json');
    const key = 'progress:1937465:73120';
    expect(entityOf({ event, data: withField(data, ['lessonId'], null) })?.key).toBe(key);
    expect(entityOf({ event, data: withField(data, ['lessonId'], undefined) })?.key).toBe(key);
  });

  it('a lessonId of no usable type gives no entity rather than the course progress', () => {
    const { event, data } = fixture('CourseProgressChanged.json');
    expect(entityOf({ event, data: withField(data, ['lessonId'], { id: 1 }) })).toBeUndefined();
    expect(entityOf({ event, data: withField(data, ['lessonId'], '') })).toBeUndefined();
  });
});

describe('entityOf keys: one per entity', () => {
  const progress = (user: unknown, course: unknown, lessonId?: unknown): EventEntity | undefined =>
    entityOf({
      event: 'CourseProgressChanged',
      data: { user: { id: user }, course: { id: course }, lessonId },
    });

  it('gives an id sent as a number or as a string of its digits one key', () => {
    expect(progress(1, 2, 3)?.key).toBe('progress:1:2:3');
    expect(progress('1', '2', '3')?.key).toBe('progress:1:2:3');
  });

  it('takes a lessonId that is a string (its type is not stated by the platform)', () => {
    expect(progress(1, 2, 'intro')?.key).toBe('progress:1:2:intro');
  });

  it('never reads one key two ways: a ":" inside a string id is escaped', () => {
    const keys = [
      progress('1:2', 3)?.key,
      progress(1, '2:3')?.key,
      progress(1, 2, 3)?.key,
      progress('1%3A2', 3)?.key,
    ];
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.every((key) => key?.split(':').length === 3 || key?.split(':').length === 4)).toBe(
      true,
    );
  });

  it('gives different lessons, courses and users different keys', () => {
    const keys = [
      progress(1, 2, 3),
      progress(1, 2, 4),
      progress(1, 5, 3),
      progress(6, 2, 3),
      progress(1, 2),
    ];
    expect(new Set(keys.map((entity) => entity?.key)).size).toBe(5);
  });

  it('gives the four enrollments of one access one key, and a payment of that id another', () => {
    const keys = ENROLLMENTS.map((event) => entityOf({ event, data: { access: { id: 7 } } })?.key);
    expect(new Set(keys)).toEqual(new Set(['access:7']));
    expect(
      entityOf({ event: 'PaymentCompleted', data: { payment: { invoice: { id: 7 } } } })?.key,
    ).toBe('invoice:7');
  });
});
