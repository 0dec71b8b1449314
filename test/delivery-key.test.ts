/**
 * The keys a delivery holds in the store (src/keys/delivery-key.ts): two different deliveries, or a
 * delivery and a worker's run, must never hold one key, or one of them is answered `duplicate`
 * and its handlers never run. Checked over every pair of a pool of tricky strings, as a property
 * over arbitrary ones, and end to end over an inbox.
 */

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createReceiver, deliveryKeyOf, isTenantName, memoryInbox } from '../src/index.js';
import { entityKeyOf, recordKeyOf, runKeyOf } from '../src/keys/delivery-key.js';
import { SECRET, signedRequest } from './helpers/signed.js';

/** One holder of a key: a delivery (of a tenant, or of none), or a worker's run of one. */
interface Holder {
  readonly kind: 'delivery' | 'run';
  readonly key: string;
  readonly tenant: string | undefined;
}

/** The key `holder` claims in the store. */
function keyOf({ kind, key, tenant }: Holder): string {
  const delivery = deliveryKeyOf(key, tenant);
  return kind === 'delivery' ? delivery : runKeyOf(delivery);
}

/** The holder as one string, to tell two holders apart. */
const nameOf = ({ kind, key, tenant }: Holder) => JSON.stringify([kind, key, tenant ?? null]);

/** Strings made to look like the keys derived from others, or to break a naive framing. */
const TRICKY: readonly string[] = [
  'abc',
  '',
  '~',
  '~~',
  '~abc',
  '~~abc',
  '~[',
  '~["run","abc"]',
  '~~["run","abc"]',
  '~["tenant","school-a","abc"]',
  '["run","abc"]',
  '["tenant","school-a","abc"]',
  'school-a',
  'school-a","abc',
  '","',
  '\\"',
  '"',
  'null',
  'inbox-run:abc',
  '~sha256:abc',
  '\0',
  'a\0b',
  '\ud800',
  'x\udc00',
  '😀',
  'école',
  'a:b',
  'b:c',
  ':',
  'a|b',
];

const kinds = ['delivery', 'run'] as const;

/** Every holder of every key in `keys`, under no tenant or each of `tenants`. */
function holdersOf(keys: readonly string[], tenants: readonly string[]): Holder[] {
  return kinds.flatMap((kind) =>
    keys.flatMap((key) => [undefined, ...tenants].map((tenant): Holder => ({ kind, key, tenant }))),
  );
}

/** The first two different holders that claim one key, if any. */
function collisionIn(holders: readonly Holder[]): [string, string] | undefined {
  const byKey = new Map<string, string>();
  for (const holder of holders) {
    const key = keyOf(holder);
    const name = nameOf(holder);
    const other = byKey.get(key);
    if (other !== undefined && other !== name) return [other, name];
    byKey.set(key, name);
  }
  return undefined;
}

describe('deliveryKeyOf and runKeyOf', () => {
  it('keep the idempotencyKey of a delivery without a tenant as it is (keys stored before still found)', () => {
    expect(deliveryKeyOf('8b0c6a4e-7d1f-4c2a-9e3b-5f6a7b8c9d0e', undefined)).toBe(
      '8b0c6a4e-7d1f-4c2a-9e3b-5f6a7b8c9d0e',
    );
    expect(deliveryKeyOf('inbox-run:abc', undefined)).toBe('inbox-run:abc');
    expect(deliveryKeyOf('~abc', undefined)).toBe('~~abc');
  });

  it('give the forms the module documents (what a store already holds must still be found)', () => {
    expect(deliveryKeyOf('abc', 'school-a')).toBe('~["tenant","school-a","abc"]');
    expect(runKeyOf('abc')).toBe('~["run","abc"]');
    expect(runKeyOf(deliveryKeyOf('abc', 'school-a'))).toBe(
      '~["run","~[\\"tenant\\",\\"school-a\\",\\"abc\\"]"]',
    );
  });

  it('never give one key to two holders over every pair of tricky strings', () => {
    expect(collisionIn(holdersOf(TRICKY, TRICKY))).toBeUndefined();
  });

  it('never give one key to two holders when a key is another holder’s derived key', () => {
    // Each derived key of the pool, taken as a platform's idempotencyKey and as a tenant.
    const derived = [...new Set(holdersOf(TRICKY, TRICKY.slice(0, 12)).map(keyOf))];
    const keys = [...TRICKY, ...derived];
    expect(collisionIn(holdersOf(keys, [...TRICKY.slice(0, 12), ...derived.slice(0, 40)]))).toBe(
      undefined,
    );
  });

  /** Any string: any code unit (lone surrogates, U+0000), or one of the tricky ones. */
  const anyString = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 12 }),
    fc.string({
      unit: fc.constantFrom('~', '[', ']', '"', '\\', ',', ':', '|', 'a', '\0', '\ud800'),
    }),
    fc.constantFrom(...TRICKY),
  );
  it('write a tenant’s key exactly as the JSON of [tenant, key] (the hand-framed fast path included)', () => {
    // The form every store already holds: a key framed by hand must be that very string.
    fc.assert(
      fc.property(anyString, anyString, (tenant, key) => {
        expect(deliveryKeyOf(key, tenant)).toBe(`~${JSON.stringify(['tenant', tenant, key])}`);
      }),
      { numRuns: 3000 },
    );
    for (const tenant of TRICKY) {
      for (const key of TRICKY) {
        expect(deliveryKeyOf(key, tenant)).toBe(`~${JSON.stringify(['tenant', tenant, key])}`);
      }
    }
  });

  it("write an entity's record and version keys exactly as the JSON of [kind, tenant or null, entity]", () => {
    // Earlier versions wrote them with JSON.stringify: a record or a version written then must be
    // found after an upgrade, with a tenant and without.
    const tenants = fc.option(anyString, { nil: undefined });
    fc.assert(
      fc.property(tenants, anyString, (tenant, entity) => {
        expect(recordKeyOf(entity, tenant)).toBe(
          `~${JSON.stringify(['record', tenant ?? null, entity])}`,
        );
        expect(entityKeyOf(entity, tenant)).toBe(
          `~${JSON.stringify(['entity', tenant ?? null, entity])}`,
        );
      }),
      { numRuns: 3000 },
    );
    for (const tenant of [undefined, ...TRICKY]) {
      for (const entity of TRICKY) {
        expect(recordKeyOf(entity, tenant)).toBe(
          `~${JSON.stringify(['record', tenant ?? null, entity])}`,
        );
      }
    }
  });

  const holder: fc.Arbitrary<Holder> = fc.record({
    kind: fc.constantFrom(...kinds),
    key: anyString,
    tenant: fc.option(anyString, { nil: undefined }),
  });

  /**
   * Holders whose tenant and key, joined by `separator`, read as `a`'s do: what a key framed by
   * joining them would give to both.
   */
  const resplits = (a: Holder): Holder[] =>
    [':', '|', '/', ',', '","', '\0', ''].flatMap((separator) => {
      const whole = `${a.tenant ?? ''}${separator}${a.key}`;
      const splits: Holder[] = [];
      for (let i = 0; i + separator.length <= whole.length; i++) {
        if (!whole.startsWith(separator, i)) continue;
        const tenant = whole.slice(0, i);
        splits.push({ kind: a.kind, tenant, key: whole.slice(i + separator.length) });
      }
      return splits;
    });

  /** A holder made from `a` to collide with it if anything can: its keys reused, its parts moved. */
  const nearMiss = (a: Holder): fc.Arbitrary<Holder> =>
    fc.oneof(
      holder,
      fc.constantFrom(...resplits(a), a),
      fc.record({
        kind: fc.constantFrom(...kinds),
        key: fc.constantFrom(
          keyOf(a),
          deliveryKeyOf(a.key, a.tenant),
          a.key,
          `~${a.key}`,
          a.key.slice(1),
          a.tenant ?? '',
          JSON.stringify([a.tenant, a.key]),
          `${a.tenant ?? ''}","${a.key}`,
        ),
        tenant: fc.constantFrom(undefined, a.tenant, a.key, keyOf(a), `${a.tenant ?? ''}","`),
      }),
    );

  it('never give one key to two different holders (property, with near misses)', () => {
    fc.assert(
      fc.property(
        holder.chain((a) => fc.tuple(fc.constant(a), nearMiss(a))),
        ([a, b]) => nameOf(a) === nameOf(b) || keyOf(a) !== keyOf(b),
      ),
      { numRuns: 2000 },
    );
  });
});

describe('isTenantName', () => {
  it('takes a name of 1 to 256 well-formed code units without U+0000', () => {
    for (const name of [
      'a',
      'school-a',
      'x'.repeat(256),
      '😀'.repeat(128),
      'école/7',
      '~["run"]',
    ]) {
      expect([name.length, isTenantName(name)]).toEqual([name.length, true]);
    }
  });

  it('refuses the empty name, one over 256 code units, U+0000 and lone surrogates', () => {
    for (const name of [
      '',
      'x'.repeat(257),
      '😀'.repeat(128) + 'a',
      'a\0',
      '\ud83d',
      '\ude00a',
      'a\ud83d',
    ]) {
      expect([name.length, isTenantName(name)]).toEqual([name.length, false]);
    }
  });

  it('refuses any name with a lone surrogate or U+0000 (property)', () => {
    const lone = fc.constantFrom('\0', '\ud800', '\udbff', '\udc00', '\udfff');
    fc.assert(
      fc.property(
        fc.string({ maxLength: 50 }),
        lone,
        fc.string({ maxLength: 50 }),
        (before, bad, after) =>
          // A high surrogate followed by a low one is a pair: only the lone ones are checked.
          /[\ud800-\udbff]$/.test(before) ||
          /^[\udc00-\udfff]/.test(after) ||
          !isTenantName(before + bad + after),
      ),
      { numRuns: 1000 },
    );
  });
});

describe('the keys end to end, through an inbox', () => {
  it('runs a delivery keyed like another delivery’s run key, and that other delivery, once each', async () => {
    const inbox = memoryInbox({ backoffMs: 1 });
    const runs: string[] = [];
    const receiver = createReceiver({ secret: SECRET, inbox, logger: false }).onAny(
      (event, ctx) => void runs.push(JSON.stringify([event.idempotencyKey, ctx.tenant ?? null])),
    );
    const timestamp = new Date().toISOString();
    // 'abc' and what each of its keys would be, sent as platform keys of their own.
    const deliveries = [
      { idempotencyKey: '~["run","abc"]', tenant: undefined },
      { idempotencyKey: 'abc', tenant: undefined },
      { idempotencyKey: '~~["run","abc"]', tenant: undefined },
      { idempotencyKey: '~["tenant","school-a","abc"]', tenant: undefined },
      { idempotencyKey: runKeyOf(deliveryKeyOf('abc', 'school-a')), tenant: undefined },
      { idempotencyKey: 'abc', tenant: 'school-a' },
      { idempotencyKey: '~["run","abc"]', tenant: 'school-a' },
    ];
    const send = ({ idempotencyKey, tenant }: (typeof deliveries)[number]) =>
      receiver.handle({ ...signedRequest({ idempotencyKey, timestamp }), tenant });

    for (const delivery of deliveries) expect((await send(delivery)).outcome).toBe('queued');
    const worker = inbox.work(receiver);
    await inbox.idle();
    expect(runs.sort()).toEqual(
      deliveries
        .map(({ idempotencyKey, tenant }) => JSON.stringify([idempotencyKey, tenant ?? null]))
        .sort(),
    );
    expect(new Set(runs).size).toBe(deliveries.length);

    // The platform's retries are duplicates; a worker's second run of a stored one is too.
    for (const delivery of deliveries) expect((await send(delivery)).outcome).toBe('duplicate');
    const { body, headers, idempotencyKey } = signedRequest({ idempotencyKey: 'abc', timestamp });
    const again = await receiver.processStored(
      {
        body,
        signature: headers.signature!,
        event: 'UserSignedIn',
        idempotencyKey,
        receivedAt: timestamp,
      },
      { attempt: 2 },
    );
    expect(again.outcome).toBe('duplicate');
    await worker.close();
    expect(runs).toHaveLength(deliveries.length);
  });

  it('runs, without an inbox, a delivery keyed like another’s tenant key and that one, once each', async () => {
    const runs: string[] = [];
    const receiver = createReceiver({ secret: SECRET, logger: false }).onAny(
      (event, ctx) => void runs.push(`${ctx.tenant ?? '-'} ${event.idempotencyKey}`),
    );
    const plain = await receiver.handle(
      signedRequest({ idempotencyKey: deliveryKeyOf('abc', 'school-a') }),
    );
    const scoped = await receiver.handle({
      ...signedRequest({ idempotencyKey: 'abc' }),
      tenant: 'school-a',
    });
    expect([plain.outcome, scoped.outcome]).toEqual(['processed', 'processed']);
    expect(runs).toEqual(['- ~["tenant","school-a","abc"]', 'school-a abc']);
  });
});
