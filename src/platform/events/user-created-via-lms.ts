/**
 * `UserCreatedViaLms`: an employee created the user in the admin panel, or the API operation
 * user create (or user upsert, when it creates) did.
 * @module
 */

import { z } from 'zod';
import type { KnownOutput } from './known-output.js';
import { profileSchema, statesSchema, userSchema } from './entities.js';

/** `data` of `UserCreatedViaLms` (docs/platform.md#events): the user and, optionally, the profile. */
export const userCreatedViaLmsDataSchema = z.looseObject({
  user: userSchema,
  profile: profileSchema.nullish(),
  states: statesSchema.nullish(),
});
/** `data` of `UserCreatedViaLms`. */
export type UserCreatedViaLmsData = KnownOutput<typeof userCreatedViaLmsDataSchema>;
