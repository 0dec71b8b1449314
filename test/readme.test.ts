/**
 * The docs' recipes run as written: the test file of docs/testing.md is the one
 * `test/readme-testing.test.ts` runs, and the curl + openssl recipe under "Signatures by hand" of
 * docs/receiving.md is run by bash against a real receiver on a loopback port. (The README's
 * `npm run demo` is run by `test/demo.test.ts`; every other code block is type-checked by
 * `test/docs-snippets.test.ts`.)
 */

import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeListener } from '../src/adapters/node.js';
import { createReceiver } from '../src/index.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
const SECRET = 'readme-secret-readme-secret-readme-secret-readme-secret-readme-s';

/** The body of the first fenced block of `lang` after the heading `heading` of a page. */
async function blockAfter(page: string, heading: string, lang: string): Promise<string> {
  const text = `\n${await readFile(join(root, page), 'utf8')}`;
  const start = text.indexOf(`\n${heading}\n`);
  expect(start, `${page} has the heading ${heading}`).toBeGreaterThan(-1);
  const open = text.indexOf(`\n\`\`\`${lang}\n`, start);
  const body = open + lang.length + 5;
  return text.slice(body, text.indexOf('\n```\n', body) + 1);
}

describe("docs/testing.md's example", () => {
  it('is, import paths aside, the test file that test/readme-testing.test.ts runs', async () => {
    const tested = await readFile(join(root, 'test/readme-testing.test.ts'), 'utf8');
    const asRun = tested
      .replace(/^(\/\/.*\n)+/, '')
      .replace("'../src/index.js'", "'schoolhooks'")
      .replace("'../src/testing/index.js'", "'schoolhooks/testing'");
    expect(await blockAfter('docs/testing.md', '## A test file to copy', 'ts')).toBe(asRun);
  });
});

describe('docs/receiving.md, "Signatures by hand": the curl + openssl recipe', () => {
  let server: Server;
  let url = '';
  const seen: number[] = [];

  beforeAll(async () => {
    const receiver = createReceiver({ secret: SECRET });
    receiver.on('UserSignedIn', (event) => {
      seen.push((event.data as { user: { id: number } }).user.id);
    });
    server = createServer(nodeListener(receiver, { path: '/webhooks/school' }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/school`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('signs the bytes with openssl, and curl gets them processed by a real receiver', async () => {
    const script = await blockAfter('docs/receiving.md', '## Signatures by hand', 'sh');
    expect(script).toContain('openssl dgst -sha256 -hmac "$SECRET"');
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], {
      env: { ...process.env, SCHOOL_WEBHOOK_SECRET: SECRET, URL: url },
      timeout: 30_000,
    });
    expect(JSON.parse(stdout)).toMatchObject({ ok: true, outcome: 'processed' });
    expect(seen).toEqual([1]);
  });

  it('is refused, 401, with any other secret: the signature really is checked', async () => {
    const script = await blockAfter('docs/receiving.md', '## Signatures by hand', 'sh');
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], {
      env: { ...process.env, SCHOOL_WEBHOOK_SECRET: 'another-secret', URL: url },
      timeout: 30_000,
    });
    expect(JSON.parse(stdout)).toMatchObject({ ok: false, outcome: 'invalid_signature' });
  });
});
