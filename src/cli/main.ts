/**
 * The `schoolhooks` command line, apart from the process it runs in: arguments in, exit code out.
 * @module
 */

import packageJson from '../../package.json' with { type: 'json' };
import { didYouMean } from '../utils/nearest-name.js';
import {
  CliFailure,
  errorLine,
  EXIT,
  messageOf,
  UsageError,
  type CliCommand,
  type CliIo,
} from './command.js';
import { healthCommand } from './health.js';
import { inboxCommand } from './inbox.js';
import { listenCommand } from './listen.js';
import { reconcileCommand } from './reconcile.js';
import { replayCommand } from './replay.js';
import { schemaCommand } from './schema.js';
import { sendCommand } from './send.js';
import { signCommand } from './sign.js';
import { simulateCommand } from './simulate.js';
import { verifyCommand } from './verify.js';
import { layout } from './wrap.js';

/** Every command, in the order the overview lists them. */
export const COMMANDS: readonly CliCommand[] = [
  listenCommand,
  sendCommand,
  replayCommand,
  signCommand,
  verifyCommand,
  simulateCommand,
  schemaCommand,
  inboxCommand,
  reconcileCommand,
  healthCommand,
];

const OVERVIEW = layout(`Usage: schoolhooks <command> [options]

Receive, send and check the school platform's signed webhooks while developing.

Commands:
${COMMANDS.map((command) => `  ${command.name.padEnd(10)} ${command.summary}`).join('\n')}

The secret is the endpoint's secretKey: --secret, or the SCHOOL_WEBHOOK_SECRET variable.

  schoolhooks <command> --help   the options of a command
  schoolhooks --version          the version

Exit codes: 0 ok, 1 failure, 2 usage error: a bad option, argument, number, URL or
secret (empty or whitespace only), told before anything is sent or changed.`);

const NAMES = COMMANDS.map((command) => command.name);

/**
 * Run the CLI with `args` (what follows `schoolhooks`) on `io`; resolves to the exit code:
 * 0 ok, 1 failure, 2 usage.
 *
 * @example
 * ```ts
 * process.exitCode = await main(process.argv.slice(2), io);
 * ```
 */
export async function main(args: readonly string[], io: CliIo): Promise<number> {
  const [name, ...rest] = args;
  if (name === undefined) {
    io.err(OVERVIEW);
    return EXIT.usage;
  }
  if (name === '--version' || name === '-v') {
    io.out(packageJson.version);
    return EXIT.ok;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    const [topic] = rest;
    if (topic === undefined) {
      io.out(OVERVIEW);
      return EXIT.ok;
    }
    const command = COMMANDS.find((candidate) => candidate.name === topic);
    if (command === undefined) return unknownCommand(topic, io);
    io.out(command.help);
    return EXIT.ok;
  }
  const command = COMMANDS.find((candidate) => candidate.name === name);
  if (!command) return unknownCommand(name, io);
  try {
    return await command.run(rest, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(
        `${errorLine(command.name, error.message)}\nRun 'schoolhooks ${command.name} --help' for usage.`,
      );
      return EXIT.usage;
    }
    // A CliFailure is an expected failure, told as it is; anything else is a bug to report.
    const prefix = error instanceof CliFailure ? '' : 'unexpected error: ';
    io.err(errorLine(command.name, `${prefix}${messageOf(error)}`));
    return EXIT.failure;
  }
}

function unknownCommand(name: string, io: CliIo): number {
  const option = name.startsWith('-');
  const near = didYouMean(name, option ? ['--help', '--version'] : NAMES);
  io.err(
    `${errorLine(undefined, `unknown ${option ? 'option' : 'command'} '${name}'${near}`)}\nRun 'schoolhooks --help' for the commands.`,
  );
  return EXIT.usage;
}
