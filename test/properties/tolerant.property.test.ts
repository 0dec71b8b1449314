/**
 * The tolerant-reader contract (docs/events.md; docs/decisions.md), as properties through a real receiver: a fixture with
 * any set of fields outside the spine removed, or nulled where the platform allows null, is
 * processed; a fixture with a spine field removed or given a wrong type is 422 invalid_payload;
 * and the generated validators agree with Zod on every one of them.
 *
 * The spine is read from `fixtures/sparse/` (written by hand from the spine table of docs/events.md, not from the
 * schemas) plus the `id` of every entity object present.
 */

import { readdirSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { DATA_VALIDATORS } from '../../src/platform/events/data-validators.generated.js';
import {
  createReceiver,
  eventDataSchemas,
  isFixedContractEvent,
  type FixedEventName,
} from '../../src/index.js';
import { RUNS, SECRET, sign } from './arbitraries.js';

type Path = (string | number)[];
interface Fixture {
  file: string;
  event: FixedEventName;
  data: Record<string, unknown>;
}

function read(folder: string): Fixture[] {
  const dir = new URL(`../../fixtures/${folder}`, import.meta.url);
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json') && file !== 'manifest.json')
    .sort()
    .map((file) => {
      const { event, data } = JSON.parse(readFileSync(new URL(file, `${dir.href}/`), 'utf8')) as {
        event: string;
        data: Record<string, unknown>;
      };
      if (!isFixedContractEvent(event)) throw new Error(`${folder}${file}: ${event}`);
      return { file: `${folder}${file}`, event, data };
    });
}

const FULL = read('');
const SPARSE = read('sparse/');
const VARIANTS = read('variants/');
const sparseOf = (event: FixedEventName): Fixture => SPARSE.find((f) => f.event === event)!;

/**
 * The invite link may be named in either place (docs/platform.md#events): each alone is not the spine, but
 * removing both is refused, so both properties leave these paths and the objects holding them
 * alone (schemas.test.ts covers the rule case by case).
 */
const EITHER_OR: Partial<Record<FixedEventName, string[]>> = {
  ProductEnrolledByInviteLink: [
    'inviteLinkId',
    'access',
    'access.meta',
    'access.meta.inviteLinkId',
  ],
};

// ---- Walking a Zod schema alongside a JSON path -------------------------------------------

interface Def {
  type: string;
  innerType?: z.ZodType;
  element?: z.ZodType;
  shape?: Record<string, z.ZodType>;
}
const def = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  while (['optional', 'nullable'].includes(def(current).type)) current = def(current).innerType!;
  return current;
}

/** The schema of the value at `path`, or undefined inside a part the schemas leave `unknown`. */
function schemaAt(root: z.ZodType, path: Path): z.ZodType | undefined {
  let current: z.ZodType | undefined = root;
  for (const key of path) {
    if (current === undefined) return undefined;
    const inner = def(unwrap(current));
    if (inner.type === 'object') current = inner.shape?.[String(key)];
    else if (inner.type === 'array') current = inner.element;
    else return undefined;
  }
  return current;
}

/** Whether the value at `path` may be null: per its schema, or anywhere in an `unknown` part. */
function nullAllowed(event: FixedEventName, path: Path): boolean {
  const schema = schemaAt(eventDataSchemas[event], path);
  return schema === undefined || schema.safeParse(null).success;
}

// ---- Paths ---------------------------------------------------------------------------------

function pathsOf(value: unknown, prefix: Path = []): Path[] {
  const here = prefix.length > 0 ? [prefix] : [];
  if (Array.isArray(value)) {
    return [...here, ...value.flatMap((item, i) => pathsOf(item, [...prefix, i]))];
  }
  if (typeof value === 'object' && value !== null) {
    return [...here, ...Object.entries(value).flatMap(([k, v]) => pathsOf(v, [...prefix, k]))];
  }
  return here;
}

const dotted = (path: Path): string => path.join('.');

/** The `id` of an object the schemas know as an entity (its shape has an `id`). */
function isEntityId(event: FixedEventName, path: Path): boolean {
  if (path.at(-1) !== 'id') return false;
  const parent = schemaAt(eventDataSchemas[event], path.slice(0, -1));
  return parent !== undefined && def(unwrap(parent)).shape?.['id'] !== undefined;
}

/** Paths of the spine in `data`: those of the event's sparse fixture and every entity's id. */
function spinePaths(fixture: Fixture): Set<string> {
  const spine = new Set(pathsOf(sparseOf(fixture.event).data).map(dotted));
  for (const path of pathsOf(fixture.data))
    if (isEntityId(fixture.event, path)) spine.add(dotted(path));
  for (const path of EITHER_OR[fixture.event] ?? []) spine.add(path);
  return spine;
}

function get(value: unknown, path: Path): { found: boolean; value: unknown } {
  let current = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, key)) {
      return { found: false, value: undefined };
    }
    current = (current as Record<string | number, unknown>)[key];
  }
  return { found: true, value: current };
}

/** Remove (`undefined`) or replace the value at `path`, in place; nothing when it is gone. */
function edit(root: unknown, path: Path, replacement: unknown): void {
  const parent = get(root, path.slice(0, -1));
  const key = path.at(-1)!;
  if (!parent.found || typeof parent.value !== 'object' || parent.value === null) return;
  if (!Object.hasOwn(parent.value, key)) return;
  if (replacement !== undefined)
    (parent.value as Record<string | number, unknown>)[key] = replacement;
  else if (Array.isArray(parent.value)) parent.value.splice(Number(key), 1);
  else delete (parent.value as Record<string | number, unknown>)[key];
}

// ---- Through the receiver ------------------------------------------------------------------

const receiver = createReceiver({ secret: SECRET }).onAny(() => {});
let keys = 0;

async function deliver(event: FixedEventName, data: unknown): Promise<[number, string]> {
  const body = JSON.stringify({
    event,
    timestamp: new Date().toISOString(),
    idempotencyKey: `tolerant-${keys++}`,
    data,
  });
  const headers = { 'content-type': 'application/json', signature: sign(body) };
  const result = await receiver.handle({ method: 'POST', headers, body });
  return [result.status, result.outcome];
}

/** The generated validator and Zod answer the same, and that answer is `expected`. */
function expectAgreement(event: FixedEventName, data: unknown, expected: boolean): void {
  expect(DATA_VALIDATORS[event](data)).toBe(expected);
  expect(eventDataSchemas[event].safeParse(data).success).toBe(expected);
}

// ---- The properties ------------------------------------------------------------------------

/** A fixture with any set of its non-spine fields removed, or nulled where null is allowed. */
const thinned = fc.constantFrom(...FULL, ...VARIANTS, ...SPARSE).chain((fixture) => {
  const spine = spinePaths(fixture);
  const optional = pathsOf(fixture.data).filter((path) => !spine.has(dotted(path)));
  const edits =
    optional.length === 0
      ? fc.constant([])
      : fc
          .subarray(optional)
          .chain((paths) =>
            fc.tuple(
              ...paths.map((path) =>
                nullAllowed(fixture.event, path)
                  ? fc.constantFrom<[Path, null | undefined]>([path, undefined], [path, null])
                  : fc.constant<[Path, null | undefined]>([path, undefined]),
              ),
            ),
          );
  return edits.map((changes) => {
    const data = structuredClone(fixture.data);
    for (const [path, value] of changes) edit(data, path, value);
    return { fixture, data, changes: changes.map(([path, value]) => `${dotted(path)}=${value}`) };
  });
});

/** A spine path of a fixture, removed from its sparse form or given a wrong type in any form. */
const WRONG_TYPES = [true, [], { wrong: true }];
const broken = fc.constantFrom(...FULL, ...VARIANTS, ...SPARSE).chain((fixture) => {
  const spine = [...spinePaths(fixture)]
    .filter((path) => !(EITHER_OR[fixture.event] ?? []).includes(path))
    .map((path) => path.split('.').map((key) => (/^\d+$/.test(key) ? Number(key) : key)))
    .filter((path) => get(fixture.data, path).found);
  return fc
    .record({ path: fc.constantFrom(...spine), value: fc.constantFrom(undefined, ...WRONG_TYPES) })
    .map(({ path, value }) => {
      const removal = value === undefined;
      // A removal is made on the sparse fixture, where no other field can stand in for it.
      const base = removal ? sparseOf(fixture.event) : fixture;
      const data = structuredClone(base.data);
      edit(data, path, value);
      return { event: fixture.event, data, change: `${dotted(path)}=${JSON.stringify(value)}` };
    })
    .filter(({ data, event }) => JSON.stringify(data) !== JSON.stringify(sparseOf(event).data));
});

describe('the tolerant-reader contract, through the receiver', () => {
  it('processes any fixture with any non-spine fields removed or nulled where allowed', async () => {
    let edited = 0;
    await fc.assert(
      fc.asyncProperty(thinned, async ({ fixture, data, changes }) => {
        if (changes.length > 0) edited++;
        expectAgreement(fixture.event, data, true);
        expect(await deliver(fixture.event, data)).toEqual([200, 'processed']);
      }),
      { numRuns: RUNS },
    );
    expect(edited).toBeGreaterThan(RUNS / 2);
  });

  it('answers 422 invalid_payload to any spine field removed or given a wrong type', async () => {
    let removals = 0;
    await fc.assert(
      fc.asyncProperty(broken, async ({ event, data, change }) => {
        if (change.endsWith('=undefined')) removals++;
        expectAgreement(event, data, false);
        expect(await deliver(event, data)).toEqual([422, 'invalid_payload']);
      }),
      { numRuns: RUNS },
    );
    expect(removals).toBeGreaterThan(RUNS / 10);
  });

  it('reads the spine of every fixed-contract event from a sparse fixture', () => {
    expect(SPARSE.map((f) => f.event).sort()).toEqual(FULL.map((f) => f.event).sort());
    for (const fixture of SPARSE) expectAgreement(fixture.event, fixture.data, true);
  });
});
