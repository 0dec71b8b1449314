import { createHmac } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  createReceiver,
  eventDataSchemas,
  FIXED_CONTRACT_EVENTS,
  verifySignature,
  type KnownCurrency,
} from '../../src/index.js';
import {
  createDelivery,
  createVirtualClock,
  fixtures,
  fixtureVariants,
  signBody,
  sparseFixtures,
} from '../../src/testing/index.js';
import { oversizedBody } from '../../src/testing/oversized-body.js';

const SECRET = 'c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00';

function fixtureFile(name: string): { event: string; data: unknown } {
  return JSON.parse(readFileSync(new URL(`../../fixtures/${name}.json`, import.meta.url), 'utf8'));
}

describe('fixtures', () => {
  it('has one factory per fixed-contract event', () => {
    expect(Object.keys(fixtures).sort()).toEqual([...FIXED_CONTRACT_EVENTS].sort());
  });

  it.each(FIXED_CONTRACT_EVENTS)('%s: the data of fixtures/%s.json, passing its schema', (name) => {
    const data = fixtures[name]();
    expect(data).toEqual(fixtureFile(name).data);
    expect(eventDataSchemas[name].safeParse(data).error).toBeUndefined();
  });

  it('hands out a fresh copy every time', () => {
    const first = fixtures.PaymentCompleted();
    first.payment.invoice.totalAmount = -1;
    first.payment.invoice.products!.length = 0;
    const second = fixtures.PaymentCompleted();
    expect(second.payment.invoice.totalAmount).not.toBe(-1);
    expect(second.payment.invoice.products?.length).toBeGreaterThan(0);
  });

  it('deep-merges overrides, keeping every field they do not name', () => {
    const base = fixtures.PaymentCompleted();
    const data = fixtures.PaymentCompleted({
      payment: {
        invoice: { totalAmount: 4900, currency: 'EUR', user: { email: 'x@example.com' } },
      },
    });
    expect(data.payment.invoice.totalAmount).toBe(4900);
    expect(data.payment.invoice.currency).toBe('EUR');
    expect(data.payment.invoice.user.email).toBe('x@example.com');
    expect(data.payment.invoice.user.profile).toEqual(base.payment.invoice.user.profile);
    expect(data.payment.acquiring).toEqual(base.payment.acquiring);
    expect(eventDataSchemas.PaymentCompleted.safeParse(data).success).toBe(true);
  });

  it('replaces arrays whole and sets null where null is given', () => {
    const data = fixtures.CourseProgressChanged({ groups: [{ id: 7 }] });
    expect(data.groups).toEqual([{ id: 7 }]);
    const signedUp = fixtures.UserSignedUp({ profile: null, user: { tgId: null } });
    expect(signedUp.profile).toBeNull();
    expect(signedUp.user.tgId).toBeNull();
    expect(eventDataSchemas.UserSignedUp.safeParse(signedUp).success).toBe(true);
  });

  it('lets an override break the schema on purpose', () => {
    const data = fixtures.PaymentCompleted({
      payment: { invoice: { totalAmount: '4900' as unknown as number } },
    });
    expect(eventDataSchemas.PaymentCompleted.safeParse(data).success).toBe(false);
  });

  it('keeps an override key __proto__ a plain key', () => {
    const overrides = JSON.parse('{"user":{"__proto__":{"polluted":true}}}') as Record<
      string,
      unknown
    >;
    const data = fixtures.UserSignedUp(overrides);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(data.user)).toBe(Object.prototype);
  });

  it('accepts overrides as the schemas do: null where allowed, any string in an open union', () => {
    const data = fixtures.PaymentCompleted({
      payment: {
        acquiring: null,
        invoice: { meta: null, currency: 'Kzt', user: { email: null, profile: null } },
      },
    });
    expect(eventDataSchemas.PaymentCompleted.safeParse(data).success).toBe(true);
    expect([data.payment.invoice.user.email, data.payment.acquiring]).toEqual([null, null]);
    const later = fixtures.PaymentCompleted({ payment: { invoice: { currency: 'Btc' } } });
    expect(eventDataSchemas.PaymentCompleted.safeParse(later).success).toBe(true);
  });

  it('overrides a field the fixture carries and the types do not name, which handlers receive', async () => {
    const data = fixtures.ProductEnrolledToFree({ access: { id: 7, userId: 42 } });
    expect(data.access).toMatchObject({ id: 7, userId: 42, productId: 51877 });
    const seen: unknown[] = [];
    const receiver = createReceiver({ secret: SECRET }).on('ProductEnrolledToFree', (event) => {
      seen.push(event.data.access);
    });
    const delivery = createDelivery('ProductEnrolledToFree', data, { secret: SECRET });
    expect((await receiver.handle({ method: 'POST', ...delivery })).outcome).toBe('processed');
    expect(seen).toEqual([data.access]);
  });
});

describe('sparseFixtures', () => {
  it.each(FIXED_CONTRACT_EVENTS)('%s: the spine only, from fixtures/sparse/%s.json', (name) => {
    const data = sparseFixtures[name]();
    expect(data).toEqual(fixtureFile(`sparse/${name}`).data);
    expect(eventDataSchemas[name].safeParse(data).error).toBeUndefined();
    // Far smaller than the full fixture: a handful of fields.
    expect(JSON.stringify(data).length).toBeLessThan(JSON.stringify(fixtures[name]()).length / 4);
  });

  it('carries for PaymentCompleted exactly what the spine names', () => {
    const { payment } = sparseFixtures.PaymentCompleted();
    expect(Object.keys(payment).sort()).toEqual(['id', 'invoice']);
    expect(Object.keys(payment.invoice).sort()).toEqual(['currency', 'id', 'totalAmount', 'user']);
    expect(Object.keys(payment.invoice.user)).toEqual(['id']);
  });

  it('merges overrides as the full factories do', () => {
    const data = sparseFixtures.CertificateIssued({ certificate: { link: 'https://x.example/c' } });
    expect(data.certificate).toEqual({ id: expect.any(Number), link: 'https://x.example/c' });
    expect(data.user).toEqual({ id: expect.any(Number) });
  });
});

describe('fixtureVariants', () => {
  const variants = Object.values(fixtureVariants);

  it('has one factory per file of fixtures/variants', () => {
    const files = readdirSync(new URL('../../fixtures/variants/', import.meta.url));
    expect(variants.map((variant) => variant.file).sort()).toEqual(files.sort());
  });

  it.each(variants.map((variant) => [variant.file, variant] as const))(
    '%s: its JSON file, passing its schema',
    (file, variant) => {
      const json = fixtureFile(`variants/${file.replace(/\.json$/, '')}`);
      expect(json.event).toBe(variant.event);
      expect(variant()).toEqual(json.data);
      expect(eventDataSchemas[variant.event].safeParse(variant()).error).toBeUndefined();
      expect(variant.description.length).toBeGreaterThan(10);
    },
  );

  it('leaves out what each one says it leaves out', () => {
    const payment = fixtureVariants.paymentWithoutInvoiceMeta().payment;
    expect(payment.invoice).not.toHaveProperty('meta');
    const bare = fixtureVariants.paymentWithoutAcquiringOrLogs().payment;
    for (const key of ['acquiring', 'webhookLogs', 'chargeLogs', 'statusHistoryLogs']) {
      expect(bare).not.toHaveProperty(key);
    }
    for (const item of fixtureVariants.paymentForDigitalProduct().payment.invoice.products ?? []) {
      expect(item.product).not.toHaveProperty('course');
    }
    const phone = fixtureVariants.phoneOnlyStudent().user;
    expect(phone).not.toHaveProperty('email');
    expect(phone.phone).toMatch(/^\+\d+$/);
    for (const user of [
      fixtureVariants.telegramOnlyUser().user,
      fixtureVariants.telegramOnlySignUp().user,
    ]) {
      expect(user.email ?? null).toBeNull();
      expect(user.phone ?? null).toBeNull();
      expect(user.tgId).toEqual(expect.any(Number));
    }
    const digital = fixtureVariants.digitalProductEnrollment();
    expect(digital.product?.type).toBe('Digital');
    expect(digital).not.toHaveProperty('course');
    expect(digital.product).not.toHaveProperty('course');
    for (const variant of [
      fixtureVariants.courseCompletedWithoutArchivedAt,
      fixtureVariants.paymentWithoutArchivedAt,
    ]) {
      expect(JSON.stringify(variant())).not.toContain('archivedAt');
    }
    const invite = fixtureVariants.inviteLinkInAccessMeta();
    expect(invite).not.toHaveProperty('inviteLinkId');
    expect(invite.access?.meta?.inviteLinkId).toBeDefined();
  });

  it.each(variants.map((variant) => [variant.file, variant] as const))(
    '%s is processed by a receiver',
    async (_file, variant) => {
      const receiver = createReceiver({ secret: SECRET }).onAny(() => {});
      const delivery = createDelivery(variant.event, variant(), { secret: SECRET });
      const result = await receiver.handle({ method: 'POST', ...delivery });
      expect([result.status, result.outcome]).toEqual([200, 'processed']);
    },
  );
});

describe('signBody', () => {
  it('is the lowercase hex HMAC-SHA256 of the body, keyed by the secret as it is', () => {
    const body = '{"event":"UserSignedUp"}';
    const expected = createHmac('sha256', SECRET).update(body).digest('hex');
    expect(signBody(body, SECRET)).toBe(expected);
    expect(signBody(new TextEncoder().encode(body), SECRET)).toBe(expected);
    // Not hex-decoded, though it looks like hex.
    expect(signBody(body, SECRET)).not.toBe(
      createHmac('sha256', Buffer.from(SECRET, 'hex')).update(body).digest('hex'),
    );
    expect(signBody(body, SECRET)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses an empty, blank or non-string secret with a ConfigError, as the receiver does', () => {
    expect(() => signBody('{}', '')).toThrow(new ConfigError('a webhook secret is empty'));
    expect(() => signBody('{}', ' \n')).toThrow(
      new ConfigError('a webhook secret is whitespace only'),
    );
    expect(() => signBody('{}', 42 as unknown as string)).toThrow(
      new ConfigError('a webhook secret must be a string, not number'),
    );
  });
});

describe('createDelivery', () => {
  it('builds the envelope of the fixture and signs it so the core verifies it', async () => {
    const { body, headers } = createDelivery('PaymentCompleted', undefined, { secret: SECRET });
    expect(headers['content-type']).toBe('application/json');
    expect(await verifySignature(body, headers.signature, SECRET)).toBe(true);
    expect(await verifySignature(body, headers.signature, `${SECRET.slice(1)}x`)).toBe(false);
    const envelope = JSON.parse(body) as Record<string, unknown>;
    expect(Object.keys(envelope)).toEqual(['event', 'timestamp', 'idempotencyKey', 'data']);
    expect(envelope.event).toBe('PaymentCompleted');
    expect(envelope.data).toEqual(fixtures.PaymentCompleted());
    expect(envelope.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(Math.abs(Date.parse(envelope.timestamp as string) - Date.now())).toBeLessThan(5_000);
  });

  it('uses the data, key and timestamp it is given', () => {
    const data = fixtures.UserTgConnected({ prevTgId: 42 });
    const { body } = createDelivery('UserTgConnected', data, {
      secret: SECRET,
      idempotencyKey: 'key-1',
      timestamp: new Date('2025-05-01T12:00:00Z'),
    });
    expect(JSON.parse(body)).toEqual({
      event: 'UserTgConnected',
      timestamp: '2025-05-01T12:00:00.000Z',
      idempotencyKey: 'key-1',
      data,
    });
  });

  it('needs data for an event without a fixture', () => {
    const { body } = createDelivery('UserSignedIn', { user: { id: 1 } }, { secret: SECRET });
    expect(JSON.parse(body)).toMatchObject({ event: 'UserSignedIn', data: { user: { id: 1 } } });
    // @ts-expect-error -- UserSignedIn has no fixture, so its data is required
    expect(() => createDelivery('UserSignedIn', undefined, { secret: SECRET })).toThrow(
      /no fixture/,
    );
  });

  it('is processed by a receiver as it is', async () => {
    const receiver = createReceiver({ secret: SECRET });
    const seen: number[] = [];
    receiver.on('CertificateIssued', (event) => void seen.push(event.data.certificate.id));
    const delivery = createDelivery('CertificateIssued', undefined, { secret: SECRET });
    const result = await receiver.handle({ method: 'POST', ...delivery });
    expect(result.outcome).toBe('processed');
    expect(seen).toEqual([fixtures.CertificateIssued().certificate.id]);
  });
});

describe('createDelivery without options', () => {
  it('signs with SCHOOL_WEBHOOK_SECRET and sends the fixture', async () => {
    const previous = process.env.SCHOOL_WEBHOOK_SECRET;
    process.env.SCHOOL_WEBHOOK_SECRET = 'from-the-environment';
    try {
      const delivery = createDelivery('PaymentCompleted');
      expect(
        await verifySignature(delivery.body, delivery.headers.signature, 'from-the-environment'),
      ).toBe(true);
      expect((JSON.parse(delivery.body) as { event: string }).event).toBe('PaymentCompleted');
    } finally {
      if (previous === undefined) delete process.env.SCHOOL_WEBHOOK_SECRET;
      else process.env.SCHOOL_WEBHOOK_SECRET = previous;
    }
  });

  it('throws a ConfigError when there is no secret at all', () => {
    const previous = process.env.SCHOOL_WEBHOOK_SECRET;
    delete process.env.SCHOOL_WEBHOOK_SECRET;
    try {
      expect(() => createDelivery('UserSignedUp')).toThrow(ConfigError);
      expect(() => createDelivery('UserSignedUp')).toThrow(
        'createDelivery needs { secret } or the SCHOOL_WEBHOOK_SECRET variable',
      );
    } finally {
      if (previous !== undefined) process.env.SCHOOL_WEBHOOK_SECRET = previous;
    }
  });
});

describe('setup mistakes in the test helpers', () => {
  it('throws a ConfigError for an oversized body smaller than its envelope', () => {
    expect(() => oversizedBody({ bytes: 10 })).toThrow(ConfigError);
    expect(() => oversizedBody({ bytes: 10 })).toThrow(/an oversized body is at least \d+ bytes/);
    expect(Buffer.byteLength(oversizedBody({ bytes: 5000 }))).toBe(5000);
  });

  it('throws a ConfigError for a virtual clock that starts at no valid date', () => {
    expect(() => createVirtualClock({ start: 'not a date' })).toThrow(
      new ConfigError('start must be a valid date'),
    );
    expect(createVirtualClock({ start: '2026-01-01T00:00:00Z' }).now()).toBe(
      Date.parse('2026-01-01T00:00:00Z'),
    );
  });

  it('keeps a TypeError for an event without a fixture called without data (a call argument)', () => {
    expect(() =>
      createDelivery('UserSignedIn' as 'UserSignedUp', undefined, { secret: SECRET }),
    ).toThrow(new TypeError('UserSignedIn has no fixture: pass its data'));
  });
});

describe('the fixtures and the types agree', () => {
  /** The currencies the types autocomplete: `satisfies` checks the list is made of them. */
  const KNOWN = [
    'Free',
    'Exes',
    'Rub',
    'Uzs',
    'Kzt',
    'Usd',
    'Eur',
  ] as const satisfies readonly KnownCurrency[];

  /** Every value of a `currency` field anywhere in `value`. */
  function currencies(value: unknown): unknown[] {
    if (Array.isArray(value)) return value.flatMap(currencies);
    if (typeof value !== 'object' || value === null) return [];
    return Object.entries(value).flatMap(([key, inner]) =>
      key === 'currency' ? [inner, ...currencies(inner)] : currencies(inner),
    );
  }

  const root = new URL('../../fixtures/', import.meta.url);
  const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((file) =>
    file.endsWith('.json'),
  );

  it.each(files)('fixtures/%s: every currency is one the platform names, spelt as sent', (file) => {
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(new URL(file, root), 'utf8'));
    } catch {
      return; // the deliberately broken bodies of fixtures/invalid hold no currency to check
    }
    for (const currency of currencies(json)) expect(KNOWN).toContain(currency);
  });

  it('the factories hand out the same spelling', () => {
    expect(fixtures.PaymentCompleted().payment.invoice.currency).toBe('Rub');
    expect(currencies(Object.values(fixtures).map((make) => make()))).not.toContain('RUB');
  });
});
