/**
 * `UserTgConnected`: the user linked a messenger account.
 * @module
 */

import { z } from 'zod';
import type { KnownOutput } from './known-output.js';
import { profileSchema, statesSchema, userSchema } from './entities.js';

/**
 * `data` of `UserTgConnected` (docs/platform.md#events): the user with the current `tgId`, optionally the
 * profile, and `prevTgId`, the previous tgId or null when there was none.
 */
export const userTgConnectedDataSchema = z.looseObject({
  user: userSchema,
  profile: profileSchema.nullish(),
  // A data member docs/platform.md#events lists without "optional": present, a number or null.
  prevTgId: z.number().nullable(),
  states: statesSchema.nullish(),
});
/** `data` of `UserTgConnected`. */
export type UserTgConnectedData = KnownOutput<typeof userTgConnectedDataSchema>;
