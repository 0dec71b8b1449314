/**
 * The session resource of the session-token operation (docs/platform.md#session-tokens).
 * @module
 */

import { z } from 'zod';

// ISO 8601 with `Z`, an offset, or (leniently) no zone at all; kept as strings, never parsed to
// Date, so the object stays exactly what the platform sent.
const isoDateTime = z.iso.datetime({ offset: true, local: true });

/**
 * A session as the platform returns it. Fields the platform may add later are accepted and left
 * out of the result.
 *
 * @example
 * ```ts
 * const session = sessionSchema.parse(JSON.parse(text).payload.session);
 * ```
 */
export const sessionSchema = z.object({
  id: z.int(),
  createdAt: isoDateTime,
  updatedAt: isoDateTime,
  archivedAt: isoDateTime.nullable(),
  userId: z.int(),
  uuid: z.guid(),
  deviceUuid: z.guid(),
  /** The session token: full sign-in to the user's account. Secret. */
  token: z.string().min(1),
  alive: z.boolean(),
  isOnline: z.boolean(),
  appLocation: z.string().nullable(),
  appLocationParams: z.record(z.string(), z.unknown()),
  language: z.string().nullable(),
  timezone: z.int().nullable(),
  appVersion: z.string().nullable(),
  launcher: z.string(),
  lastActivityAt: isoDateTime,
  expireAt: isoDateTime,
});

/**
 * A user session. `token` signs the user in without a password for about two years: never log
 * the session object, send the token only over HTTPS and never publish a link that carries it.
 *
 * @example
 * ```ts
 * const { session }: { session: Session } = await api.createSessionToken({ userId });
 * const url = buildSignInUrl(schoolUrl, 'courses', session.token);
 * ```
 */
export type Session = z.infer<typeof sessionSchema>;

/** The success body of the session-token operation: `{ success, code, payload }` (4.1). */
export const sessionTokenResponseSchema = z.object({
  payload: z.object({ isCreated: z.boolean(), session: sessionSchema }),
});
