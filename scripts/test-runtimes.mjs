#!/usr/bin/env node
/**
 * The runtime matrix: build the package once, then run the same smoke suite
 * (`test/runtimes/smoke.mjs`) on Node, Bun, Deno and workerd, each in its own process, and print
 * a pass/fail summary per runtime. Exits 1 if any runtime fails or does not report.
 *
 *   node scripts/test-runtimes.mjs                 build, then every runtime
 *   node scripts/test-runtimes.mjs --no-build      reuse dist/ (after `npm run build`)
 *   node scripts/test-runtimes.mjs --only=deno,workerd
 *
 * Offline: Bun runs with --no-install and Deno with --cached-only and an empty DENO_DIR, so both
 * resolve zod and the rest from node_modules and fail rather than download anything. Node 22 and
 * 24 come from the npm registry's `node` package, installed with `npm ci` in
 * test/runtimes/node-versions/ (done here when missing): a package of its own, because as
 * dependencies of the root they would link node_modules/.bin/node, and every npm script would
 * then run on one of them instead of the Node that runs npm.
 * @module
 */

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPORT_PREFIX } from '../test/runtimes/smoke.mjs';
import { offlineRun } from './offline-runtimes.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = (name) => join(root, 'node_modules', '.bin', name);
const TIMEOUT_MS = 120_000;

const args = process.argv.slice(2);
const only = args
  .find((arg) => arg.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');

const denoDir = mkdtempSync(join(tmpdir(), 'schoolhooks-deno-'));
const nodeVersions = join(root, 'test', 'runtimes', 'node-versions');
/** The binary of a Node version installed in test/runtimes/node-versions/. */
const nodeBin = (alias) => join(nodeVersions, 'node_modules', alias, 'bin', 'node');

/**
 * @typedef {{
 *   name: string,
 *   command: string,
 *   args: string[],
 *   env?: Record<string, string>,
 *   crypto?: 'node:crypto' | 'web-crypto',
 * }} Runtime
 */

/** @type {Runtime[]} */
const runtimes = [
  {
    name: 'node',
    command: process.execPath,
    args: ['test/runtimes/entry.mjs'],
    // The reason the core prefers node:crypto (docs/maintainers/benchmarks.md): it must take it where it can.
    crypto: 'node:crypto',
  },
  ...['node22', 'node24'].map((alias) => ({
    name: alias,
    command: nodeBin(alias),
    args: ['test/runtimes/entry.mjs'],
    crypto: /** @type {const} */ ('node:crypto'),
  })),
  { name: 'bun', ...offlineRun('bun', 'test/runtimes/entry.mjs', { denoDir }) },
  { name: 'deno', ...offlineRun('deno', 'test/runtimes/entry.mjs', { denoDir }) },
  {
    name: 'workerd',
    command: process.execPath,
    args: ['test/runtimes/workerd.mjs'],
    // Workers without nodejs_compat have no node:crypto: the point of the Web Crypto fallback.
    crypto: 'web-crypto',
  },
].filter((runtime) => only === undefined || only.includes(runtime.name));

if (runtimes.length === 0) {
  console.error(`no runtime matches --only=${only?.join(',')}`);
  process.exit(2);
}

try {
  const missing = runtimes.filter(
    (runtime) => runtime.command.startsWith(nodeVersions) && !existsSync(runtime.command),
  );
  if (missing.length > 0) {
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const installed = await run(
      npm,
      ['ci', '--prefix', nodeVersions, '--no-audit', '--no-fund'],
      {},
    );
    if (installed.code !== 0) {
      console.error(installed.output);
      console.error(`npm ci in ${nodeVersions} failed (exit ${installed.code})`);
      process.exit(1);
    }
  }
  if (!args.includes('--no-build')) {
    const started = Date.now();
    const built = await run(bin('tsup'), ['--silent'], {});
    if (built.code !== 0) {
      console.error(built.output);
      console.error(`build failed (exit ${built.code})`);
      process.exit(1);
    }
    console.log(`built dist/ in ${seconds(Date.now() - started)}`);
  }

  const outcomes = await Promise.all(runtimes.map(check));
  console.log('\nruntime matrix');
  for (const { runtime, ok, label, seconds: took, cases, failures } of outcomes) {
    console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${runtime.name.padEnd(8)} ${label} ${cases} ${took}`);
    for (const failure of failures) console.log(`          x ${failure}`);
  }
  const failed = outcomes.filter((outcome) => !outcome.ok);
  console.log(
    failed.length === 0
      ? `\nall ${outcomes.length} runtimes passed`
      : `\n${failed.length} of ${outcomes.length} runtimes failed: ${failed.map((f) => f.runtime.name).join(', ')}`,
  );
  process.exitCode = failed.length === 0 ? 0 : 1;
} finally {
  rmSync(denoDir, { recursive: true, force: true });
}

/**
 * Run one runtime and judge its report.
 * @param {Runtime} runtime
 */
async function check(runtime) {
  const started = Date.now();
  const { code, output, timedOut } = await run(runtime.command, runtime.args, runtime.env ?? {});
  const took = seconds(Date.now() - started);
  const line = output.split('\n').find((text) => text.startsWith(REPORT_PREFIX));
  /** @type {import('../test/runtimes/smoke.mjs').SmokeReport | undefined} */
  const report = line === undefined ? undefined : JSON.parse(line.slice(REPORT_PREFIX.length));
  if (report === undefined) {
    const why = timedOut
      ? `timed out after ${TIMEOUT_MS / 1000} s`
      : `exited ${code} without a report`;
    return {
      runtime,
      ok: false,
      label: 'no report'.padEnd(52),
      seconds: took,
      cases: ''.padEnd(14),
      failures: [why, ...output.trim().split('\n').slice(-15)],
    };
  }
  const failures = report.results
    .filter((result) => !result.ok)
    .map((result) => `${result.name}: ${result.error}`);
  if (runtime.crypto !== undefined && report.crypto.actual !== runtime.crypto) {
    failures.push(
      `verified with ${report.crypto.actual}; ${runtime.name} must use ${runtime.crypto}`,
    );
  }
  if (code !== 0) failures.push(`exited ${code}`);
  const passed = report.results.length - report.results.filter((result) => !result.ok).length;
  return {
    runtime,
    ok: failures.length === 0,
    label: `${report.runtime}, ${report.crypto.actual}`.padEnd(52),
    seconds: took,
    cases: `${passed}/${report.results.length} cases`.padEnd(14),
    failures,
  };
}

/**
 * Run a command in the repository, collecting stdout and stderr together.
 * @param {string} command
 * @param {string[]} commandArgs
 * @param {Record<string, string>} env
 * @returns {Promise<{ code: number | null, output: string, timedOut: boolean }>}
 */
function run(command, commandArgs, env) {
  return new Promise((resolve) => {
    const child = spawn(command, commandArgs, {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: TIMEOUT_MS,
      killSignal: 'SIGKILL',
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => {
      resolve({ code: null, output: `${output}\n${error.message}`, timedOut: false });
    });
    // SIGKILL comes from the `timeout` above (or the OOM killer: a failure either way).
    child.on('close', (code, signal) => resolve({ code, output, timedOut: signal === 'SIGKILL' }));
  });
}

function seconds(ms) {
  return `${(ms / 1000).toFixed(1)} s`;
}
