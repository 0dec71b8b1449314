/**
 * Where the CLI gets the endpoint's secretKey: `--secret`, else `SCHOOL_WEBHOOK_SECRET`. The
 * value is never printed.
 * @module
 */

import { UsageError } from './errors.js';
import type { OptionSpec } from './options.js';

/** The environment variable the secret may come from. */
export const SECRET_ENV = 'SCHOOL_WEBHOOK_SECRET';

const SECRET_TEXT = `The endpoint's secretKey (default: $${SECRET_ENV}; prefer the variable:
a command-line argument shows in the shell history and in ps)`;

/** `--secret`, for the commands that sign with one secret. */
export const SECRET_OPTION = {
  type: 'string',
  value: 'S',
  help: SECRET_TEXT,
} as const satisfies OptionSpec;

/** `--secret`, repeatable, for the commands that accept any of several secrets. */
export const SECRETS_OPTION = {
  type: 'string',
  value: 'S',
  multiple: true,
  help: `${SECRET_TEXT}\nRepeat --secret to accept several (every active endpoint's key)`,
} as const satisfies OptionSpec;

/** The secrets given, in order; a usage error when there is none. */
export function secretsFrom(
  given: readonly string[] | string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): string[] {
  const fromArgs = (typeof given === 'string' ? [given] : (given ?? [])).filter((s) => s !== '');
  if (fromArgs.length > 0) return fromArgs;
  const fromEnv = env[SECRET_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return [fromEnv];
  throw new UsageError(`no secret: pass --secret or set ${SECRET_ENV}`);
}

/** One secret, for commands that sign. */
export function secretFrom(
  given: readonly string[] | string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): string {
  return secretsFrom(given, env)[0] as string;
}

/** Where the secret came from, to say so without saying what it is. */
export function secretSource(given: readonly string[] | string | undefined): string {
  const count = typeof given === 'string' ? 1 : (given?.length ?? 0);
  if (count === 0) return `$${SECRET_ENV}`;
  return count === 1 ? '--secret' : `${count} --secret values`;
}
