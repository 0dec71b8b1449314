#!/usr/bin/env node
/**
 * The `schoolhooks` bin: listen, send, replay, sign, verify, simulate, schema, inbox,
 * reconcile. Runs {@link main} on the real process.
 * @module schoolhooks/cli
 */

import { errorLine, EXIT, messageOf, type CliIo } from './command.js';
import { lineWriter } from './line-writer.js';
import { main } from './main.js';

/** The real process's I/O. */
function processIo(): CliIo {
  return {
    out: lineWriter(process.stdout),
    err: lineWriter(process.stderr),
    async readStdin() {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    },
    stdinIsTty: process.stdin.isTTY === true,
    env: process.env,
    // Installed on demand: a SIGINT listener replaces Node's default of exiting at once.
    untilStopped: () =>
      new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      }),
  };
}

const io = processIo();
// No top-level await: the CommonJS build of this file must load too.
main(process.argv.slice(2), io).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    io.err(errorLine(undefined, `unexpected error: ${messageOf(error)}`));
    process.exitCode = EXIT.failure;
  },
);
