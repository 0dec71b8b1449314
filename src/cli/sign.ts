/**
 * `schoolhooks sign`: the signature header of a body read from stdin.
 * @module
 */

import { signBody } from '../testing/sign-body.js';
import { defineCommand, EXIT, UsageError } from './command.js';
import { SECRET_OPTION, secretFrom } from './secret.js';

/** The `sign` command. */
export const signCommand = defineCommand({
  name: 'sign',
  summary: 'Print the signature of a body read from stdin',
  usage: '[--secret S] < body.json',
  description: `Prints the value of the \`signature\` header the platform would send with the body on
stdin: 64 lowercase hex characters, HMAC-SHA256 keyed by the secretKey as it is.

The signature covers every byte, a trailing newline too: pipe a file (< body.json) or
use printf '%s', not echo. An empty stdin is a usage error: the platform never sends an
empty body.`,
  options: { secret: SECRET_OPTION },
  async run({ values }, io) {
    const secret = secretFrom(values.secret, io, 'sign');
    if (io.stdinIsTty) throw new UsageError('pipe the body on stdin: schoolhooks sign < body.json');
    const body = await io.readStdin();
    if (body.length === 0) {
      throw new UsageError(
        'stdin is empty: pipe the body to sign, e.g. schoolhooks sign < body.json',
      );
    }
    io.out(signBody(body, secret));
    return EXIT.ok;
  },
});
