import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  envelopeSchema,
  eventDataSchemas,
  FIXED_CONTRACT_EVENTS,
  isFixedContractEvent,
  LESSON_PROGRESS_STATUSES,
  UNCONTRACTED_EVENTS,
  type FixedEventName,
} from '../../src/events/index.js';

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

  it('shares one schema between events the interface calls "the same as"', () => {
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
 * The top-level keys of each event's `data` that interface 6 names, split by whether they may be
 * absent. `states` is optional in every event (DESIGN 3); it is listed where the interface names it.
 */
const CONTRACTS: Record<FixedEventName, { required: string[]; optional: string[] }> = {
  UserSignedUp: { required: ['user', 'profile'], optional: ['states'] },
  UserAcquainted: { required: ['user', 'profile'], optional: ['states'] },
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
    required: ['user', 'inviteLinkId'],
    optional: ['profile', 'access', 'states', 'product', 'course'],
  },
  CertificateIssued: { required: ['user', 'course', 'certificate'], optional: ['product'] },
};

describe('event contracts (interface 6)', () => {
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
  ] as const)('%s requires the user with a profile', (name) => {
    expect(accepts(name, without(fixtureData(name), 'user.profile'))).toBe(false);
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

  it('UserSignedUp takes a null profile (not filled) but not an absent one', () => {
    const data = fixtureData('UserSignedUp');
    expect(accepts('UserSignedUp', withValue(data, 'profile', null))).toBe(true);
    expect(accepts('UserSignedUp', without(data, 'profile'))).toBe(false);
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

  it.each(['Finished', 'completed', '', null])(
    'CourseProgressChanged rejects status %j',
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
    expect(accepts(name, without(data, 'attempt.score'))).toBe(false);
    expect(accepts(name, without(data, 'attempt.status'))).toBe(false);
    expect(accepts(name, withValue(data, 'lesson', 'Урок 12'))).toBe(false);
    expect(accepts(name, withValue(data, 'practice', [402977]))).toBe(false);
  });
});

describe('ids whose type the interface does not state', () => {
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

    it.each([1.5, true, null, { id: 1 }])('rejects %j', (id) => {
      expect(accepts(name, withValue(fixtureData(name), path, id))).toBe(false);
    });
  });
});

describe('the payment tree (interface 2.5)', () => {
  const payment = (): Json => fixtureData('PaymentCompleted');
  const accept = (data: Json): boolean => accepts('PaymentCompleted', data);

  const NULLABLE = [
    'payment.archivedAt',
    'payment.checkoutUrl',
    'payment.expireAt',
    'payment.invoice.archivedAt',
    'payment.invoice.expireAt',
    'payment.invoice.user.archivedAt',
    'payment.invoice.user.phone',
    'payment.invoice.user.tgId',
    'payment.invoice.user.vkId',
    'payment.invoice.user.appleId',
    'payment.invoice.user.extId',
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
    'payment.invoice.products.0.discount',
    'payment.invoice.products.0.price.description',
    'payment.invoice.products.0.price.previousAmount',
    'payment.invoice.products.0.price.accessDays',
    'payment.invoice.products.0.price.activeFrom',
    'payment.invoice.products.0.price.activeTo',
    'payment.invoice.products.0.price.installmentConfig',
    'payment.invoice.products.0.price.subscriptionConfig',
    'payment.invoice.products.0.product.saleStartAt',
    'payment.invoice.products.0.product.saleFinishAt',
    'payment.invoice.products.0.product.course.alias',
    'payment.invoice.products.0.product.course.promoVideo',
    'payment.acquiring.description',
  ];

  const REQUIRED = [
    'payment.id',
    'payment.uuid',
    'payment.status',
    'payment.paidAt',
    'payment.released',
    'payment.isCompleted',
    'payment.isCanceled',
    'payment.meta',
    'payment.webhookLogs',
    'payment.statusHistoryLogs',
    'payment.invoice',
    'payment.acquiring',
    'payment.invoice.humanId',
    'payment.invoice.totalAmount',
    'payment.invoice.discountAmount',
    'payment.invoice.currency',
    'payment.invoice.isActive',
    'payment.invoice.user',
    'payment.invoice.products',
    'payment.invoice.meta',
    'payment.invoice.user.id',
    'payment.invoice.user.email',
    'payment.invoice.user.banned',
    'payment.invoice.user.isSleepingNow',
    'payment.invoice.user.profile',
    'payment.invoice.user.school',
    'payment.invoice.user.profile.fullName',
    'payment.invoice.user.profile.official',
    'payment.invoice.user.profile.avatar',
    'payment.invoice.user.profile.avatar.small',
    'payment.invoice.user.profile.titleState',
    'payment.invoice.user.school.isPublic',
    'payment.invoice.products.0.originalPrice',
    'payment.invoice.products.0.totalPrice',
    'payment.invoice.products.0.price',
    'payment.invoice.products.0.price.amount',
    'payment.invoice.products.0.price.isSubscription',
    'payment.invoice.products.0.product',
    'payment.invoice.products.0.product.sellerId',
    'payment.invoice.products.0.product.course',
    'payment.invoice.products.0.product.course.tags',
    'payment.invoice.products.0.product.course.image',
    'payment.invoice.products.1.product.course.settings',
    'payment.acquiring.hasProviderCommission',
    'payment.acquiring.provider',
    'payment.acquiring.provider.active',
  ];

  /** Fields of unstated type: any value goes, including null, but the key must be present. */
  const PRESENT_ANY_VALUE = [
    'payment.invoice.user.starsBalance',
    'payment.invoice.user.currentTime',
    'payment.invoice.user.profile.sex',
    'payment.invoice.user.profile.role',
    'payment.invoice.products.0.discount',
    'payment.invoice.products.0.product.course.image.main',
  ];

  it.each(NULLABLE)('accepts null at %s', (path) => {
    expect(accept(withValue(payment(), path, null))).toBe(true);
  });

  it.each(NULLABLE)('rejects the absence of %s', (path) => {
    expect(accept(without(payment(), path))).toBe(false);
  });

  it.each(REQUIRED)('rejects null at %s', (path) => {
    expect(accept(withValue(payment(), path, null))).toBe(false);
  });

  it.each(REQUIRED)('rejects the absence of %s', (path) => {
    expect(accept(without(payment(), path))).toBe(false);
  });

  it.each(PRESENT_ANY_VALUE)('accepts any value but not the absence of %s', (path) => {
    expect(accept(withValue(payment(), path, { any: 'shape' }))).toBe(true);
    expect(accept(without(payment(), path))).toBe(false);
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
  ])('rejects a wrong type at %s', (path, value) => {
    expect(accept(withValue(payment(), path, value))).toBe(false);
  });

  it('takes invoice UTM tags that are absent or empty (interface 2.4)', () => {
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
    expect(parsed.payment.acquiring.provider.addedLater).toBe(
      'extra in payment.acquiring.provider',
    );
  });
});

describe('invalid fixtures', () => {
  const manifestSchema = z.array(
    z.strictObject({
      file: z.string(),
      description: z.string().min(1),
      status: z.union([z.literal(400), z.literal(413), z.literal(422)]),
      outcome: z.enum(['malformed', 'too_large', 'invalid_payload']),
    }),
  );
  const manifest = manifestSchema.parse(readJson(new URL('manifest.json', INVALID)));
  const text = (file: string): string => readFileSync(new URL(file, INVALID), 'utf8');
  const byOutcome = (outcome: string) =>
    manifest.filter((entry) => entry.outcome === outcome).map((entry) => entry.file);

  it('lists every file of fixtures/invalid exactly once', () => {
    const files = readdirSync(INVALID).filter((file) => file !== 'manifest.json');
    expect(manifest.map((entry) => entry.file).sort()).toEqual(files.sort());
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
    const raw = readFileSync(new URL(file, INVALID));
    expect(raw.byteLength).toBeGreaterThan(1_048_576);
    expect(raw.byteLength).toBeLessThan(1_048_576 + 1024);
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
