/**
 * The two ways a command ends badly, each with its exit code and the one prefix every error
 * line of the CLI starts with.
 * @module
 */

/** Exit codes: 0 ok, 1 failure (e.g. a signature that does not verify), 2 usage. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** The command was used wrongly: exit code 2, with a pointer to `--help`. */
export class UsageError extends Error {
  override name = 'UsageError' as const;
}

/** The command ran and failed: exit code 1. */
export class CliFailure extends Error {
  override name = 'CliFailure' as const;
}

/**
 * An error line as the whole CLI writes it: `schoolhooks <command>: <message>`, or
 * `schoolhooks: <message>` before a command is known.
 */
export function errorLine(command: string | undefined, message: string): string {
  return `schoolhooks${command === undefined ? '' : ` ${command}`}: ${message}`;
}

export { messageOf } from '../utils/message-of.js';
