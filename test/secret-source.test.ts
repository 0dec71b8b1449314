/**
 * A secret per tenant: the lookup's answers cached per tenant for secretCacheMs (its
 * "no such tenant" too), at most secretCacheSize tenants, one lookup in flight per tenant, and
 * what each failure of a lookup is answered. Through `createReceiver` and `handle()`, the clock
 * moved with the receiver's `now`.
 */

import { describe, expect, it, vi } from 'vitest';
import {
  ConfigError,
  createReceiver,
  memoryInbox,
  SecretUnavailableError,
  UnknownTenantError,
  type HandlerContext,
  type Logger,
  type ReceiverOptions,
  type SchoolhooksError,
  type SecretLookup,
  type SecretLookupAnswer,
  type WebhookResult,
} from '../src/index.js';
import { deferred, signedRequest } from './helpers/signed.js';

const SECRET_A = 'a1'.repeat(32);
const SECRET_B = 'b2'.repeat(32);
const ROTATED_A = 'c3'.repeat(32);

/** A school's lookup: its secret from a table, nothing for a school it does not know. */
const SCHOOLS: ReadonlyMap<string, string> = new Map([
  ['school-a', SECRET_A],
  ['school-b', SECRET_B],
]);

const MINUTE = 60_000;

/** A clock that stands still until the test moves it. */
function clock() {
  const start = Date.now();
  let offset = 0;
  return {
    now: () => start + offset,
    advance: (ms: number) => void (offset += ms),
  };
}

/** Every piece of `secret` eight characters or longer: none may appear in a message. */
function piecesOf(secret: string): string[] {
  const pieces: string[] = [];
  for (let i = 0; i + 8 <= secret.length; i += 4) pieces.push(secret.slice(i, i + 8));
  return pieces;
}

/** A receiver whose secret is `lookup` (counted), recording what onError is told and what handlers see. */
function start(
  lookup: SecretLookup = ({ tenant }) => SCHOOLS.get(tenant),
  options: Omit<ReceiverOptions, 'secret'> = {},
) {
  const asked: string[] = [];
  const errors: SchoolhooksError[] = [];
  const seen: { key: string; tenant: string | undefined }[] = [];
  const receiver = createReceiver({
    logger: false,
    ...options,
    secret: (request) => {
      asked.push(request.tenant);
      return lookup(request);
    },
  })
    .onAny(
      (event, ctx: HandlerContext) =>
        void seen.push({ key: event.idempotencyKey, tenant: ctx.tenant }),
    )
    .onError((error) => void errors.push(error));
  /** A delivery signed with `secret`, to the route of `tenant`. */
  const deliver = (
    tenant: string | undefined,
    secret: string,
    idempotencyKey?: string,
  ): Promise<WebhookResult> =>
    receiver.handle({
      ...signedRequest(idempotencyKey === undefined ? {} : { idempotencyKey }, secret),
      tenant,
    });
  return { receiver, asked, errors, seen, deliver };
}

/** The status and outcome of an answer. */
const said = ({ status, outcome }: WebhookResult) => `${status} ${outcome}`;

describe('a tenant’s answer is cached for secretCacheMs', () => {
  it('asks once for a known tenant, again once secretCacheMs passed, and takes a rotation then', async () => {
    const time = clock();
    let secretOfA = SECRET_A;
    const { asked, deliver } = start(
      ({ tenant }) => (tenant === 'school-a' ? secretOfA : undefined),
      { now: time.now, secretCacheMs: 5 * MINUTE },
    );
    expect(said(await deliver('school-a', SECRET_A))).toBe('200 processed');
    expect(said(await deliver('school-a', SECRET_A))).toBe('200 processed');
    secretOfA = ROTATED_A;
    time.advance(5 * MINUTE - 1);
    // Still the cached secret: the rotated one is not known yet.
    expect(said(await deliver('school-a', SECRET_A))).toBe('200 processed');
    expect(said(await deliver('school-a', ROTATED_A))).toBe('401 invalid_signature');
    expect(asked).toEqual(['school-a']);
    time.advance(1);
    expect(said(await deliver('school-a', ROTATED_A))).toBe('200 processed');
    expect(said(await deliver('school-a', SECRET_A))).toBe('401 invalid_signature');
    expect(asked).toEqual(['school-a', 'school-a']);
  });

  it('caches "no such tenant" as long, then asks again and finds a school added since', async () => {
    const time = clock();
    const schools = new Map(SCHOOLS);
    const { asked, errors, deliver } = start(({ tenant }) => schools.get(tenant), {
      now: time.now,
    });
    for (let i = 0; i < 3; i++) {
      expect(said(await deliver('school-new', SECRET_A))).toBe('404 unknown_tenant');
    }
    expect(asked).toEqual(['school-new']);
    expect(errors).toHaveLength(3);
    for (const error of errors) {
      expect(error).toBeInstanceOf(UnknownTenantError);
      expect((error as UnknownTenantError).tenant).toBe('school-new');
    }
    schools.set('school-new', SECRET_A);
    time.advance(MINUTE - 1); // the default secretCacheMs is one minute
    expect(said(await deliver('school-new', SECRET_A))).toBe('404 unknown_tenant');
    time.advance(1);
    expect(said(await deliver('school-new', SECRET_A))).toBe('200 processed');
    expect(asked).toEqual(['school-new', 'school-new']);
  });

  it('keeps at most secretCacheSize tenants: the one cached longest ago goes first', async () => {
    const { asked, deliver } = start(
      ({ tenant }) => (tenant.startsWith('s') ? SECRET_A : undefined),
      {
        secretCacheSize: 2,
      },
    );
    const ask = async (tenant: string) => {
      const before = asked.length;
      expect(said(await deliver(tenant, SECRET_A))).toBe('200 processed');
      return asked.length > before ? 'asked' : 'cached';
    };
    expect(await ask('s1')).toBe('asked');
    expect(await ask('s2')).toBe('asked');
    expect(await ask('s1')).toBe('cached');
    expect(await ask('s3')).toBe('asked'); // s1, the oldest, goes
    expect(await ask('s2')).toBe('cached');
    expect(await ask('s3')).toBe('cached');
    expect(await ask('s1')).toBe('asked'); // s2 goes
    expect(await ask('s3')).toBe('cached');
    expect(await ask('s2')).toBe('asked');
    // Never more than two kept, whatever the number of tenants seen.
    for (let i = 10; i < 20; i++) await ask(`s${i}`);
    const before = asked.length;
    for (let i = 10; i < 18; i++) await ask(`s${i}`);
    expect(asked.length - before).toBe(8);
  });

  it('counts unknown tenants in secretCacheSize too: a flood of names cannot grow the cache', async () => {
    const { asked, deliver } = start(({ tenant }) => SCHOOLS.get(tenant), { secretCacheSize: 3 });
    for (let i = 0; i < 50; i++) {
      expect(said(await deliver(`nobody-${i}`, SECRET_A))).toBe('404 unknown_tenant');
    }
    // The first names went long ago: each is asked again.
    for (let i = 0; i < 5; i++) await deliver(`nobody-${i}`, SECRET_A);
    expect(asked).toHaveLength(55);
  });
});

describe('one lookup in flight per tenant', () => {
  it('60 concurrent deliveries for a tenant it does not know cost one lookup', async () => {
    const answer = deferred<SecretLookupAnswer>();
    const { asked, deliver } = start(() => answer.promise);
    const answers = Array.from({ length: 60 }, () => deliver('school-x', SECRET_A));
    answer.resolve(undefined);
    const said60 = (await Promise.all(answers)).map(said);
    expect(new Set(said60)).toEqual(new Set(['404 unknown_tenant']));
    expect(asked).toEqual(['school-x']);
  });

  it('60 concurrent deliveries of distinct keys for a known tenant cost one lookup', async () => {
    const answer = deferred<SecretLookupAnswer>();
    const { asked, seen, deliver } = start(() => answer.promise);
    const answers = Array.from({ length: 60 }, () => deliver('school-a', SECRET_A));
    await new Promise((resolve) => setTimeout(resolve, 10));
    answer.resolve(SECRET_A);
    expect(new Set((await Promise.all(answers)).map(said))).toEqual(new Set(['200 processed']));
    expect(asked).toEqual(['school-a']);
    expect(seen).toHaveLength(60);
  });

  it('asks for two tenants at once: one lookup each, neither waiting for the other', async () => {
    const slow = deferred<SecretLookupAnswer>();
    const { asked, deliver } = start(({ tenant }) =>
      tenant === 'school-a' ? slow.promise : SCHOOLS.get(tenant),
    );
    const a = deliver('school-a', SECRET_A);
    expect(said(await deliver('school-b', SECRET_B))).toBe('200 processed');
    slow.resolve(SECRET_A);
    expect(said(await a)).toBe('200 processed');
    expect(asked.sort()).toEqual(['school-a', 'school-b']);
  });
});

describe('a lookup that fails is answered 503 secret_unavailable, and asked again', () => {
  const DSN = 'postgres://app:hunter2-db-password@db.internal:5432/schools';

  it.each([
    [
      'throws',
      (): never => {
        throw new Error(`connect ECONNREFUSED ${DSN}`);
      },
    ],
    ['rejects', () => Promise.reject(new Error(`connect ECONNREFUSED ${DSN}`))],
  ])('when it %s: a SecretUnavailableError naming the tenant, no secret', async (_how, failing) => {
    let down = true;
    const { asked, errors, deliver } = start((request) =>
      down ? failing() : SCHOOLS.get(request.tenant),
    );
    expect(await deliver('school-a', SECRET_A)).toEqual({
      status: 503,
      outcome: 'secret_unavailable',
      body: { ok: false, outcome: 'secret_unavailable' },
    });
    const [error] = errors;
    expect(error).toBeInstanceOf(SecretUnavailableError);
    expect(error?.code).toBe('secret_unavailable');
    expect((error as SecretUnavailableError).tenant).toBe('school-a');
    expect(error?.message).toMatch(
      /^the secret lookup of tenant "school-a" failed: connect ECONNREFUSED/,
    );
    expect(error?.message).not.toContain('hunter2');
    for (const piece of piecesOf(SECRET_A)) expect(error?.message).not.toContain(piece);
    // Not cached: the next delivery asks again, and gets through once the lookup works.
    expect(said(await deliver('school-a', SECRET_A))).toBe('503 secret_unavailable');
    down = false;
    expect(said(await deliver('school-a', SECRET_A))).toBe('200 processed');
    expect(asked).toEqual(['school-a', 'school-a', 'school-a']);
  });

  it('answers 503 when the lookup outlasts secretLookupTimeoutMs, and asks again next time', async () => {
    let hang = true;
    const { asked, errors, deliver } = start(
      ({ tenant }) => (hang ? new Promise<never>(() => {}) : SCHOOLS.get(tenant)),
      { secretLookupTimeoutMs: 50 },
    );
    const started = performance.now();
    expect(said(await deliver('school-a', SECRET_A))).toBe('503 secret_unavailable');
    const took = performance.now() - started;
    expect(took).toBeGreaterThanOrEqual(45);
    expect(took).toBeLessThan(1000);
    expect(errors[0]).toBeInstanceOf(SecretUnavailableError);
    expect(errors[0]?.message).toBe(
      'the secret lookup of tenant "school-a" took longer than 50 ms (secretLookupTimeoutMs)',
    );
    hang = false;
    expect(said(await deliver('school-a', SECRET_A))).toBe('200 processed');
    expect(asked).toEqual(['school-a', 'school-a']);
  });

  it('ignores the late answer of a lookup that timed out', async () => {
    const late = deferred<SecretLookupAnswer>();
    let calls = 0;
    const { deliver } = start(() => (++calls === 1 ? late.promise : undefined), {
      secretLookupTimeoutMs: 20,
    });
    expect(said(await deliver('school-a', SECRET_A))).toBe('503 secret_unavailable');
    expect(said(await deliver('school-a', SECRET_A))).toBe('404 unknown_tenant');
    late.resolve(SECRET_A);
    await new Promise((resolve) => setTimeout(resolve, 10));
    // The cached answer is the second lookup's, not the late first one's.
    expect(said(await deliver('school-a', SECRET_A))).toBe('404 unknown_tenant');
    expect(calls).toBe(2);
  });

  it.each([
    ['an empty string', '', 'secret is empty'],
    ['whitespace only', ' \n\t ', 'secret is whitespace only'],
    ['a number', 42, 'secret must be a non-empty string or a non-empty list of them'],
    [
      'an object',
      { secret: SECRET_A },
      'secret must be a non-empty string or a non-empty list of them',
    ],
    ['a list with an empty one', [SECRET_A, ''], 'secret #2 of the list is empty'],
    ['a list with a number', [SECRET_A, 7], 'secret #2 of the list must be a string, not number'],
  ])(
    'answers 503 with a ConfigError to onError when it gives %s (not a 401 loop)',
    async (_what, unusable, why) => {
      const { asked, errors, deliver } = start(() => unusable as SecretLookupAnswer);
      expect(said(await deliver('school-a', SECRET_A))).toBe('503 secret_unavailable');
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(ConfigError);
      expect(errors[0]?.message).toBe(
        `the secret lookup of tenant "school-a" gave an unusable secret: ${why}`,
      );
      for (const piece of piecesOf(SECRET_A)) expect(errors[0]?.message).not.toContain(piece);
      // Reported again for each delivery, from the cache: the lookup is not hammered.
      expect(said(await deliver('school-a', SECRET_A))).toBe('503 secret_unavailable');
      expect(errors.map((error) => error.code)).toEqual(['config', 'config']);
      expect(asked).toEqual(['school-a']);
    },
  );

  it.each([
    ['an empty list', []],
    ['null', null],
    ['undefined', undefined],
  ])('answers 404 unknown_tenant when it gives %s', async (_what, none) => {
    const { errors, deliver } = start(() => none);
    expect(await deliver('school-a', SECRET_A)).toEqual({
      status: 404,
      outcome: 'unknown_tenant',
      body: { ok: false, outcome: 'unknown_tenant' },
    });
    expect(errors[0]).toBeInstanceOf(UnknownTenantError);
    expect(errors[0]?.message).toBe(
      'tenant "school-a" has no secret (the secret lookup gave none)',
    );
  });
});

describe('the secrets a lookup gives', () => {
  it('verifies with any of a list of secrets (a rotation in progress)', async () => {
    const { deliver } = start(() => [SECRET_A, ROTATED_A]);
    expect(said(await deliver('school-a', SECRET_A))).toBe('200 processed');
    expect(said(await deliver('school-a', ROTATED_A))).toBe('200 processed');
    expect(said(await deliver('school-a', SECRET_B))).toBe('401 invalid_signature');
  });

  it('warns once per tenant of a secret with whitespace around it, uses it as given, never shows it', async () => {
    const time = clock();
    const warnings: string[] = [];
    const logger: Logger = {
      debug: () => {},
      info: () => {},
      warn: (_fields, message) => void warnings.push(message ?? ''),
      error: () => {},
    };
    const padded: Record<string, string> = {
      'school-a': ` ${SECRET_A}\n`,
      'school-b': `${SECRET_B} `,
    };
    const { deliver } = start(({ tenant }) => padded[tenant], { logger, now: time.now });
    expect(said(await deliver('school-a', SECRET_A))).toBe('401 invalid_signature');
    expect(said(await deliver('school-a', ` ${SECRET_A}\n`))).toBe('200 processed');
    time.advance(2 * MINUTE); // looked up again: no second warning
    expect(said(await deliver('school-a', ` ${SECRET_A}\n`))).toBe('200 processed');
    expect(said(await deliver('school-b', `${SECRET_B} `))).toBe('200 processed');
    const padding = warnings.filter((line) => line.includes('spaces or a line break'));
    expect(padding).toHaveLength(2);
    expect(padding[0]).toMatch(/^the secret lookup of tenant "school-a" gave a secret with spaces/);
    expect(padding[1]).toMatch(/^the secret lookup of tenant "school-b" gave a secret with spaces/);
    for (const line of padding) {
      for (const piece of [...piecesOf(SECRET_A), ...piecesOf(SECRET_B)]) {
        expect(line).not.toContain(piece);
      }
    }
  });
});

describe('the tenant a request names', () => {
  it.each([
    ['empty', ''],
    ['over 256 code units', 'x'.repeat(257)],
    ['with U+0000', 'school\0a'],
    ['a lone high surrogate', 'school-\ud83d'],
    ['a lone low surrogate', '\ude00school'],
  ])('answers 404 unknown_tenant to a tenant %s, without any lookup', async (_what, tenant) => {
    const { asked, errors, deliver } = start();
    expect(said(await deliver(tenant, SECRET_A))).toBe('404 unknown_tenant');
    expect(asked).toEqual([]);
    expect(errors[0]).toBeInstanceOf(UnknownTenantError);
    expect(errors[0]?.message).toMatch(/is not a tenant name/);
  });

  it.each([
    ['256 code units', 'x'.repeat(256)],
    ['128 emoji (256 code units, well-formed)', '😀'.repeat(128)],
    ['one character', 'a'],
    ['Unicode and punctuation', 'école/7 ~["run"]'],
  ])('asks the lookup about a tenant of %s', async (_what, tenant) => {
    const { asked, deliver } = start(() => SECRET_A);
    expect(said(await deliver(tenant, SECRET_A))).toBe('200 processed');
    expect(asked).toEqual([tenant]);
  });

  it('answers 404 to a request that names no tenant, saying to pass `tenant`', async () => {
    const { asked, errors, receiver } = start();
    const answer = await receiver.handle(signedRequest({}, SECRET_A));
    expect(said(answer)).toBe('404 unknown_tenant');
    expect(asked).toEqual([]);
    expect(errors[0]).toBeInstanceOf(UnknownTenantError);
    expect((errors[0] as UnknownTenantError).tenant).toBeUndefined();
    expect(errors[0]?.message).toMatch(/names no tenant/);
    expect(errors[0]?.message).toContain('`tenant`');
    expect(receiver.needsTenant).toBe(true);
    expect(createReceiver({ secret: SECRET_A }).needsTenant).toBe(false);
  });

  it('shows handlers the tenant as ctx.tenant, now and in an inbox worker’s run', async () => {
    const { seen, deliver } = start();
    const a = await deliver('school-a', SECRET_A, 'key-1');
    const b = await deliver('school-b', SECRET_B, 'key-2');
    expect([said(a), said(b)]).toEqual(['200 processed', '200 processed']);
    expect(seen).toEqual([
      { key: 'key-1', tenant: 'school-a' },
      { key: 'key-2', tenant: 'school-b' },
    ]);

    const inbox = memoryInbox({ backoffMs: 1 });
    const queued = start(undefined, { inbox });
    expect(said(await queued.deliver('school-b', SECRET_B, 'key-3'))).toBe('202 queued');
    const worker = inbox.work(queued.receiver);
    await inbox.idle();
    await worker.close();
    expect(queued.seen).toEqual([{ key: 'key-3', tenant: 'school-b' }]);
    // The worker verified it with school-b's secret, from the cache.
    expect(queued.asked).toEqual(['school-b']);
  });

  it('keeps keys apart per tenant with a static secret too', async () => {
    const runs: (string | undefined)[] = [];
    const receiver = createReceiver({ secret: SECRET_A, logger: false }).onAny(
      (_event, ctx) => void runs.push(ctx.tenant),
    );
    // One event, byte for byte: a retry of it under one tenant is a duplicate.
    const event = { idempotencyKey: 'same-key', timestamp: new Date().toISOString() };
    const send = (tenant: string | undefined) =>
      receiver.handle({ ...signedRequest(event, SECRET_A), tenant });
    expect(said(await send('school-a'))).toBe('200 processed');
    expect(said(await send('school-b'))).toBe('200 processed');
    expect(said(await send('school-a'))).toBe('200 duplicate');
    expect(said(await send(undefined))).toBe('200 processed');
    expect(said(await send(undefined))).toBe('200 duplicate');
    expect(runs).toEqual(['school-a', 'school-b', undefined]);
  });

  it('reads only a string as the tenant: anything else names none', async () => {
    const { asked, deliver } = start();
    const answer = await deliver(42 as unknown as string, SECRET_A);
    expect(said(answer)).toBe('404 unknown_tenant');
    expect(asked).toEqual([]);
  });
});

describe('the lookup options', () => {
  it.each([
    ['secretCacheMs', 0, 'secretCacheMs must be a positive number of ms'],
    ['secretLookupTimeoutMs', -1, 'secretLookupTimeoutMs must be a positive number of ms'],
    ['secretCacheSize', 0, 'secretCacheSize must be a positive number of tenants'],
    ['secretCacheSize', Number.NaN, 'secretCacheSize must be a positive number of tenants'],
  ])('refuses %s: %s', (name, value, message) => {
    expect(() => createReceiver({ secret: () => SECRET_A, [name]: value })).toThrow(
      new ConfigError(message),
    );
  });

  it('accepts a lookup that answers at once, not a promise', async () => {
    const lookup = vi.fn(({ tenant }: { tenant: string }) => SCHOOLS.get(tenant));
    const { deliver } = start(lookup);
    expect(said(await deliver('school-b', SECRET_B))).toBe('200 processed');
    expect(lookup).toHaveBeenCalledWith({ tenant: 'school-b' });
  });
});
