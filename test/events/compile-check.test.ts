/**
 * The compiled checks must accept exactly what Zod accepts: checked construct by construct, then
 * as a property over every event schema with fixtures broken anywhere, and over any JSON.
 */

import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compileCheck } from '../../src/events/compile-check.js';
import { eventDataSchemas, FIXED_CONTRACT_EVENTS } from '../../src/events/index.js';
import { validateEventData } from '../../src/events/validate.js';
import { FIXTURES, mutatedData, RUNS } from '../properties/arbitraries.js';

/** The compiled check of a schema that must compile. */
function compiled(schema: z.ZodType): (value: unknown) => boolean {
  const check = compileCheck(schema);
  if (check === undefined) throw new Error('the schema did not compile');
  return check;
}

/** Whether the compiled check and Zod agree on every value. */
function agreement(schema: z.ZodType, values: readonly unknown[]): boolean[][] {
  const check = compiled(schema);
  return values.map((value) => [check(value), schema.safeParse(value).success]);
}

describe('compileCheck, construct by construct', () => {
  const cases: [string, z.ZodType, unknown[]][] = [
    ['string', z.string(), ['', 'a', 1, null, undefined, {}, []]],
    ['string with min', z.string().min(2), ['', 'a', 'ab', 'abc', 12]],
    ['number', z.number(), [0, -1.5, 2 ** 60, Number.NaN, Infinity, '1', null]],
    ['integer', z.number().int(), [1, -3, 1.5, 2 ** 53 - 1, 2 ** 53, -(2 ** 53), '1']],
    ['boolean', z.boolean(), [true, false, 0, 'true', null]],
    ['unknown', z.unknown(), [undefined, null, 1, 'x', {}, []]],
    ['null', z.null(), [null, undefined, 0, '']],
    ['nullable', z.string().nullable(), [null, 'a', undefined, 1]],
    ['optional', z.string().optional(), [undefined, 'a', null, 1]],
    ['enum', z.enum(['open', 'done']), ['open', 'done', 'Open', '', 0, null]],
    ['union', z.union([z.number().int(), z.string()]), [1, 'a', 1.5, null, true]],
    ['array', z.array(z.string()), [[], ['a'], ['a', 1], 'a', {}, [null]]],
    ['array of unknown', z.array(z.unknown()), [[], [1, 'a', null], {}, 'x']],
    [
      'record',
      z.record(z.string(), z.number()),
      [{}, { a: 1 }, { a: '1' }, [], null, 'x', [1], { __proto__: 1 }],
    ],
    ['record of unknown', z.record(z.string(), z.unknown()), [{}, { a: [] }, [], null, 1]],
    [
      'loose object',
      z.looseObject({ a: z.string(), b: z.number().optional(), c: z.unknown() }),
      [
        { a: 'x', c: null },
        { a: 'x', b: 1, c: 1, extra: true },
        { a: 'x', b: 'no', c: 1 },
        // An unknown field is still required: Zod reports it as nonoptional.
        { a: 'x' },
        { c: 1 },
        { a: 'x', c: 1, b: undefined },
        [],
        null,
        'x',
      ],
    ],
    [
      'nested and extended',
      z
        .looseObject({ user: z.looseObject({ id: z.number().int() }).nullable() })
        .extend({ tags: z.array(z.enum(['a'])) }),
      [
        { user: null, tags: [] },
        { user: { id: 1 }, tags: ['a'] },
        { user: { id: 1.5 }, tags: ['a'] },
        { user: {}, tags: [] },
        { user: { id: 1 }, tags: ['b'] },
        { tags: [] },
      ],
    ],
    ['nullish', z.number().int().nullish(), [null, undefined, 1, 1.5, 'a']],
    [
      'nullish field',
      z.looseObject({ a: z.string().nullish() }),
      [{}, { a: null }, { a: 'x' }, { a: 1 }, { a: undefined }, null],
    ],
    [
      'open union (a string typed with known values)',
      z.string().meta({ examples: ['Rub'] }) as unknown as z.ZodType<'Rub' | (string & {})>,
      ['Rub', 'Btc', '', 1, null, undefined],
    ],
    [
      'refinement of an object',
      z
        .looseObject({
          a: z.number().nullish(),
          b: z.looseObject({ c: z.number().optional() }).nullish(),
        })
        .refine((v) => (v.a !== undefined && v.a !== null) || v.b?.c !== undefined),
      [
        { a: 1 },
        { b: { c: 2 } },
        { a: null, b: { c: 2 } },
        { a: null },
        { b: {} },
        { b: null },
        {},
        { a: 'x', b: { c: 2 } },
        { b: { c: 'x' } },
        null,
      ],
    ],
    [
      'refinement of a string',
      z.string().refine((s) => s.startsWith('a')),
      ['a', 'ab', 'b', '', 1, null],
    ],
  ];
  it.each(cases)('%s: accepts what Zod accepts', (_, schema, values) => {
    for (const [mine, zods] of agreement(schema, values)) expect(mine).toBe(zods);
    // The cases are meant to exercise both answers.
    const answers = new Set(agreement(schema, values).map(([mine]) => mine));
    if (values.length > 1 && !['unknown'].includes(_)) expect(answers.size).toBe(2);
  });

  it('leaves to Zod what it cannot decide the same way', () => {
    expect(compileCheck(z.object({ a: z.string() }))).toBeUndefined(); // strips unknown keys
    expect(compileCheck(z.strictObject({ a: z.string() }))).toBeUndefined();
    expect(compileCheck(z.string().email())).toBeUndefined();
    expect(compileCheck(z.looseObject({ a: z.string().default('x') }))).toBeUndefined();
    expect(compileCheck(z.string().transform((s) => s.length))).toBeUndefined();
    expect(compileCheck(z.record(z.enum(['a']), z.string()))).toBeUndefined();
    expect(compileCheck(z.number().max(3))).toBeUndefined();
    // A refinement that runs on a condition of its own is Zod's to decide.
    expect(
      compileCheck(z.looseObject({ a: z.number() }).refine(() => true, { when: () => true })),
    ).toBeUndefined();
  });

  it('refuses what an async refinement would answer, leaving it to Zod', () => {
    const check = compiled(z.string().refine(async () => true));
    expect(check('a')).toBe(false);
  });

  it('calls a refinement only once the shape has passed, with the value itself', () => {
    const seen: unknown[] = [];
    const schema = z.looseObject({ a: z.number() }).refine((value) => {
      seen.push(value);
      return true;
    });
    const check = compiled(schema);
    const value = { a: 1, extra: 'kept' };
    expect(check({ a: 'no' })).toBe(false);
    expect(check(value)).toBe(true);
    expect(seen).toEqual([value]);
    expect(seen[0]).toBe(value);
  });
});

describe('compileCheck on the event schemas', () => {
  it.each(FIXED_CONTRACT_EVENTS)('%s compiles, with no fallback to Zod', (name) => {
    expect(compileCheck(eventDataSchemas[name])).toBeTypeOf('function');
  });

  it.each(FIXED_CONTRACT_EVENTS)('%s compiles and accepts its fixture', (name) => {
    const fixture = FIXTURES.find((f) => f.event === name);
    expect(fixture).toBeDefined();
    expect(compiled(eventDataSchemas[name])(fixture!.data)).toBe(true);
  });

  it('agrees with Zod on every fixture broken anywhere', () => {
    const broken = fc.constantFrom(...FIXTURES).chain((fixture) =>
      // One to three fields replaced or removed, anywhere in the tree.
      mutatedData(fixture.data)
        .chain(mutatedData)
        .map((data) => ({ event: fixture.event, data })),
    );
    let rejected = 0;
    fc.assert(
      fc.property(broken, ({ event, data }) => {
        const schema = eventDataSchemas[event as keyof typeof eventDataSchemas];
        const zod = schema.safeParse(data).success;
        if (!zod) rejected++;
        expect(compiled(schema)(data)).toBe(zod);
      }),
      { numRuns: RUNS },
    );
    // Most breakages are caught by the schema; the property must see both answers.
    expect(rejected).toBeGreaterThan(RUNS / 4);
    expect(rejected).toBeLessThan(RUNS);
  });

  it('agrees with Zod on any JSON value', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...FIXED_CONTRACT_EVENTS),
        fc.jsonValue({ maxDepth: 4 }),
        (name, value) => {
          const schema = eventDataSchemas[name];
          expect(compiled(schema)(value)).toBe(schema.safeParse(value).success);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('validateEventData', () => {
  it('hands a valid payload on as parsed, and a broken one with Zod issues', () => {
    const { data } = FIXTURES.find((f) => f.event === 'UserSignedUp')!;
    const valid = validateEventData('UserSignedUp', data);
    expect(valid).toEqual({ ok: true, data });
    expect(valid.ok && valid.data).toBe(data);

    const broken = { ...data, user: { ...(data['user'] as object), id: 'seven' } };
    const invalid = validateEventData('UserSignedUp', broken);
    expect(invalid.ok).toBe(false);
    expect(!invalid.ok && invalid.issues[0]).toMatchObject({ path: ['user', 'id'] });
  });

  it('still validates with Zod where code cannot be generated from strings', () => {
    // A child process: the flag must be set before anything runs.
    const script = `
      const { validateEventData } = await import('./src/events/validate.ts');
      const { compileCheck } = await import('./src/events/compile-check.ts');
      const { eventDataSchemas } = await import('./src/events/index.ts');
      const data = JSON.parse(await (await import('node:fs/promises')).readFile('fixtures/UserSignedUp.json', 'utf8')).data;
      const broken = { ...data, user: { ...data.user, id: 'seven' } };
      console.log(JSON.stringify({
        compiled: compileCheck(eventDataSchemas.UserSignedUp) !== undefined,
        valid: validateEventData('UserSignedUp', data).ok,
        invalid: validateEventData('UserSignedUp', broken).ok,
      }));`;
    const out = execFileSync(
      process.execPath,
      [
        '--disallow-code-generation-from-strings',
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        script,
      ],
      { cwd: new URL('../../', import.meta.url), encoding: 'utf8' },
    );
    expect(JSON.parse(out)).toEqual({ compiled: false, valid: true, invalid: false });
  });
});
