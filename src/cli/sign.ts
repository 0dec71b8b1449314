/**
 * `schoolhooks sign`: the signature header of a body read from stdin.
 * @module
 */

import { parseArgs } from 'node:util';
import { signBody } from '../testing/sign-body.js';
import { EXIT, parseOrUsage, UsageError, type CliCommand } from './command.js';
import { SECRET_HELP, secretFrom } from './secret.js';

/** The `sign` command. */
export const signCommand: CliCommand = {
  name: 'sign',
  summary: 'Print the signature of a body read from stdin',
  help: `Usage: schoolhooks sign [--secret S] < body.json

Prints the value of the \`signature\` header the platform would send with the body on
stdin: 64 lowercase hex characters, HMAC-SHA256 keyed by the secretKey as it is.

The signature covers every byte, a trailing newline too: pipe a file (< body.json) or
use printf '%s', not echo.

Options:
${SECRET_HELP}
  -h, --help      Show this help`,
  async run(args, io) {
    const { values } = parseOrUsage(() =>
      parseArgs({
        args: [...args],
        options: { secret: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      }),
    );
    if (values.help) {
      io.out(signCommand.help);
      return EXIT.ok;
    }
    const secret = secretFrom(values.secret, io.env);
    if (io.stdinIsTty) throw new UsageError('pipe the body on stdin: schoolhooks sign < body.json');
    io.out(signBody(await io.readStdin(), secret));
    return EXIT.ok;
  },
};
