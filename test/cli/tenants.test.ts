// Many schools on one endpoint from a shell: `listen --secrets-file` run as the bin, deliveries
// and `send --tenant` over real HTTP, and every usage error of the two options.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { main } from '../../src/cli/main.js';
import { createDelivery } from '../../src/testing/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'src/cli/index.ts');
const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

const SECRET_A = 'qZ7tA1-7qW3eR5tY8uI1oP4aS6dF9gH2jK5lZ8xC1vB4nM7qW0eR3tY6uI9oP2aS';
const OLD_B = 'qZ7tB0-old-3kL6jH9gF2dS5aP8oI1uY4tR7eW0qZ3xC6vB9nM2kL5jH8gF1dS4aP';
const SECRET_B = 'qZ7tB2-new-9mN2bV5cX8zL1kJ4hG7fD0sA3pO6iU9yT2rE5wQ8mN1bV4cX7zL0k';
const SECRET_C = 'qZ7tC3-5tG8yH1uJ4iK7oL0pZ3xC6vB9nM2qW5eR8tY1uI4oP7aS0dF3gH6jK9lZ2';
const ENDPOINT_SECRET = 'qZ7tE4-2wS5xD8cF1vG4bH7nJ0mK3lQ6aZ9sX2dC5fV8gB1hN4jM7kL0qA3wS6eD9';
const ALL_SECRETS = [SECRET_A, OLD_B, SECRET_B, SECRET_C, ENDPOINT_SECRET];
/** Tenants as a seller's config would name them: one with a space and a slash. */
const TENANTS = { A: SECRET_A, B: [OLD_B, SECRET_B], 'school a/x': SECRET_C };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run the CLI in this process: the same `main` the bin runs, on an I/O the test holds. */
async function cli(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    out: (text) => void (stdout += `${text}\n`),
    err: (text) => void (stderr += `${text}\n`),
    readStdin: async () => new Uint8Array(),
    stdinIsTty: true,
    env,
    untilStopped: () => new Promise(() => {}),
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

/**
 * Every secret of this file that `text` shows, whole or its first 6 characters (each secret
 * starts with its own): none, whatever the output.
 */
function secretsIn(text: string): string[] {
  return ALL_SECRETS.filter((secret) => text.includes(secret.slice(0, 6)));
}

let folder = '';
let tenantsFile = '';

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'schoolhooks-tenants-'));
  tenantsFile = join(folder, 'tenants.json');
  await writeFile(tenantsFile, JSON.stringify(TENANTS, null, 2));
});

afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe('listen --secrets-file, the bin as a child process', () => {
  let listener: ChildProcess;
  let output = '';
  let base = '';

  /** Wait until listen has printed `text`. */
  async function printed(text: string): Promise<void> {
    for (let i = 0; i < 400 && !output.includes(text); i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(output).toContain(text);
  }

  /** POST `delivery` to `path` below the origin; the status and the answer's outcome or error. */
  async function post(
    path: string,
    { body, headers }: { body: string; headers: Record<string, string> },
  ): Promise<[number, string]> {
    const answer = await fetch(`${base}${path}`, { method: 'POST', headers, body });
    const json = (await answer.json()) as { outcome?: string; error?: string };
    return [answer.status, json.outcome ?? json.error ?? ''];
  }

  beforeAll(async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, SCHOOL_WEBHOOK_SECRET: ENDPOINT_SECRET };
    const args = ['listen', '--port', '0', '--path', '/webhooks/school'];
    listener = spawn(
      process.execPath,
      ['--import', TSX, CLI, ...args, '--secrets-file', tenantsFile],
      {
        cwd: ROOT,
        env,
      },
    );
    listener.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    listener.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await printed('Listening on');
    base = `http://127.0.0.1:${/localhost:(\d+)\//.exec(output)?.[1]}`;
  });

  afterAll(async () => {
    if (listener.exitCode === null) {
      const exited = new Promise<number | null>((resolve) => listener.once('close', resolve));
      listener.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
    expect(secretsIn(output)).toEqual([]);
  });

  it("prints where each tenant's deliveries go and the tenants' names, never a secret", () => {
    expect(output).toMatch(
      /^Listening on http:\/\/localhost:\d+\/webhooks\/school\/\{tenant\} \(secrets of tenants A, B, "school a\/x" from .*tenants\.json\); Ctrl-C to stop$/m,
    );
  });

  it("answers A's delivery at /…/A processed, the same bytes at /…/B 401, at /…/nobody 404", async () => {
    const delivery = createDelivery('UserSignedUp', undefined, {
      secret: SECRET_A,
      idempotencyKey: 'tenant-a-1',
    });
    expect(await post('/webhooks/school/A', delivery)).toEqual([200, 'processed']);
    expect(await post('/webhooks/school/B', delivery)).toEqual([401, 'invalid_signature']);
    expect(await post('/webhooks/school/nobody', delivery)).toEqual([404, 'unknown_tenant']);
    // A name every object has is no tenant of the file.
    expect(await post('/webhooks/school/constructor', delivery)).toEqual([404, 'unknown_tenant']);
    await printed('200 processed tenant=A UserSignedUp key=tenant-a-1');
    await printed('401 invalid_signature tenant=B\n  the signature matches no secret');
    await printed(
      '404 unknown_tenant tenant=nobody\n  unknown_tenant: tenant "nobody" has no secret',
    );
  });

  it('answers 404 not_found for a path that names no single tenant below --path', async () => {
    const delivery = createDelivery('UserSignedUp', undefined, { secret: SECRET_A });
    for (const path of [
      '/webhooks/school',
      '/webhooks/school/',
      '/webhooks/school/A/extra',
      '/elsewhere/A',
      '/webhooks/school/%E0%A4%A',
    ]) {
      expect([path, ...(await post(path, delivery))]).toEqual([path, 404, 'not_found']);
    }
  });

  it("verifies with any of a tenant's list, and keeps each tenant's keys apart", async () => {
    const old = createDelivery('UserSignedUp', undefined, { secret: OLD_B, idempotencyKey: 'k-1' });
    const fresh = createDelivery('UserSignedUp', undefined, { secret: SECRET_B });
    expect(await post('/webhooks/school/B', old)).toEqual([200, 'processed']);
    expect(await post('/webhooks/school/B', fresh)).toEqual([200, 'processed']);
    // The same idempotencyKey at A is another school's event: processed, not a duplicate.
    const atA = createDelivery('UserSignedUp', undefined, {
      secret: SECRET_A,
      idempotencyKey: 'k-1',
    });
    expect(await post('/webhooks/school/A', atA)).toEqual([200, 'processed']);
    expect(await post('/webhooks/school/B', old)).toEqual([200, 'duplicate']);
  });

  it('send --tenant --secrets-file reaches the tenant, prints it, and its resend is a duplicate', async () => {
    const url = `${base}/webhooks/school`;
    const first = await cli([
      'send',
      'CourseCompleted',
      '--url',
      url,
      '--tenant',
      'A',
      '--secrets-file',
      tenantsFile,
    ]);
    expect(first.code).toBe(0);
    const lines = first.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('200 CourseCompleted');
    const sent = /^sent CourseCompleted tenant=A idempotencyKey=(\S+) timestamp=(\S+)$/.exec(
      lines.at(-2)!,
    );
    expect(sent).not.toBeNull();
    const [, key, timestamp] = sent!;
    expect(lines.at(-1)).toBe(
      `resend: schoolhooks send CourseCompleted --url ${url} --tenant A --secrets-file ${tenantsFile} --key ${key} --timestamp ${timestamp}`,
    );
    await printed(`200 processed tenant=A CourseCompleted key=${key}`);

    const again = await cli(lines.at(-1)!.split(' ').slice(2));
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('"outcome":"duplicate"');
    expect(secretsIn(first.stdout + first.stderr + again.stdout + again.stderr)).toEqual([]);
  });

  it('send puts the tenant where --url holds {tenant}, percent-encoded', async () => {
    const run = await cli([
      'send',
      'UserSignedUp',
      '--url',
      `${base}/webhooks/school/{tenant}?from=cli`,
      '--tenant',
      'school a/x',
      '--secrets-file',
      tenantsFile,
    ]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^sent UserSignedUp tenant="school a\/x" idempotencyKey=/m);
    expect(run.stdout).toContain(
      `--url '${base}/webhooks/school/{tenant}?from=cli' --tenant 'school a/x'`,
    );
    await printed('200 processed tenant="school a/x" UserSignedUp');
  });

  it("send --tenant signs with --secret (or the variable) as before: B's secret passes, A's is 401", async () => {
    const url = `${base}/webhooks/school`;
    const good = await cli(['send', 'UserSignedUp', '--url', url, '--tenant', 'B'], {
      SCHOOL_WEBHOOK_SECRET: SECRET_B,
    });
    const wrong = await cli([
      'send',
      'UserSignedUp',
      '--url',
      url,
      '--tenant',
      'B',
      '--secret',
      SECRET_A,
    ]);
    expect([good.code, wrong.code]).toEqual([0, 1]);
    expect(wrong.stdout).toMatch(/^401 UserSignedUp\n\{"ok":false,"outcome":"invalid_signature"\}/);
    // The secret of the command line is not in the resend command.
    expect(wrong.stdout).toMatch(
      /^resend: schoolhooks send UserSignedUp --url \S+ --tenant B --key /m,
    );
    expect(secretsIn(good.stdout + wrong.stdout)).toEqual([]);
  });
});

describe('send --tenant, seen by a bare server', () => {
  let server: Server;
  let origin = '';
  const seen: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it.each([
    [`/hooks`, 'A', '/hooks/A'],
    [`/hooks/`, 'A', '/hooks/A'],
    [`/hooks?via=cli`, 'school a/x', '/hooks/school%20a%2Fx?via=cli'],
    [`/t/{tenant}/hooks`, 'ä#?', '/t/%C3%A4%23%3F/hooks'],
    [``, 'A', '/A'],
  ])('--url …%s --tenant %j posts to %s', async (path, tenant, expected) => {
    const run = await cli(
      ['send', 'UserSignedUp', '--url', `${origin}${path}`, '--tenant', tenant],
      {
        SCHOOL_WEBHOOK_SECRET: ENDPOINT_SECRET,
      },
    );
    expect(run.code).toBe(0);
    expect(seen.at(-1)).toBe(expected);
  });
});

describe('usage errors of the tenant options: exit 2, naming the tenant, never a secret', () => {
  /** A secrets file holding `content` as it is. */
  async function file(name: string, content: string): Promise<string> {
    const path = join(folder, name);
    await writeFile(path, content);
    return path;
  }

  it.each([
    [
      'a list with a whitespace-only secret',
      JSON.stringify({ A: SECRET_A, B: [SECRET_B, '  '] }),
      /: secret #2 of tenant "B" \(--secrets-file \S+\) is whitespace only$/m,
    ],
    [
      'an empty secret',
      JSON.stringify({ A: '', B: SECRET_B }),
      /: the secret of tenant "A" \(--secrets-file \S+\) is empty$/m,
    ],
    [
      'a secret that is not a string',
      JSON.stringify({ A: [SECRET_A, 42] }),
      /: secret #2 of tenant "A" \(--secrets-file \S+\) must be a string, not number$/m,
    ],
    ['an empty list', JSON.stringify({ B: [] }), /: tenant "B" has an empty list of secrets$/m],
    [
      'a tenant of null',
      JSON.stringify({ B: null }),
      /: tenant "B" must map to a secret .*not null$/m,
    ],
    [
      'a list, not an object',
      JSON.stringify([SECRET_A]),
      /: must be a JSON object mapping each tenant/,
    ],
    ['no tenant', '{}', /: names no tenant$/m],
    ['a tenant named ..', JSON.stringify({ '..': SECRET_A }), /: "\.\." cannot be a tenant/],
    ['not JSON', `{ "A": "${SECRET_A}", }`, /: not valid JSON \(line 1, column 76\)$/m],
    [
      'not JSON, on line 3',
      `{\n  "A": "${SECRET_A}",\n}\n`,
      /: not valid JSON \(line 3, column 1\)$/m,
    ],
    // JSON's own message quotes the text around the error: here, the secret.
    ['not JSON, a secret unquoted', `{ "A": ${SECRET_A} }`, /: not valid JSON$/m],
  ])('listen, a secrets file with %s', async (name, content, message) => {
    const path = await file(`${name.replaceAll(' ', '-')}.json`, content);
    for (const command of [
      ['listen', '--port', '0', '--secrets-file', path],
      [
        'send',
        'UserSignedUp',
        '--url',
        'http://127.0.0.1:9/',
        '--tenant',
        'A',
        '--secrets-file',
        path,
      ],
    ]) {
      const run = await cli(command);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(run.stdout).toBe('');
      expect(secretsIn(run.stderr)).toEqual([]);
    }
  });

  it('a secrets file that cannot be read', async () => {
    const run = await cli(['listen', '--secrets-file', join(folder, 'missing.json')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--secrets-file \S+missing\.json: cannot read it \(ENOENT/);
  });

  it('warns of a secret with spaces around it, and uses it as given', async () => {
    const path = await file('padded.json', JSON.stringify({ A: [SECRET_A, ` ${SECRET_B}\n`] }));
    const run = await cli([
      'send',
      'UserSignedUp',
      '--url',
      'http://127.0.0.1:9/',
      '--tenant',
      'A',
      '--secrets-file',
      path,
    ]);
    expect(run.stderr).toContain(
      'schoolhooks send: warning: secret #2 of tenant "A" (--secrets-file',
    );
    expect(secretsIn(run.stderr)).toEqual([]);
  });

  it.each([
    [
      ['listen', '--secrets-file', 'TENANTS', '--secret', ENDPOINT_SECRET],
      '--secret and --secrets-file cannot go together',
    ],
    [
      [
        'send',
        'UserSignedUp',
        '--url',
        'URL',
        '--tenant',
        'A',
        '--secrets-file',
        'TENANTS',
        '--secret',
        ENDPOINT_SECRET,
      ],
      '--secret and --secrets-file cannot go together',
    ],
    [
      ['send', 'UserSignedUp', '--url', 'URL', '--tenant', 'nobody', '--secrets-file', 'TENANTS'],
      'has no tenant "nobody"',
    ],
    [
      ['send', 'UserSignedUp', '--url', 'URL', '--secrets-file', 'TENANTS'],
      '--secrets-file needs --tenant',
    ],
    [
      ['send', 'UserSignedUp', '--url', 'http://127.0.0.1:9/{tenant}'],
      '--url holds {tenant}: name the tenant with --tenant',
    ],
    [['send', 'UserSignedUp', '--url', 'URL', '--tenant', ''], '--tenant: a tenant name is empty'],
    [
      ['send', 'UserSignedUp', '--url', 'URL', '--tenant', '..'],
      '--tenant: ".." cannot be a tenant',
    ],
    // A name the receiver answers 404 for every delivery (over 256 code units): refused here.
    [
      ['send', 'UserSignedUp', '--url', 'URL', '--tenant', 's'.repeat(257)],
      'is not a tenant name (over 256 characters',
    ],
  ])('%j', async (args, message) => {
    const filled = args.map((arg) =>
      arg === 'TENANTS' ? tenantsFile : arg === 'URL' ? 'http://127.0.0.1:9/hooks' : arg,
    );
    const run = await cli(filled, { SCHOOL_WEBHOOK_SECRET: ENDPOINT_SECRET });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
    expect(secretsIn(run.stdout + run.stderr)).toEqual([]);
  });
});
