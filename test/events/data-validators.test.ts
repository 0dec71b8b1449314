/**
 * The validators generated from the events' JSON Schema (scripts/generate-validators.ts) must
 * accept exactly what Zod accepts, and what Ajv accepts of the same JSON Schema: over every
 * fixture broken anywhere and over any JSON. The committed file must be what the generator
 * writes today, and it must run where code cannot be made from strings.
 */

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  eventsJsonSchema,
  generateValidatorsSource,
  GENERATED_PATH,
} from '../../scripts/generate-validators.js';
import { DATA_VALIDATORS } from '../../src/platform/events/data-validators.generated.js';
import {
  eventDataSchemas,
  FIXED_CONTRACT_EVENTS,
  validateEventData,
  type FixedEventName,
} from '../../src/platform/events/index.js';
import { FIXTURES, mutatedData, RUNS } from '../properties/arbitraries.js';

const root = new URL('../../', import.meta.url);

/** Ajv's own validator of each event's published JSON Schema. */
const ajv = new Ajv2020({ allowUnionTypes: true });
ajv.addSchema({ ...eventsJsonSchema(), $id: 'events' });
const ajvOf = (name: FixedEventName) => ajv.getSchema(`events#/properties/${name}`)!;

/** The answers of the generated validator, Ajv and Zod: all three must be the same. */
function answers(name: FixedEventName, data: unknown): boolean[] {
  return [
    DATA_VALIDATORS[name](data),
    ajvOf(name)(data) === true,
    eventDataSchemas[name].safeParse(data).success,
  ];
}

describe('the generated validators', () => {
  it('are what the generator writes from the schemas today (run `npm run generate`)', () => {
    expect(readFileSync(new URL(GENERATED_PATH, root), 'utf8')).toBe(generateValidatorsSource());
  });

  it('are named for the schema path they check, never by a counter a schema change renumbers', () => {
    const source = readFileSync(new URL(GENERATED_PATH, root), 'utf8');
    const names = [...source.matchAll(/^function (\S+)\(/gm)].map((match) => match[1]!);
    expect(names).toEqual(expect.arrayContaining([...FIXED_CONTRACT_EVENTS]));
    for (const name of names) {
      expect(name, name).toMatch(
        new RegExp(`^(?:${FIXED_CONTRACT_EVENTS.join('|')})(?:_[\\w$]+)?$`),
      );
      expect(name, name).not.toMatch(/^check\d|_\d+$/);
    }
    expect(names).toContain('PaymentCompleted_payment_invoice_products_items');
  });

  it('make no code from strings at run time', () => {
    const source = readFileSync(new URL(GENERATED_PATH, root), 'utf8');
    expect(source).not.toMatch(/new Function|\beval\(|\bimport\(|\brequire\(/);
  });

  it.each(FIXED_CONTRACT_EVENTS)('%s: accepts its fixture, as Ajv and Zod do', (name) => {
    const fixture = FIXTURES.find((f) => f.event === name);
    expect(fixture).toBeDefined();
    expect(answers(name, fixture!.data)).toEqual([true, true, true]);
  });

  it('agree with Ajv and Zod on every fixture broken anywhere', () => {
    const broken = fc.constantFrom(...FIXTURES).chain((fixture) =>
      // One to three fields replaced or removed, anywhere in the tree.
      mutatedData(fixture.data)
        .chain(mutatedData)
        .map((data) => ({ event: fixture.event as FixedEventName, data })),
    );
    let rejected = 0;
    fc.assert(
      fc.property(broken, ({ event, data }) => {
        const [mine, ...others] = answers(event, data);
        if (!mine) rejected++;
        expect(others).toEqual([mine, mine]);
      }),
      { numRuns: RUNS },
    );
    // Most breakages are caught by the schema; the property must see both answers.
    expect(rejected).toBeGreaterThan(RUNS / 4);
    expect(rejected).toBeLessThan(RUNS);
  });

  it('agree with Ajv and Zod on any JSON value', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...FIXED_CONTRACT_EVENTS),
        fc.jsonValue({ maxDepth: 4 }),
        (name, value) => {
          const [mine, ...others] = answers(name, value);
          expect(others).toEqual([mine, mine]);
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

  it('validates with a schema put in place of the bundled one, by Zod', () => {
    const { data } = FIXTURES.find((f) => f.event === 'UserSignedUp')!;
    const stricter = eventDataSchemas.UserSignedUp.refine(() => false, { message: 'never' });
    const result = validateEventData('UserSignedUp', data, stricter);
    expect(!result.ok && result.issues[0]?.message).toBe('never');
  });

  it('validates where code cannot be generated from strings', () => {
    // A child process: the flag must be set before anything runs.
    const script = `
      const { validateEventData } = await import('./src/platform/events/index.ts');
      const data = JSON.parse(await (await import('node:fs/promises')).readFile('fixtures/UserSignedUp.json', 'utf8')).data;
      const broken = { ...data, user: { ...data.user, id: 'seven' } };
      console.log(JSON.stringify({
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
      { cwd: root, encoding: 'utf8' },
    );
    expect(JSON.parse(out)).toEqual({ valid: true, invalid: false });
  });
});
