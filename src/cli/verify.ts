/**
 * `schoolhooks verify`: check a signature against a body read from stdin.
 * @module
 */

import { parseArgs } from 'node:util';
import { verifySignature } from '../signature.js';
import { EXIT, parseOrUsage, UsageError, type CliCommand } from './command.js';
import { signatureFailureOf } from '../signature-failure.js';
import { SIGNATURE_CAUSES } from './signature-causes.js';
import { SECRET_HELP, secretsFrom } from './secret.js';

/** The `verify` command. */
export const verifyCommand: CliCommand = {
  name: 'verify',
  summary: 'Check a signature against a body read from stdin',
  help: `Usage: schoolhooks verify --signature HEX [--secret S]... < body.json

Checks the \`signature\` header value against the body on stdin, in constant time, as a
receiver does. Exit code 0 when it matches, 1 when it does not.

Options:
  --signature HEX The signature header value (64 hex characters)
${SECRET_HELP}
                  Repeat --secret to try several (every active endpoint's key)
  -h, --help      Show this help`,
  async run(args, io) {
    const { values } = parseOrUsage(() =>
      parseArgs({
        args: [...args],
        options: {
          signature: { type: 'string' },
          secret: { type: 'string', multiple: true },
          help: { type: 'boolean', short: 'h' },
        },
      }),
    );
    if (values.help) {
      io.out(verifyCommand.help);
      return EXIT.ok;
    }
    const secrets = secretsFrom(values.secret, io.env);
    if (values.signature === undefined) throw new UsageError('--signature is required');
    if (io.stdinIsTty)
      throw new UsageError(
        'pipe the body on stdin: schoolhooks verify --signature HEX < body.json',
      );
    const body = await io.readStdin();
    const malformed = signatureFailureOf(values.signature);
    if (malformed.reason === 'malformed') {
      io.err(`invalid: ${malformed.message}. ${malformed.causes[0]}`);
      return EXIT.failure;
    }
    if (await verifySignature(body, values.signature, secrets)) {
      io.out('valid: the signature matches the body');
      return EXIT.ok;
    }
    io.err(
      `invalid: the signature does not match the body with ${secrets.length === 1 ? 'this secret' : 'any of these secrets'}.\n${SIGNATURE_CAUSES}`,
    );
    return EXIT.failure;
  },
};
