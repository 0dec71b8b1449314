/**
 * Validating the `data` of a fixed-contract event on the hot path: a compiled check first,
 * Zod for the issues of a payload that fails it.
 * @module
 */

import type { z } from 'zod';
import type { PayloadIssue } from '../errors.js';
import { compileCheck, type CompiledCheck } from './compile-check.js';
import { eventDataSchemas, type FixedEventName } from './index.js';

/** The data to hand to handlers, or the Zod issues that reject it. */
export type DataValidation =
  { ok: true; data: Record<string, unknown> } | { ok: false; issues: PayloadIssue[] };

/**
 * Compiled on first use, per schema (a receiver's `schemas` option may replace one); `null`
 * where the schema cannot be compiled (Zod is used then).
 */
const checks = new WeakMap<z.ZodType, CompiledCheck | null>();

/**
 * Validate `data` against the schema of `name`. A payload that passes is handed on as parsed:
 * every event schema is a loose object without defaults or transforms, so Zod's output would
 * be a copy equal to it. One that fails is parsed by Zod, which has the last word.
 */
export function validateEventData(
  name: FixedEventName,
  data: Record<string, unknown>,
  schema: z.ZodType = eventDataSchemas[name],
): DataValidation {
  let check = checks.get(schema);
  if (check === undefined) {
    check = compileCheck(schema) ?? null;
    checks.set(schema, check);
  }
  if (check !== null && check(data)) return { ok: true, data };
  const result = schema.safeParse(data);
  if (result.success) return { ok: true, data: result.data as Record<string, unknown> };
  return {
    ok: false,
    issues: result.error.issues.map(({ path, code, message }) => ({ path, code, message })),
  };
}
