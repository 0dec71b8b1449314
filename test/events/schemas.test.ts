import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { oversizedBody } from '../../src/testing/oversized-body.js';
import {
  envelopeSchema,
  eventDataSchemas,
  FIXED_CONTRACT_EVENTS,
  isFixedContractEvent,
  LESSON_PROGRESS_STATUSES,
  UNCONTRACTED_EVENTS,
  type FixedEventName,
} from '../../src/platform/events/index.js';

const FIXTURES = new URL('../../fixtures/', import.meta.url);
const INVALID = new URL('invalid/', FIXTURES);

type Json = Record<string, unknown>;

function readJson(url: URL): Json {
  return JSON.parse(readFileSync(url, 'utf8')) as Json;
}

const validBodies = new Map(
  FIXED_CONTRACT_EVENTS.map((name) => [name, readJson(new URL(`${name}.json`, FIXTURES))]),
);

/** A fresh, mutable copy of a valid fixture's `data`. */
function fixtureData(name: FixedEventName): Json {
  const body = validBodies.get(name);
  if (!body) throw new Error(`no fixture for ${name}`);
  return structuredClone(body.data) as Json;
}

/** The object holding the last key of a dotted path; throws when the path is not in `root`. */
function locate(root: Json, path: string): { node: Json; key: string } {
  const keys = path.split('.');
  const key = keys.pop() ?? '';
  let node: unknown = root;
  for (const k of keys) node = (node as Json)[k];
  if (typeof node !== 'object' || node === null || !(key in node)) {
    throw new Error(`${path} is not in the fixture`);
  }
  return { node: node as Json, key };
}

function withValue(root: Json, path: string, value: unknown): Json {
  const copy = structuredClone(root);
  const { node, key } = locate(copy, path);
  node[key] = value;
  return copy;
}

function without(root: Json, path: string): Json {
  const copy = structuredClone(root);
  const { node, key } = locate(copy, path);
  delete node[key];
  return copy;
}

function accepts(name: FixedEventName, data: unknown): boolean {
  return eventDataSchemas[name].safeParse(data).success;
}

describe('the event registry', () => {
  it('has one schema per fixed-contract event and no other', () => {
    expect(Object.keys(eventDataSchemas).sort()).toEqual([...FIXED_CONTRACT_EVENTS].sort());
  });

  it('keeps the uncontracted events apart from the fixed-contract ones', () => {
    expect(UNCONTRACTED_EVENTS).toHaveLength(8);
    for (const name of UNCONTRACTED_EVENTS) expect(isFixedContractEvent(name)).toBe(false);
  });

  it('recognises exactly the fixed-contract names', () => {
    for (const name of FIXED_CONTRACT_EVENTS) expect(isFixedContractEvent(name)).toBe(true);
    for (const name of ['', 'constructor', '__proto__', 'toString', 'paymentcompleted']) {
      expect(isFixedContractEvent(name)).toBe(false);
    }
  });

  it('shares one schema between events docs/platform.md#events calls "the same as"', () => {
    expect(eventDataSchemas.UserAcquainted).toBe(eventDataSchemas.UserSignedUp);
    expect(eventDataSchemas.ProductEnrolledViaLms).toBe(eventDataSchemas.ProductEnrolledToFree);
    expect(eventDataSchemas.ProductEnrolledViaPayment).toBe(eventDataSchemas.ProductEnrolledToFree);
  });
});

describe('valid fixtures', () => {
  it.each(FIXED_CONTRACT_EVENTS)('%s is a valid envelope whose data passes its schema', (name) => {
    const body = validBodies.get(name);
    expect(envelopeSchema.safeParse(body).success).toBe(true);
    expect(body?.event).toBe(name);
    const result = eventDataSchemas[name].safeParse(body?.data);
    expect(result.error?.issues).toBeUndefined();
  });

  it('use a distinct idempotency key each', () => {
    const keys = [...validBodies.values()].map((body) => body.idempotencyKey);
    expect(new Set(keys).size).toBe(keys.length);
  });
});

/**
 * The top-level keys of each event's `data` that docs/platform.md#events names, split by whether they are the
 * spine (docs/events.md) or may be absent. `states` is optional in every event; it is listed where the
 * interface names it. ProductEnrolledByInviteLink's `inviteLinkId` has a test of its own: it may
 * be absent when `access.meta.inviteLinkId` names the link.
 */
const CONTRACTS: Record<FixedEventName, { required: string[]; optional: string[] }> = {
  UserSignedUp: { required: ['user'], optional: ['profile', 'states'] },
  UserAcquainted: { required: ['user'], optional: ['profile', 'states'] },
  UserTgConnected: { required: ['user', 'prevTgId'], optional: ['profile'] },
  UserCreatedViaLms: { required: ['user'], optional: ['profile'] },
  CourseProgressChanged: {
    required: ['user', 'course'],
    optional: ['product', 'access', 'states', 'groups', 'status', 'lessonId'],
  },
  CourseCompleted: {
    required: ['user', 'course'],
    optional: ['product', 'access', 'states', 'groups'],
  },
  CourseLessonPracticeCompleted: {
    required: ['user'],
    optional: ['course', 'lesson', 'practice', 'attempt', 'variantId'],
  },
  PaymentCompleted: { required: ['payment'], optional: [] },
  ProductEnrolledToFree: {
    required: ['user'],
    optional: ['profile', 'access', 'states', 'product', 'course'],
  },
  ProductEnrolledViaLms: {
    required: ['user'],
    optional: ['profile', 'access', 'states', 'product', 'course'],
  },
  ProductEnrolledViaPayment: {
    required: ['user'],
    optional: ['profile', 'access', 'states', 'product', 'course'],
  },
  ProductEnrolledByInviteLink: {
    required: ['user'],
    optional: ['profile', 'access', 'states', 'product', 'course'],
  },
  CertificateIssued: { required: ['user', 'course', 'certificate'], optional: ['product'] },
};

describe('event contracts (docs/platform.md#events)', () => {
  describe.each(FIXED_CONTRACT_EVENTS)('%s', (name) => {
    const { required, optional } = CONTRACTS[name];

    it('has a fixture carrying every field of its contract', () => {
      expect(Object.keys(fixtureData(name))).toEqual(
        expect.arrayContaining([...required, ...optional]),
      );
    });

    it('passes with every optional field absent', () => {
      let data = fixtureData(name);
      for (const key of optional) data = without(data, key);
      expect(accepts(name, data)).toBe(true);
    });

    it('passes with every optional field null (docs/platform.md#events marks them optional)', () => {
      const data = fixtureData(name);
      for (const key of optional) data[key] = null;
      expect(accepts(name, data)).toBe(true);
    });

    it.each(required)('fails without %s', (key) => {
      expect(accepts(name, without(fixtureData(name), key))).toBe(false);
    });

    it('passes unknown fields at the root of data and inside the user', () => {
      const data = fixtureData(name);
      data.platformAddedLater = { nested: [1, 'two'] };
      if ('user' in data) (data.user as Json).karma = 42;
      const parsed = eventDataSchemas[name].parse(data) as Json;
      expect(parsed.platformAddedLater).toEqual({ nested: [1, 'two'] });
      if ('user' in data) expect((parsed.user as Json).karma).toBe(42);
    });

    it.each([
      ['absent', undefined],
      ['empty', {}],
      ['holding empty UTM objects', { utmSignupParams: {}, utmEnrollParams: {} }],
      ['holding only one UTM object', { utmEnrollParams: { utm_source: 'vk' } }],
    ])('passes with states %s', (_label, states) => {
      const data = fixtureData(name);
      if (states === undefined) delete data.states;
      else data.states = states;
      expect(accepts(name, data)).toBe(true);
    });

    it.each([
      ['a string', 'utm_source=vk'],
      ['a UTM object that is an array', { utmSignupParams: [] }],
      ['a UTM value that is a number', { utmEnrollParams: { utm_campaign: 2026 } }],
    ])('fails with states %s', (_label, states) => {
      expect(accepts(name, { ...fixtureData(name), states })).toBe(false);
    });
  });

  it.each([
    'CourseProgressChanged',
    'CourseCompleted',
    'CourseLessonPracticeCompleted',
    'CertificateIssued',
  ] as const)('%s takes a user "with profile" whose profile is absent or null', (name) => {
    expect(accepts(name, without(fixtureData(name), 'user.profile'))).toBe(true);
    expect(accepts(name, withValue(fixtureData(name), 'user.profile', null))).toBe(true);
    expect(accepts(name, withValue(fixtureData(name), 'user.profile', 'Анна'))).toBe(false);
  });

  it.each(FIXED_CONTRACT_EVENTS)('%s requires the id of every entity it carries', (name) => {
    const data = fixtureData(name);
    for (const key of ['user', 'course', 'product', 'access', 'certificate', 'payment']) {
      if (!(key in data) || data[key] === null) continue;
      expect(accepts(name, without(data, `${key}.id`))).toBe(false);
      expect(accepts(name, withValue(data, `${key}.id`, `${String(key)}-1`))).toBe(false);
    }
  });

  it.each([
    'UserSignedUp',
    'UserTgConnected',
    'UserCreatedViaLms',
    'ProductEnrolledToFree',
  ] as const)('%s accepts a user without an embedded profile or school', (name) => {
    const data = fixtureData(name);
    delete (data.user as Json).profile;
    delete (data.user as Json).school;
    expect(accepts(name, data)).toBe(true);
  });

  it('UserSignedUp takes a null profile (not filled) and an absent one', () => {
    const data = fixtureData('UserSignedUp');
    expect(accepts('UserSignedUp', withValue(data, 'profile', null))).toBe(true);
    expect(accepts('UserSignedUp', without(data, 'profile'))).toBe(true);
    expect(accepts('UserSignedUp', withValue(data, 'profile', []))).toBe(false);
  });

  it('ProductEnrolledByInviteLink needs its link in inviteLinkId or in access.meta', () => {
    const name = 'ProductEnrolledByInviteLink';
    const data = fixtureData(name);
    expect(accepts(name, without(data, 'inviteLinkId'))).toBe(true);
    expect(accepts(name, without(data, 'access.meta.inviteLinkId'))).toBe(true);
    expect(accepts(name, without(without(data, 'inviteLinkId'), 'access.meta.inviteLinkId'))).toBe(
      false,
    );
    expect(accepts(name, withValue(without(data, 'access'), 'inviteLinkId', null))).toBe(false);
    expect(accepts(name, withValue(without(data, 'inviteLinkId'), 'access.meta', null))).toBe(
      false,
    );
    expect(accepts(name, withValue(data, 'inviteLinkId', true))).toBe(false);
  });

  it('CertificateIssued requires the certificate with its link', () => {
    const data = fixtureData('CertificateIssued');
    expect(accepts('CertificateIssued', without(data, 'certificate.link'))).toBe(false);
    expect(accepts('CertificateIssued', withValue(data, 'certificate.link', null))).toBe(false);
    expect(accepts('CertificateIssued', without(data, 'certificate.uuid'))).toBe(true);
  });

  it('UserTgConnected takes prevTgId as a number or null, nothing else', () => {
    const data = fixtureData('UserTgConnected');
    expect(accepts('UserTgConnected', withValue(data, 'prevTgId', 583920174))).toBe(true);
    expect(accepts('UserTgConnected', withValue(data, 'prevTgId', null))).toBe(true);
    expect(accepts('UserTgConnected', withValue(data, 'prevTgId', 'abc'))).toBe(false);
    expect(accepts('UserTgConnected', withValue(data, 'user.tgId', '583920174'))).toBe(false);
  });

  it.each(LESSON_PROGRESS_STATUSES)('CourseProgressChanged takes status %s', (status) => {
    const data = withValue(fixtureData('CourseProgressChanged'), 'status', status);
    expect(accepts('CourseProgressChanged', data)).toBe(true);
  });

  it('CourseProgressChanged takes a null or absent status', () => {
    const data = fixtureData('CourseProgressChanged');
    expect(accepts('CourseProgressChanged', withValue(data, 'status', null))).toBe(true);
    expect(accepts('CourseProgressChanged', without(data, 'status'))).toBe(true);
  });

  it.each(['Finished', 'completed', '', 3])(
    'CourseProgressChanged rejects status %j: the one closed set',
    (status) => {
      const data = withValue(fixtureData('CourseProgressChanged'), 'status', status);
      expect(accepts('CourseProgressChanged', data)).toBe(false);
    },
  );

  it('CourseLessonPracticeCompleted checks the attempt, the lesson and the practice', () => {
    const name = 'CourseLessonPracticeCompleted';
    const data = fixtureData(name);
    expect(accepts(name, withValue(data, 'attempt.score', null))).toBe(true);
    expect(accepts(name, withValue(data, 'attempt.score', '85'))).toBe(false);
    expect(accepts(name, without(data, 'attempt.score'))).toBe(true);
    expect(accepts(name, without(data, 'attempt.status'))).toBe(true);
    expect(accepts(name, withValue(data, 'attempt.status', 'SomethingNew'))).toBe(true);
    expect(accepts(name, withValue(data, 'attempt.status', 7))).toBe(false);
    expect(accepts(name, without(data, 'attempt.id'))).toBe(false);
    expect(accepts(name, without(data, 'lesson.id'))).toBe(false);
    expect(accepts(name, withValue(data, 'lesson', 'Урок 12'))).toBe(false);
    expect(accepts(name, withValue(data, 'practice', [402977]))).toBe(false);
  });
});

describe('ids whose type the platform does not state', () => {
  const cases: [FixedEventName, string][] = [
    ['CourseProgressChanged', 'lessonId'],
    ['CourseLessonPracticeCompleted', 'variantId'],
    ['ProductEnrolledByInviteLink', 'inviteLinkId'],
    ['ProductEnrolledByInviteLink', 'access.meta.inviteLinkId'],
  ];

  describe.each(cases)('%s %s', (name, path) => {
    it.each([884213, 0, '884213', 'variant-b'])('accepts %j', (id) => {
      expect(accepts(name, withValue(fixtureData(name), path, id))).toBe(true);
    });

    it.each([1.5, true, { id: 1 }])('rejects %j', (id) => {
      expect(accepts(name, withValue(fixtureData(name), path, id))).toBe(false);
    });
  });
});

describe('the payment tree (docs/platform.md#entities)', () => {
  const payment = (): Json => fixtureData('PaymentCompleted');
  const accept = (data: Json): boolean => accepts('PaymentCompleted', data);

  /** The spine of PaymentCompleted (docs/events.md), with the ids of the entities in the fixture. */
  const SPINE = [
    'payment',
    'payment.id',
    'payment.invoice',
    'payment.invoice.id',
    'payment.invoice.totalAmount',
    'payment.invoice.currency',
    'payment.invoice.user',
    'payment.invoice.user.id',
    'payment.invoice.user.profile.id',
    'payment.invoice.user.school.id',
    'payment.invoice.products.0.id',
    'payment.invoice.products.0.price.id',
    'payment.invoice.products.0.product.id',
    'payment.invoice.products.1.product.course.id',
    'payment.acquiring.id',
    'payment.acquiring.provider.id',
  ];

  /** Marked optional by the platform's entity reference or `(null)` in its documented example (docs/platform.md#entities): absent or null. */
  const NULLABLE = [
    'payment.archivedAt',
    'payment.status',
    'payment.checkoutPaymentId',
    'payment.checkoutUrl',
    'payment.paidAt',
    'payment.expireAt',
    'payment.isCompleted',
    'payment.isCanceled',
    'payment.meta',
    'payment.webhookLogs',
    'payment.chargeLogs',
    'payment.statusHistoryLogs',
    'payment.acquiring',
    'payment.invoice.archivedAt',
    'payment.invoice.humanId',
    'payment.invoice.status',
    'payment.invoice.expireAt',
    'payment.invoice.isActive',
    'payment.invoice.products',
    'payment.invoice.meta',
    'payment.invoice.meta.utmParams',
    'payment.invoice.user.archivedAt',
    'payment.invoice.user.alive',
    'payment.invoice.user.email',
    'payment.invoice.user.phone',
    'payment.invoice.user.tgId',
    'payment.invoice.user.vkId',
    'payment.invoice.user.appleId',
    'payment.invoice.user.extId',
    'payment.invoice.user.schoolId',
    'payment.invoice.user.language',
    'payment.invoice.user.timezone',
    'payment.invoice.user.lastOnlineAt',
    'payment.invoice.user.profile',
    'payment.invoice.user.school',
    'payment.invoice.user.profile.userId',
    'payment.invoice.user.profile.firstName',
    'payment.invoice.user.profile.fullName',
    'payment.invoice.user.profile.bdate',
    'payment.invoice.user.profile.country',
    'payment.invoice.user.profile.city',
    'payment.invoice.user.profile.status',
    'payment.invoice.user.profile.title',
    'payment.invoice.user.profile.emojiTitle',
    'payment.invoice.user.profile.titleState.locationTitle',
    'payment.invoice.user.profile.titleState.achievementEmojiTitle',
    'payment.invoice.user.school.customDomain',
    'payment.invoice.user.school.description',
    'payment.invoice.user.school.iconUrl',
    'payment.invoice.user.school.fqdn',
    'payment.invoice.user.school.isPublic',
    'payment.invoice.products.0.discount',
    'payment.invoice.products.0.price',
    'payment.invoice.products.0.product',
    'payment.invoice.products.0.price.title',
    'payment.invoice.products.0.price.description',
    'payment.invoice.products.0.price.previousAmount',
    'payment.invoice.products.0.price.accessDays',
    'payment.invoice.products.0.price.activeFrom',
    'payment.invoice.products.0.price.activeTo',
    'payment.invoice.products.0.price.installmentConfig',
    'payment.invoice.products.0.price.subscriptionConfig',
    'payment.invoice.products.0.price.isSubscription',
    'payment.invoice.products.0.product.status',
    'payment.invoice.products.0.product.publishedAt',
    'payment.invoice.products.0.product.saleStartAt',
    'payment.invoice.products.0.product.saleFinishAt',
    'payment.invoice.products.0.product.isFree',
    'payment.invoice.products.0.product.course',
    'payment.invoice.products.0.product.course.alias',
    'payment.invoice.products.0.product.course.image',
    'payment.invoice.products.0.product.course.isBundle',
    'payment.acquiring.active',
    'payment.acquiring.name',
    'payment.acquiring.description',
    'payment.acquiring.hasProviderCommission',
    'payment.acquiring.provider',
    'payment.acquiring.provider.type',
    'payment.acquiring.provider.active',
  ];

  /** Neither optional in the entity reference nor `(null)` in the example (docs/platform.md#entities): absent, not null. */
  const OPTIONAL_NOT_NULL = [
    'payment.createdAt',
    'payment.uuid',
    'payment.type',
    'payment.released',
    'payment.invoice.uuid',
    'payment.invoice.type',
    'payment.invoice.discountAmount',
    'payment.invoice.user.uuid',
    'payment.invoice.user.status',
    'payment.invoice.user.banned',
    'payment.invoice.user.domain',
    'payment.invoice.user.isSleepingNow',
    'payment.invoice.user.profile.official',
    'payment.invoice.user.profile.avatar',
    'payment.invoice.user.profile.avatar.small',
    'payment.invoice.user.profile.titleState',
    'payment.invoice.user.school.name',
    'payment.invoice.user.school.segment',
    'payment.invoice.user.school.active',
    'payment.invoice.products.0.originalPrice',
    'payment.invoice.products.0.totalPrice',
    'payment.invoice.products.0.price.mode',
    'payment.invoice.products.0.price.amount',
    'payment.invoice.products.0.price.meta',
    'payment.invoice.products.0.product.sellerId',
    'payment.invoice.products.0.product.type',
    'payment.invoice.products.0.product.currency',
    'payment.invoice.products.0.product.approves',
    'payment.invoice.products.0.product.course.tags',
    'payment.invoice.products.0.product.course.name',
    'payment.invoice.products.1.product.course.settings',
    'payment.acquiring.uuid',
  ];

  /** Fields of unstated type: any value goes, null included, and they may be absent. */
  const ANY_VALUE = [
    'payment.invoice.user.starsBalance',
    'payment.invoice.user.currentTime',
    'payment.invoice.products.0.product.course.promoVideo',
    'payment.invoice.products.0.product.course.image.main',
  ];

  it.each(SPINE)('rejects the absence of %s, part of the spine', (path) => {
    expect(accept(without(payment(), path))).toBe(false);
  });

  it.each(SPINE)('rejects null at %s, part of the spine', (path) => {
    expect(accept(withValue(payment(), path, null))).toBe(false);
  });

  it.each(NULLABLE)('accepts null at %s', (path) => {
    expect(accept(withValue(payment(), path, null))).toBe(true);
  });

  it.each([...NULLABLE, ...OPTIONAL_NOT_NULL, ...ANY_VALUE])(
    'accepts the absence of %s',
    (path) => {
      expect(accept(without(payment(), path))).toBe(true);
    },
  );

  it.each(OPTIONAL_NOT_NULL)('rejects null at %s', (path) => {
    expect(accept(withValue(payment(), path, null))).toBe(false);
  });

  it.each(ANY_VALUE)('accepts any value at %s', (path) => {
    expect(accept(withValue(payment(), path, { any: 'shape' }))).toBe(true);
    expect(accept(withValue(payment(), path, null))).toBe(true);
  });

  it.each([
    ['payment.invoice.currency', 'Kzt'],
    ['payment.invoice.currency', 'Btc'],
    ['payment.type', 'SomeNewPaymentType'],
    ['payment.status', 'Refunding'],
    ['payment.invoice.user.language', 'Kk'],
    ['payment.invoice.user.school.segment', 'Government'],
    ['payment.invoice.user.profile.sex', 'Women'],
    ['payment.invoice.products.0.product.type', 'Digital'],
  ])('accepts an enum-like %s of any string (%j)', (path, value) => {
    expect(accept(withValue(payment(), path, value))).toBe(true);
  });

  it.each([
    ['payment.invoice.totalAmount', '17390.00'],
    ['payment.invoice.discountAmount', '5000'],
    ['payment.invoice.humanId', 10427.5],
    ['payment.id', '918244'],
    ['payment.isCompleted', 'true'],
    ['payment.webhookLogs', {}],
    ['payment.invoice.products', { 0: {} }],
    ['payment.invoice.products.0.price.amount', '14900'],
    ['payment.invoice.products.0.product.course.tags', ['английский', 7]],
    ['payment.invoice.user.schoolId', 4821.5],
    ['payment.invoice.user.profile.avatar.small', 42],
    ['payment.invoice.meta.utmParams', 'utm_source=vk'],
    ['payment.invoice.currency', 643],
    ['payment.invoice.user.email', 42],
    ['payment.invoice.user.language', { code: 'ru' }],
    ['payment.status', true],
    ['payment.invoice.user.profile.sex', 1],
    ['payment.invoice.products.0.discount', { code: 'SALE' }],
    ['payment.acquiring', 'yookassa'],
  ])('rejects a wrong type at %s', (path, value) => {
    expect(accept(withValue(payment(), path, value))).toBe(false);
  });

  it('takes invoice UTM tags that are absent or empty (docs/platform.md#utm-tags)', () => {
    expect(accept(without(payment(), 'payment.invoice.meta.utmParams'))).toBe(true);
    expect(accept(withValue(payment(), 'payment.invoice.meta.utmParams', {}))).toBe(true);
  });

  it('takes an invoice with no line items', () => {
    expect(accept(withValue(payment(), 'payment.invoice.products', []))).toBe(true);
  });

  it('passes unknown fields through at every level of the tree', () => {
    const data = payment();
    const parents = [
      'payment',
      'payment.invoice',
      'payment.invoice.meta.utmParams',
      'payment.invoice.user.profile.titleState',
      'payment.invoice.user.school',
      'payment.invoice.products.0.product.course.image',
      'payment.invoice.products.1.price',
      'payment.acquiring.provider',
    ];
    for (const path of parents) {
      const { node, key } = locate(data, path);
      (node[key] as Json).addedLater = `extra in ${path}`;
    }
    const parsed = eventDataSchemas.PaymentCompleted.parse(data);
    expect(parsed).toEqual(data);
    expect(parsed.payment.acquiring?.provider?.addedLater).toBe(
      'extra in payment.acquiring.provider',
    );
  });
});

describe('invalid fixtures', () => {
  const manifestSchema = z.array(
    z.strictObject({
      file: z.string(),
      generated: z.literal('oversized').optional(),
      description: z.string().min(1),
      status: z.union([z.literal(400), z.literal(413), z.literal(422)]),
      outcome: z.enum(['malformed', 'too_large', 'invalid_payload']),
    }),
  );
  const manifest = manifestSchema.parse(readJson(new URL('manifest.json', INVALID)));
  const generated = new Set(manifest.filter((entry) => entry.generated).map((entry) => entry.file));
  const text = (file: string): string =>
    generated.has(file) ? oversizedBody() : readFileSync(new URL(file, INVALID), 'utf8');
  const byOutcome = (outcome: string) =>
    manifest.filter((entry) => entry.outcome === outcome).map((entry) => entry.file);

  it('lists every file of fixtures/invalid exactly once, and a generated body under no file', () => {
    const files = readdirSync(INVALID).filter((file) => file !== 'manifest.json');
    const stored = manifest.filter((entry) => entry.generated === undefined);
    expect(stored.map((entry) => entry.file).sort()).toEqual(files.sort());
    for (const entry of manifest.filter((one) => one.generated !== undefined)) {
      expect(files).not.toContain(entry.file);
    }
  });

  it('pairs each outcome with its status', () => {
    const statuses = { malformed: 400, too_large: 413, invalid_payload: 422 };
    for (const entry of manifest) expect(entry.status).toBe(statuses[entry.outcome]);
  });

  it.each(byOutcome('malformed'))('%s is not JSON or not a valid envelope', (file) => {
    let body: unknown;
    try {
      body = JSON.parse(text(file));
    } catch {
      return;
    }
    expect(envelopeSchema.safeParse(body).success).toBe(false);
  });

  it.each(byOutcome('too_large'))('%s is a valid envelope just over 1 MiB', (file) => {
    const raw = Buffer.from(text(file));
    expect(raw.byteLength).toBe(1_048_577);
    const envelope = envelopeSchema.parse(JSON.parse(raw.toString('utf8')));
    // Only its size is wrong: the payload itself is valid.
    expect(isFixedContractEvent(envelope.event)).toBe(true);
    if (isFixedContractEvent(envelope.event)) {
      expect(accepts(envelope.event, envelope.data)).toBe(true);
    }
  });

  it.each(byOutcome('invalid_payload'))(
    '%s is a valid envelope whose data fails its schema',
    (file) => {
      const envelope = envelopeSchema.parse(JSON.parse(text(file)));
      expect(isFixedContractEvent(envelope.event)).toBe(true);
      if (isFixedContractEvent(envelope.event)) {
        expect(accepts(envelope.event, envelope.data)).toBe(false);
      }
    },
  );

  it('use idempotency keys that no other fixture uses', () => {
    const keys = [...validBodies.values()].map((body) => body.idempotencyKey);
    for (const entry of manifest) {
      if (entry.outcome === 'malformed') continue;
      keys.push(envelopeSchema.parse(JSON.parse(text(entry.file))).idempotencyKey);
    }
    expect(new Set(keys).size).toBe(keys.length);
  });
});
