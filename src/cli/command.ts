/**
 * What every command of the `schoolhooks` CLI is made of: its options, its help (generated from
 * them), its run function, the I/O it may use and the errors that pick the exit code.
 * @module
 */

import { isHttpUrl } from '../testing/endpoint-config.js';
import { EXIT, UsageError } from './errors.js';
import {
  formatOptions,
  HELP_OPTION,
  parseOptions,
  type OptionSpecs,
  type OptionValues,
} from './options.js';
import { layout, wrapLine } from './wrap.js';

export { CliFailure, errorLine, EXIT, messageOf, UsageError } from './errors.js';

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
  readonly name: string;
  /** One line for the overview. */
  readonly summary: string;
  /** Its options, `--help` included: what it parses and what its help lists. */
  readonly options: OptionSpecs;
  /** The text `--help` prints, generated from the definition. */
  readonly help: string;
  /** Run with the arguments after the command's name; resolves to the exit code. */
  run(args: readonly string[], io: CliIo): Promise<number>;
}

/** What a command is defined with. */
export interface CommandDefinition<O extends OptionSpecs> {
  /** The word after `schoolhooks`. */
  name: string;
  /** One line for the overview. */
  summary: string;
  /** What follows `schoolhooks <name>` in the usage line; one entry per form. */
  usage: string | readonly string[];
  /**
   * The paragraphs between the usage and the options, laid out by {@link layout}: lines joined
   * and word-wrapped to 80 columns as in Markdown, a blank line between paragraphs, an indented
   * `  term     what it is` item on one source line of its own.
   */
  description: string;
  /** Its options; `--help` is added. */
  options: O;
  /** Whether it takes positional arguments. Default false. */
  positionals?: boolean;
  /** Run with the parsed arguments; resolves to the exit code. */
  run(args: { values: OptionValues<O>; positionals: string[] }, io: CliIo): Promise<number>;
}

/**
 * A command whose parsing and help both come from its option definitions.
 *
 * @example
 * ```ts
 * const hello = defineCommand({
 *   name: 'hello',
 *   summary: 'Say hello',
 *   usage: '[--name N]',
 *   description: 'Prints a greeting.',
 *   options: { name: { type: 'string', value: 'N', default: 'you', help: 'Who to greet' } },
 *   async run({ values }, io) {
 *     io.out(`hello, ${values.name}`);
 *     return EXIT.ok;
 *   },
 * });
 * ```
 */
export function defineCommand<const O extends OptionSpecs>(
  definition: CommandDefinition<O>,
): CliCommand {
  const options = { ...definition.options, help: HELP_OPTION };
  const forms = typeof definition.usage === 'string' ? [definition.usage] : definition.usage;
  const command = `schoolhooks ${definition.name} `;
  const help = [
    forms
      .map((form, i) =>
        wrapLine(`${i === 0 ? 'Usage:' : '      '} ${command}${form}`, 7 + command.length),
      )
      .join('\n'),
    layout(definition.description),
    `Options:\n${formatOptions(options)}`,
    layout(USAGE_ERROR_NOTE),
  ].join('\n\n');
  return {
    name: definition.name,
    summary: definition.summary,
    options,
    help,
    async run(args, io) {
      const parsed = parseOptions(options, args, { positionals: definition.positionals ?? false });
      if (parsed.values.help) {
        io.out(help);
        return EXIT.ok;
      }
      return definition.run(parsed as { values: OptionValues<O>; positionals: string[] }, io);
    },
  };
}

/** The last paragraph of every command's help. */
const USAGE_ERROR_NOTE = `A usage error (a bad option, argument, number, URL or secret) exits 2, before anything
is sent or changed.`;

/** The value of `--url`, which every sending command requires as an absolute http(s) URL. */
export function requireHttpUrl(url: string | undefined): string {
  if (url === undefined) throw new UsageError('--url is required');
  if (!isHttpUrl(url)) throw new UsageError('--url must be an http:// or https:// URL');
  return url;
}
