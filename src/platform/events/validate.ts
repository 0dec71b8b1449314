/**
 * Validating the `data` of a fixed-contract event on the hot path: the validator generated from
 * the bundled schema first (`data-validators.generated.ts`), Zod for the issues of a payload
 * that fails it, and Zod alone for a schema a receiver's `schemas` option put in its place.
 * @module
 */

import type { z } from 'zod';
import type { PayloadIssue } from '../../errors.js';
import { DATA_VALIDATORS } from './data-validators.generated.js';
import { eventDataSchemas, type FixedEventName } from './index.js';

/** The data to hand to handlers, or the Zod issues that reject it. */
export type DataValidation =
  { ok: true; data: Record<string, unknown> } | { ok: false; issues: PayloadIssue[] };

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
  if (schema === eventDataSchemas[name] && DATA_VALIDATORS[name](data)) return { ok: true, data };
  const result = schema.safeParse(data);
  if (result.success) return { ok: true, data: result.data as Record<string, unknown> };
  return {
    ok: false,
    issues: result.error.issues.map(({ path, code, message }) => ({ path, code, message })),
  };
}
