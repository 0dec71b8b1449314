/**
 * Where the CLI gets the endpoint's secretKey: `--secret`, else `SCHOOL_WEBHOOK_SECRET`. The
 * value is never printed.
 * @module
 */

import { ConfigError } from '../errors.js';
import { assertSecret } from '../platform/signature.js';
import type { CliIo } from './command.js';
import { errorLine, UsageError } from './errors.js';
import type { OptionSpec } from './options.js';

/** The environment variable the secret may come from. */
export const SECRET_ENV = 'SCHOOL_WEBHOOK_SECRET';

const SECRET_TEXT = `The endpoint's secretKey (default: $${SECRET_ENV}; prefer the variable: a command-line argument shows in the shell history and in ps)`;

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

/**
 * The secrets given, in order, each checked by the receiver's own rule (`assertSecret`): a
 * {@link UsageError} when there is none, or when one is empty or whitespace only, naming it by
 * where it came from and its place, never by its value: "the secret (--secret)" when there is one,
 * "secret #2 of the list (--secret)" when there are several. A secret with whitespace around it
 * is used as given, with a warning on stderr (the receiver's own warning, which `listen` silences
 * with its logger).
 */
export function secretsFrom(
  given: readonly string[] | string | undefined,
  io: Pick<CliIo, 'env' | 'err'>,
  command: string,
): string[] {
  const fromArgs = typeof given === 'string' ? [given] : (given ?? []);
  const fromEnv = io.env[SECRET_ENV];
  // An empty variable is an unset one (`SCHOOL_WEBHOOK_SECRET= cmd`); an empty --secret is a slip.
  const secrets =
    fromArgs.length > 0 ? fromArgs : fromEnv === undefined || fromEnv === '' ? [] : [fromEnv];
  if (secrets.length === 0) throw new UsageError(`no secret: pass --secret or set ${SECRET_ENV}`);
  const source = fromArgs.length > 0 ? '--secret' : `$${SECRET_ENV}`;
  secrets.forEach((secret, i) => {
    const name =
      secrets.length === 1 ? `the secret (${source})` : `secret #${i + 1} of the list (${source})`;
    checkSecret(secret, name, io, command);
  });
  return [...secrets];
}

/** One secret, for commands that sign. */
export function secretFrom(
  given: readonly string[] | string | undefined,
  io: Pick<CliIo, 'env' | 'err'>,
  command: string,
): string {
  return secretsFrom(given, io, command)[0] as string;
}

/** Where the secret came from, to say so without saying what it is. */
export function secretSource(given: readonly string[] | string | undefined): string {
  const count = typeof given === 'string' ? 1 : (given?.length ?? 0);
  if (count === 0) return `$${SECRET_ENV}`;
  return count === 1 ? '--secret' : `${count} --secret values`;
}

/**
 * One secret the CLI was given, checked by the receiver's own rule (`assertSecret`): a
 * {@link UsageError} naming it `name` (never its value) when it is empty, whitespace only or not
 * a string; a warning on stderr when it has whitespace around it (it is used as given).
 */
export function checkSecret(
  secret: unknown,
  name: string,
  io: Pick<CliIo, 'err'>,
  command: string,
): asserts secret is string {
  try {
    assertSecret(secret, name);
  } catch (error) {
    // The message names the secret by `name` only.
    if (error instanceof ConfigError) throw new UsageError(error.message);
    throw error;
  }
  if (secret.trim() !== secret) {
    io.err(
      errorLine(
        command,
        `warning: ${name} has spaces or a line break around it; it is used exactly as given, ` +
          'so signatures made with the key as shown differ: trim it if that was a copy-paste slip',
      ),
    );
  }
}
