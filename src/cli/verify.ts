/**
 * `schoolhooks verify`: check a signature against a body read from stdin.
 * @module
 */

import { verifySignature } from '../platform/signature.js';
import { CliFailure, defineCommand, EXIT, UsageError } from './command.js';
import { signatureFailureOf } from '../platform/signature-failure.js';
import { SIGNATURE_CAUSES } from './signature-causes.js';
import { SECRETS_OPTION, secretsFrom } from './secret.js';

/** The `verify` command. */
export const verifyCommand = defineCommand({
  name: 'verify',
  summary: 'Check a signature against a body read from stdin',
  usage: '--signature HEX [--secret S]... < body.json',
  description: `Checks the \`signature\` header value against the body on stdin, in constant time, as a
receiver does. Exit code 0 when it matches, 1 when it does not.`,
  options: {
    signature: {
      type: 'string',
      value: 'HEX',
      help: 'The signature header value (64 hex characters; required)',
    },
    secret: SECRETS_OPTION,
  },
  async run({ values }, io) {
    const secrets = secretsFrom(values.secret, io, 'verify');
    if (values.signature === undefined) throw new UsageError('--signature is required');
    if (io.stdinIsTty)
      throw new UsageError(
        'pipe the body on stdin: schoolhooks verify --signature HEX < body.json',
      );
    const body = await io.readStdin();
    const malformed = signatureFailureOf(values.signature);
    if (malformed.reason === 'malformed') {
      throw new CliFailure(`invalid: ${malformed.message}. ${malformed.causes[0]}`);
    }
    if (await verifySignature(body, values.signature, secrets)) {
      io.out('valid: the signature matches the body');
      return EXIT.ok;
    }
    throw new CliFailure(
      `invalid: the signature does not match the body with ${secrets.length === 1 ? 'this secret' : 'any of these secrets'}.\n${SIGNATURE_CAUSES}`,
    );
  },
});
