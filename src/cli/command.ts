/**
 * What every command of the `schoolhooks` CLI is made of: its help, its run function, the I/O it
 * may use and the errors that pick the exit code.
 * @module
 */

import { isHttpUrl } from '../testing/endpoint-config.js';

/** Exit codes: 0 ok, 1 failure (e.g. a signature that does not verify), 2 usage. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** Where a command reads and writes; the real process in the bin, anything in a test. */
export interface CliIo {
  /** Write one line (or several) to stdout. */
  out(text: string): void;
  /** Write one line (or several) to stderr. */
  err(text: string): void;
  /** The whole of stdin, as bytes. */
  readStdin(): Promise<Uint8Array>;
  /** Whether stdin is a terminal (nothing piped in). */
  readonly stdinIsTty: boolean;
  /** The environment variables. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Resolves when the user asks the process to stop (Ctrl-C, SIGTERM). */
  untilStopped(): Promise<void>;
}

/** One subcommand. */
export interface CliCommand {
  /** The word after `schoolhooks`. */
  name: string;
  /** One line for the overview. */
  summary: string;
  /** The text `--help` prints. */
  help: string;
  /** Run with the arguments after the command's name; resolves to the exit code. */
  run(args: readonly string[], io: CliIo): Promise<number>;
}

/** The command was used wrongly: exit code 2, with a pointer to `--help`. */
export class UsageError extends Error {
  override name = 'UsageError' as const;
}

/** The value of `--url`, which every sending command requires as an absolute http(s) URL. */
export function requireHttpUrl(url: string | undefined): string {
  if (url === undefined) throw new UsageError('--url is required');
  if (!isHttpUrl(url)) throw new UsageError('--url must be an http:// or https:// URL');
  return url;
}

/** The command ran and failed: exit code 1. */
export class CliFailure extends Error {
  override name = 'CliFailure' as const;
}

/**
 * Run node:util's parseArgs, turning its errors into a {@link UsageError} that never repeats an
 * argument's value (a secret typed in the wrong place must not be echoed).
 */
export function parseOrUsage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
      throw new UsageError('unexpected argument: this command takes no more positional arguments');
    }
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
      throw new UsageError((error as Error).message);
    }
    throw error;
  }
}

export { messageOf } from '../message-of.js';
