/**
 * A plain predicate compiled from a Zod schema, for the hot path of the receiver.
 *
 * `schema.safeParse(data)` builds a full copy of `data` (its output) and records every issue; the
 * receiver only needs to know whether the payload passes, and the issues only when it does not.
 * A compiled check walks the parsed JSON once and allocates nothing. It is exact for the part of
 * Zod the event schemas use (loose objects, strings, numbers and integers, booleans, `unknown`,
 * arrays, string-keyed records, unions, enums, nullable, optional, refinements); for anything else it compiles
 * to nothing and the caller keeps using Zod. Zod stays the authority on a rejection, so a payload
 * this check refuses is parsed again by Zod for its issues.
 * @module
 */

import type { z } from 'zod';

/** True when a JSON value passes the schema it was compiled from. */
export type CompiledCheck = (value: unknown) => boolean;

/** The parts of a Zod v4 check definition the compiler reads. */
interface CheckDef {
  check: string;
  format?: string;
  minimum?: number;
  /** A refinement's predicate (`check: 'custom'`). */
  fn?: (value: unknown) => unknown;
  when?: unknown;
}

/** The parts of a Zod v4 schema definition the compiler reads. */
interface SchemaDef {
  type: string;
  checks?: readonly { _zod: { def: CheckDef } }[];
  innerType?: z.ZodType;
  element?: z.ZodType;
  options?: readonly z.ZodType[];
  shape?: Readonly<Record<string, z.ZodType>>;
  catchall?: z.ZodType;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  entries?: Readonly<Record<string, string | number>>;
}

/**
 * Compile a Zod schema into a predicate that accepts exactly the JSON values the schema accepts,
 * or undefined when the schema uses something the compiler does not know (the caller then keeps
 * using Zod for it).
 *
 * @example
 * ```ts
 * const check = compileCheck(z.looseObject({ id: z.number().int() }));
 * check?.({ id: 1, extra: true }); // true
 * ```
 */
export function compileCheck(schema: z.ZodType): CompiledCheck | undefined {
  try {
    return compile(schema);
  } catch (error) {
    if (error instanceof Unsupported) return undefined;
    throw error;
  }
}

class Unsupported extends Error {}

/** Whether this runtime lets code be made from strings (Workers and CSP-locked hosts do not). */
let canGenerate: boolean | undefined;

function generationAllowed(): boolean {
  if (canGenerate === undefined) {
    try {
      canGenerate = new Function('return true')() === true;
    } catch {
      canGenerate = false;
    }
  }
  return canGenerate;
}

/**
 * One generated function per schema: straight-line checks with every key name a literal, so the
 * engine sees one monomorphic function per payload shape rather than a tree of closures calling
 * each other through shared, megamorphic call sites.
 */
function compile(schema: z.ZodType): CompiledCheck {
  if (!generationAllowed()) throw new Unsupported();
  const emitter = new Emitter();
  const body = emitter.statements(schema, 'value');
  const factory = new Function(
    'constants',
    `"use strict";\n${emitter.preamble()}\nreturn function check(value) {\n${body}\nreturn true;\n};`,
  ) as (constants: readonly unknown[]) => CompiledCheck;
  return factory(emitter.constants);
}

/** Writes the checks of a schema as statements that `return false` on the first failure. */
class Emitter {
  readonly constants: unknown[] = [];
  private readonly helpers: string[] = [];
  private names = 0;

  preamble(): string {
    return this.helpers.join('\n');
  }

  private name(prefix: string): string {
    return `${prefix}${this.names++}`;
  }

  private constant(value: unknown): string {
    this.constants.push(value);
    return `constants[${this.constants.length - 1}]`;
  }

  /** A named helper function checking `schema`, for arrays, records and unions. */
  private helper(schema: z.ZodType): string {
    const name = this.name('check');
    const body = this.statements(schema, 'v');
    this.helpers.push(`function ${name}(v) {\n${body}\nreturn true;\n}`);
    return name;
  }

  statements(schema: z.ZodType, value: string): string {
    const def = definition(schema);
    const checks = this.checks(def, value);
    switch (def.type) {
      case 'unknown':
      case 'any':
        return checks;
      case 'string':
      case 'boolean':
        return `if (typeof ${value} !== '${def.type}') return false;\n${checks}`;
      case 'number':
        return `if (typeof ${value} !== 'number' || !Number.isFinite(${value})) return false;\n${checks}`;
      case 'null':
        return `if (${value} !== null) return false;`;
      case 'nullable':
        return `if (${value} !== null) {\n${this.statements(required(def.innerType), value)}\n}`;
      case 'optional':
        return `if (${value} !== undefined) {\n${this.statements(required(def.innerType), value)}\n}`;
      case 'enum': {
        const allowed = this.constant(new Set<unknown>(Object.values(def.entries ?? {})));
        return `if (!${allowed}.has(${value})) return false;\n${checks}`;
      }
      case 'union': {
        const options = (def.options ?? []).map((option) => this.helper(option));
        if (options.length === 0) throw new Unsupported();
        return `if (!(${options.map((option) => `${option}(${value})`).join(' || ')})) return false;\n${checks}`;
      }
      case 'array': {
        const element = this.helper(required(def.element));
        const i = this.name('i');
        return (
          `if (!Array.isArray(${value})) return false;\n` +
          `for (let ${i} = 0; ${i} < ${value}.length; ${i}++) if (!${element}(${value}[${i}])) return false;\n${checks}`
        );
      }
      case 'record':
        return this.record(def, value) + checks;
      case 'object':
        return this.object(def, value) + checks;
      default:
        throw new Unsupported();
    }
  }

  /**
   * Only the checks a JSON check decides exactly: a safe integer, a minimum string length, and a
   * refinement (`.refine(fn)`), whose own predicate is called once the value's shape has passed,
   * as Zod calls it. A predicate must answer `true`: anything else (a promise of an async
   * refinement included) fails here and is left to Zod.
   */
  private checks(def: SchemaDef, value: string): string {
    return (def.checks ?? [])
      .map(({ _zod }) => {
        const { check, format, minimum, fn, when } = _zod.def;
        if (check === 'custom' && typeof fn === 'function' && when === undefined) {
          return `if (${this.constant(fn)}(${value}) !== true) return false;`;
        }
        if (check === 'number_format' && format === 'safeint') {
          return `if (!Number.isSafeInteger(${value})) return false;`;
        }
        if (check === 'min_length' && typeof minimum === 'number' && def.type === 'string') {
          return `if (${value}.length < ${minimum}) return false;`;
        }
        throw new Unsupported();
      })
      .join('\n');
  }

  /** A string-keyed record; a value schema other than `unknown` is checked on every value. */
  private record(def: SchemaDef, value: string): string {
    const keyType = definition(required(def.keyType));
    if (keyType.type !== 'string' || (keyType.checks?.length ?? 0) > 0) throw new Unsupported();
    const isObject = `if (typeof ${value} !== 'object' || ${value} === null || Array.isArray(${value})) return false;\n`;
    const valueType = definition(required(def.valueType));
    if (valueType.type === 'unknown' || valueType.type === 'any') return isObject;
    const check = this.helper(required(def.valueType));
    const key = this.name('key');
    return (
      isObject +
      `for (const ${key} in ${value}) if (Object.hasOwn(${value}, ${key}) && !${check}(${value}[${key}])) return false;\n`
    );
  }

  /**
   * A loose object (`z.looseObject`): every key of the shape checked, any other let through. A
   * stripping or strict object changes what Zod outputs or accepts, so it is left to Zod.
   */
  private object(def: SchemaDef, value: string): string {
    const catchall = definition(required(def.catchall));
    if (catchall.type !== 'unknown') throw new Unsupported();
    const object = this.name('o');
    let out =
      `const ${object} = ${value};\n` +
      `if (typeof ${object} !== 'object' || ${object} === null || Array.isArray(${object})) return false;\n`;
    for (const [key, schema] of Object.entries(def.shape ?? {})) {
      const literal = JSON.stringify(key);
      const field = this.name('f');
      // As Zod decides: an absent key passes only for an optional field (not for `unknown`).
      const absent = isOptionalField(schema)
        ? ''
        : `if (!(${literal} in ${object})) return false;\n`;
      const inner = this.statements(schema, field);
      out += absent;
      if (inner !== '') out += `{\nconst ${field} = ${object}[${literal}];\n${inner}\n}\n`;
    }
    return out;
  }
}

function definition(schema: z.ZodType): SchemaDef {
  return (schema as unknown as { _zod: { def: SchemaDef } })._zod.def;
}

function required(schema: z.ZodType | undefined): z.ZodType {
  if (schema === undefined) throw new Unsupported();
  return schema;
}

/** Whether a field may be left out: `.optional()`; a default (which Zod fills in) is unsupported. */
function isOptionalField(schema: z.ZodType): boolean {
  const { optin, optout } = (schema as unknown as { _zod: { optin?: string; optout?: string } })
    ._zod;
  if (optin === undefined) return false;
  if (optin === 'optional' && optout === 'optional') return true;
  throw new Unsupported();
}
