/**
 * The `schoolhooks` bin as a user starts it, from the sources: `node --import tsx
 * src/cli/index.ts …`, in a child process whose environment is this one's, less the variables a
 * test names (a secret or a credential the machine happens to have) unless the test gives them.
 * @module
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The repository's root. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The bin's source. */
export const CLI = join(ROOT, 'src/cli/index.ts');
/** tsx's loader, for `node --import`. */
export const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

/** The variables the API client reads its credentials and address from. */
export const SCHOOL_API_VARIABLES = [
  'SCHOOL_API_KEY',
  'SCHOOL_SELLER_ID',
  'SCHOOL_ID',
  'SCHOOL_API_URL',
] as const;

/** What a run of the bin printed, and how it exited. */
export interface BinRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** How the bin is started. */
export interface BinOptions {
  /** Variables set for it. */
  env?: Record<string, string> | undefined;
  /** Variables of this process it does not inherit, unless `env` sets them. */
  unset?: readonly string[];
  /** Its working directory; the repository's root by default. */
  cwd?: string | undefined;
}

/** Starts the bin with `args`. */
export function startBin(
  args: readonly string[],
  { env = {}, unset = [], cwd = ROOT }: BinOptions = {},
): ChildProcess {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  for (const name of unset) if (!(name in env)) delete childEnv[name];
  return spawn(process.execPath, ['--import', TSX, CLI, ...args], { cwd, env: childEnv });
}

/** Runs the bin with `args` to its end, `input` on its stdin. */
export function runBin(
  args: readonly string[],
  { input = '', ...options }: BinOptions & { input?: string } = {},
): Promise<BinRun> {
  const child = startBin(args, options);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin?.end(input);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
