/**
 * `UserSignedUp`: the user signed up on their own.
 * @module
 */

import { z } from 'zod';
import type { KnownOutput } from './known-output.js';
import { profileSchema, statesSchema, userSchema } from './entities.js';

/**
 * `data` of `UserSignedUp` (docs/platform.md#events): the user (the spine), their profile (null while not
 * filled in, and possibly absent) and the sign-up UTM tags in `states.utmSignupParams`.
 *
 * @example
 * ```ts
 * const data = userSignedUpDataSchema.parse(event.data);
 * const source = data.states?.utmSignupParams?.utm_source;
 * ```
 */
export const userSignedUpDataSchema = z.looseObject({
  user: userSchema,
  profile: profileSchema.nullish(),
  states: statesSchema.nullish(),
});
/** `data` of `UserSignedUp`. */
export type UserSignedUpData = KnownOutput<typeof userSignedUpDataSchema>;
