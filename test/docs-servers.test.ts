/**
 * A newcomer's path, run: the README's receiver and the first server of each framework page that
 * listens on a port are started as written (`schoolhooks` resolved to the sources, port 3000
 * replaced by a free one), and `schoolhooks send PaymentCompleted` (the command the pages give)
 * gets each one's delivery answered 200 `processed` and its handler run.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { main } from '../src/cli/main.js';
import { SECRET } from './helpers/deliveries.js';
import { codeBlocks, ROOT } from './helpers/markdown.js';
import { freePort } from './helpers/redis.js';

const DIR = join(ROOT, '.docs-run');
const children: ChildProcess[] = [];

afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(DIR, { recursive: true, force: true });
});

/** The page's first `ts` block, started on `port`, with what it printed so far. */
function start(page: string, port: number): { output: () => string } {
  const block = codeBlocks(page).find((candidate) => candidate.lang === 'ts')!;
  expect(block.body).toMatch(/\b3000\b/);
  mkdirSync(DIR, { recursive: true });
  const file = join(DIR, `${page.replaceAll('/', '-')}.mts`);
  writeFileSync(file, block.body.replaceAll(/\b3000\b/g, String(port)));
  // The NestJS page's decorators need experimentalDecorators, as its text asks of a tsconfig.json.
  const tsconfig = join(DIR, 'tsconfig.json');
  writeFileSync(
    tsconfig,
    JSON.stringify({
      extends: '../tsconfig.json',
      include: ['../src', '../src/adapters', '*.mts'],
    }),
  );
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', './test/helpers/source-packages.mjs', file],
    {
      cwd: ROOT,
      env: { ...process.env, SCHOOL_WEBHOOK_SECRET: SECRET, TSX_TSCONFIG_PATH: tsconfig },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { output: () => output };
}

/** Resolves once something accepts connections on the port (no request: it would be one). */
function listening(port: number, output: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', (error) =>
      reject(new Error(`not listening yet: ${error.message}\n${output}`)),
    );
  });
}

/** `schoolhooks send PaymentCompleted --url <url>`, in process: its exit code and stdout. */
async function send(url: string): Promise<{ code: number; stdout: string }> {
  let stdout = '';
  const code = await main(['send', 'PaymentCompleted', '--url', url], {
    out: (text) => (stdout += `${text}\n`),
    err: (text) => (stdout += `${text}\n`),
    readStdin: async () => new Uint8Array(),
    stdinIsTty: true,
    env: { SCHOOL_WEBHOOK_SECRET: SECRET },
    untilStopped: () => new Promise(() => {}),
  });
  return { code, stdout };
}

describe('the first server of each page, sent a delivery as the page says', () => {
  it.each([
    'README.md',
    'docs/frameworks/express.md',
    'docs/frameworks/hono.md',
    'docs/frameworks/node.md',
    'docs/frameworks/fastify.md',
    'docs/frameworks/koa.md',
    'docs/frameworks/nestjs.md',
  ])(
    '%s: 200 processed, and the handler ran',
    async (page) => {
      const port = await freePort();
      const server = start(page, port);
      const url = `http://127.0.0.1:${port}/webhooks/school`;
      await vi.waitFor(() => listening(port, server.output()), {
        timeout: 45_000,
        interval: 100,
      });
      const { code, stdout } = await send(url);
      expect(stdout).toMatch(/\b200\b/);
      expect(stdout).toContain('"outcome":"processed"');
      expect(code).toBe(0);
      await vi.waitFor(() => expect(server.output()).toMatch(/grant access to user \d+/), {
        timeout: 5_000,
      });
      expect(server.output()).not.toMatch(/webhook \w+:/); // onError said nothing
    },
    60_000,
  );
});
