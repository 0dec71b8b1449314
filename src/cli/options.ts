/**
 * A command's options, defined once: node:util's parseArgs reads them, the help lists them, and a
 * mistyped one is answered with the nearest ("did you mean"), so the three cannot drift apart.
 * @module
 */

import { parseArgs } from 'node:util';
import { didYouMean } from '../utils/nearest-name.js';
import { UsageError } from './errors.js';
import { wrapLine } from './wrap.js';

/** One option of a command. */
export interface OptionSpec {
  /** `string` takes a value (`--url URL`), `boolean` is a flag (`--raw`). */
  readonly type: 'string' | 'boolean';
  /** One letter for `-h` style use. */
  readonly short?: string;
  /** The option may be repeated; its values are collected in order. */
  readonly multiple?: boolean;
  /** The value when the option is not given; the help shows it. */
  readonly default?: string;
  /** How the help names the value: `URL`, `N`. Default `VALUE`. */
  readonly value?: string;
  /**
   * What the option does, for the help, word-wrapped there: write no line breaks but between
   * paragraphs (each starts on a line of its own).
   */
  readonly help: string;
}

/** A command's options by long name (without the leading `--`). */
export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

/** The parsed value of each option, typed from its definition. */
export type OptionValues<O extends OptionSpecs> = {
  -readonly [K in keyof O]: O[K] extends { type: 'boolean' }
    ? boolean | undefined
    : O[K] extends { multiple: true }
      ? string[] | undefined
      : O[K] extends { default: string }
        ? string
        : string | undefined;
};

/** `--help`, which every command has. */
export const HELP_OPTION = {
  type: 'boolean',
  short: 'h',
  help: 'Show this help',
} as const satisfies OptionSpec;

/** Where the help text of an option starts. */
const HELP_COLUMN = 18;

/**
 * The Options section of a command's help, one entry per definition, in order: the flag, then
 * its help from column 18 (on the next line when the flag leaves less than two spaces), each line
 * of the help a paragraph word-wrapped to 80 columns, the default closing the first.
 */
export function formatOptions(options: OptionSpecs): string {
  const indent = ' '.repeat(HELP_COLUMN);
  return Object.entries(options)
    .map(([name, spec]) => {
      const flag = `  ${spec.short ? `-${spec.short}, ` : ''}--${name}${
        spec.type === 'string' ? ` ${spec.value ?? 'VALUE'}` : ''
      }`;
      const beside = flag.length <= HELP_COLUMN - 2;
      const [first = '', ...rest] = spec.help.split('\n');
      const paragraphs = [
        spec.default === undefined ? first : `${first} (default ${spec.default})`,
        ...rest,
      ];
      const text = paragraphs
        .map((paragraph, i) =>
          wrapLine(
            i === 0 && beside ? `${flag.padEnd(HELP_COLUMN)}${paragraph}` : `${indent}${paragraph}`,
            HELP_COLUMN,
          ),
        )
        .join('\n');
      return beside ? text : `${flag}\n${text}`;
    })
    .join('\n');
}

/**
 * Parse `args` against `options`: the values typed from the definitions and the positionals.
 * Every mistake is a {@link UsageError} in our own words that never repeats a value (a secret
 * typed in the wrong place must not be echoed): an unknown option with the nearest known one, an
 * option missing its value, a value given to a flag, a positional where none is taken.
 */
export function parseOptions<O extends OptionSpecs>(
  options: O,
  args: readonly string[],
  { positionals: allowPositionals = false }: { positionals?: boolean } = {},
): { values: OptionValues<O>; positionals: string[] } {
  const config = Object.fromEntries(
    Object.entries(options).map(([name, { type, short, multiple, default: value }]) => [
      name,
      {
        type,
        ...(short === undefined ? {} : { short }),
        ...(multiple === undefined ? {} : { multiple }),
        ...(value === undefined ? {} : { default: multiple ? [value] : value }),
      },
    ]),
  );
  const { tokens } = parseArgs({
    args: [...args],
    options: config,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const longNames = Object.keys(options).map((name) => `--${name}`);
  for (const token of tokens) {
    if (token.kind === 'positional' && !allowPositionals) {
      throw new UsageError('unexpected argument: this command takes no positional arguments');
    }
    if (token.kind !== 'option') continue;
    const spec = options[token.name];
    if (spec === undefined) {
      throw new UsageError(
        `unknown option '${token.rawName}'${didYouMean(token.rawName, longNames)}`,
      );
    }
    if (spec.type === 'boolean' && token.value !== undefined) {
      throw new UsageError(`${token.rawName} takes no value`);
    }
    if (spec.type === 'string' && token.value === undefined) {
      throw new UsageError(`${token.rawName} needs a value`);
    }
    if (spec.type === 'string' && !token.inlineValue && /^-./.test(token.value ?? '')) {
      throw new UsageError(
        `${token.rawName} needs a value; to give one that starts with "-", write --${token.name}=VALUE`,
      );
    }
    if (
      !spec.multiple &&
      tokens.some((t) => t.kind === 'option' && t.name === token.name && t !== token)
    ) {
      throw new UsageError(`--${token.name} is given more than once`);
    }
  }
  const parsed = parseArgs({
    args: [...args],
    options: config,
    strict: true,
    allowPositionals,
  });
  return { values: parsed.values as OptionValues<O>, positionals: parsed.positionals };
}
