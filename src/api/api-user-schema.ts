/**
 * The user the API's user operations answer (docs/platform.md#users-groups-and-exports), as a
 * tolerant Zod schema: the user entity of the events, with the fields these answers mark optional
 * (`uuid?`, `domain?`, `updatedAt?`, and the profile's) allowed to be null too, and the profile's
 * `contact` typed.
 * @module
 */

import { z } from 'zod';
import {
  avatarSchema,
  profileSchema,
  titleStateSchema,
  userSchema,
} from '../platform/events/entities.js';
import type { KnownOutput } from '../platform/events/known-output.js';

const maybeText = z.string().nullish();

/** A profile's contacts (`profile.contact`): each may be absent or null. */
export const apiUserContactSchema = z.looseObject({
  phone: maybeText,
  email: maybeText,
  messengerUrl: maybeText,
});
/** A profile's contacts. */
export type ApiUserContact = KnownOutput<typeof apiUserContactSchema>;

/**
 * A user as `createUser`, `updateUser`, `upsertUser` and `findUser` resolve to it. Only `id` is
 * required; every other field is typed when present and may be absent or null; fields the
 * platform adds later pass through.
 *
 * @example
 * ```ts
 * const user = apiUserSchema.parse(answer.payload.user);
 * console.log(user.id, user.email, user.profile?.firstName);
 * ```
 */
export const apiUserSchema = userSchema.extend({
  uuid: maybeText,
  domain: maybeText,
  updatedAt: maybeText,
  profile: profileSchema
    .extend({
      updatedAt: maybeText,
      avatar: avatarSchema.nullish(),
      titleState: titleStateSchema.nullish(),
      contact: apiUserContactSchema.nullish(),
    })
    .nullish(),
});
/** A user as the API's user operations answer it. */
export type ApiUser = KnownOutput<typeof apiUserSchema>;
