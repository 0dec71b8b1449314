/**
 * How Bun and Deno run here: offline, resolving zod and the rest from node_modules. Bun with
 * --no-install; Deno with --cached-only, no lock file, and an empty DENO_DIR of the caller's,
 * so that either fails rather than download anything. Shared by the runtime matrix
 * (scripts/test-runtimes.mjs) and the bench's Bun and Deno servers (bench/run.ts).
 * @module
 */

import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The Bun and Deno binaries of the bun and deno npm packages. */
export const OFFLINE_BINARIES = {
  bun: join(root, 'node_modules', '.bin', 'bun'),
  deno: join(root, 'node_modules', '.bin', 'deno'),
};

/**
 * The command, arguments and environment that run `script` with `scriptArgs` on Bun or Deno,
 * offline. Deno may read files and the environment, and reach loopback only.
 * @param {'bun' | 'deno'} runtime
 * @param {string} script
 * @param {{ denoDir: string, scriptArgs?: string[], runtimeFlags?: string[] }} options
 * @returns {{ command: string, args: string[], env: Record<string, string> }}
 */
export function offlineRun(runtime, script, { denoDir, scriptArgs = [], runtimeFlags = [] }) {
  const args =
    runtime === 'bun'
      ? ['--no-install', ...runtimeFlags, script, ...scriptArgs]
      : [
          'run',
          '--allow-read',
          '--allow-env',
          '--allow-net=127.0.0.1',
          '--cached-only',
          '--no-lock',
          ...runtimeFlags,
          script,
          ...scriptArgs,
        ];
  const env = { DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' };
  return { command: OFFLINE_BINARIES[runtime], args, env };
}
