import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { main } from '../../src/cli/main.js';
import { FIXED_CONTRACT_EVENTS, UNCONTRACTED_EVENTS } from '../../src/index.js';
import { CLI, ROOT, runBin, startBin, TSX, type BinRun } from '../helpers/cli-bin.js';

/** tsx's loader by path, so the bin runs from a folder that has no node_modules of its own. */
const SECRET = 'Pq4wE7rT0yU3iO6pA9sD2fG5hJ8kL1zX4cV7bN0mQ3wE6rT9yU2iO5pA8sD1fG4h';
const COMMANDS = ['listen', 'send', 'replay', 'sign', 'verify', 'simulate', 'schema', 'inbox'];
const withSecret = { SCHOOL_WEBHOOK_SECRET: SECRET };
const BODY = '{"event":"UserSignedUp","timestamp":"2025-01-01T00:00:00.000Z"}\n';

type Run = BinRun;

function hmac(body: string | Buffer, secret = SECRET): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/** Start the bin as the user would: `node --import tsx src/cli/index.ts …`, with no inherited secret. */
function start(
  args: readonly string[],
  env: Record<string, string> = {},
  cwd = ROOT,
): ChildProcess {
  return startBin(args, { env, unset: ['SCHOOL_WEBHOOK_SECRET'], cwd });
}

/** Run the bin to its end with `input` on stdin. */
function bin(
  args: readonly string[],
  { input = '', env, cwd }: { input?: string; env?: Record<string, string>; cwd?: string } = {},
): Promise<Run> {
  return runBin(args, { env, unset: ['SCHOOL_WEBHOOK_SECRET'], cwd, input });
}

/** Run the CLI in this process: the same `main` the bin runs, on an I/O the test holds. */
async function cli(
  args: readonly string[],
  { input = '', env = {} }: { input?: string; env?: Record<string, string> } = {},
): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    out: (text) => void (stdout += `${text}\n`),
    err: (text) => void (stderr += `${text}\n`),
    readStdin: async () => new TextEncoder().encode(input),
    stdinIsTty: false,
    env,
    untilStopped: () => new Promise(() => {}),
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

describe('the bin, as a child process', () => {
  it('prints every command with --help and exits 0', async () => {
    const { code, stdout } = await bin(['--help']);
    expect(code).toBe(0);
    for (const name of COMMANDS) expect(stdout).toContain(`  ${name}`);
  });

  it('sign | verify: what sign prints for stdin, verify accepts; a bad signature exits 1', async () => {
    const signed = await bin(['sign'], { input: BODY, env: withSecret });
    expect(signed).toEqual({ code: 0, stdout: `${hmac(BODY)}\n`, stderr: '' });
    const [good, bad] = await Promise.all([
      bin(['verify', '--signature', signed.stdout.trim()], { input: BODY, env: withSecret }),
      bin(['verify', '--signature', hmac(BODY, 'another-secret')], {
        input: BODY,
        env: withSecret,
      }),
    ]);
    expect(good.code).toBe(0);
    expect(good.stdout).toContain('valid');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('does not match');
    expect(bad.stdout + bad.stderr).not.toContain(SECRET);
  });

  it('exits 2 without a secret', async () => {
    const { code, stderr } = await bin(['sign'], { input: BODY });
    expect(code).toBe(2);
    expect(stderr).toContain('no secret: pass --secret or set SCHOOL_WEBHOOK_SECRET');
  });

  it('schema prints valid JSON', async () => {
    const { code, stdout } = await bin(['schema', 'CourseCompleted']);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ title: 'CourseCompleted', type: 'object' });
  });
});

describe('against a running listen', () => {
  let listener: ChildProcess;
  let url = '';
  let output = '';
  let folder = '';

  /** Wait until listen has printed `text`. */
  async function printed(text: string): Promise<void> {
    for (let i = 0; i < 400 && !output.includes(text); i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(output).toContain(text);
  }

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'schoolhooks-cli-'));
    listener = start(['listen', '--port', '0', '--path', '/hooks'], withSecret);
    listener.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    listener.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await printed('Listening on');
    url = `http://127.0.0.1:${/:(\d+)\/hooks/.exec(output)?.[1]}/hooks`;
  });

  afterAll(async () => {
    await rm(folder, { recursive: true, force: true });
    if (listener.exitCode !== null) return;
    const exited = new Promise<number | null>((resolve) => listener.once('close', resolve));
    listener.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).not.toContain(SECRET);
  });

  it('receives a fixture from the send bin and prints the verified event', async () => {
    const { code, stdout } = await bin(['send', 'PaymentCompleted', '--url', url], {
      env: withSecret,
    });
    expect(code).toBe(0);
    expect(stdout).toMatch(/^200 PaymentCompleted\n\{"ok":true,"outcome":"processed"/);
    const key = /"idempotencyKey":"([^"]+)"/.exec(stdout)?.[1] ?? 'none';
    await printed(`200 processed PaymentCompleted key=${key} user `);
  });

  it('the simulate bin delivers every event through injected faults', async () => {
    const { code, stdout } = await bin(
      ['simulate', '--url', url, '--events', '26', '--faults', '0.3', '--seed', '5'],
      { env: withSecret },
    );
    expect(stdout).toMatch(
      /26 events, \d+ requests over .* of platform time: 26 delivered, 0 failed/,
    );
    expect(stdout).toMatch(/attempt 2 /);
    expect(code).toBe(0);
  });

  it('the replay bin gets every answer the manifest of fixtures/invalid expects', async () => {
    const { code, stdout } = await bin(['replay', 'fixtures/invalid', '--url', url], {
      env: withSecret,
    });
    const manifest = JSON.parse(
      await readFile(join(ROOT, 'fixtures/invalid/manifest.json'), 'utf8'),
    ) as unknown[];
    expect(stdout).toContain(
      `${manifest.length} files, ${manifest.length} answered as expected, 0 not`,
    );
    expect(code).toBe(0);
  });

  it('replays the packaged fixtures/invalid from an app folder that has none', async () => {
    const { code, stdout } = await bin(['replay', 'fixtures/invalid', '--url', url], {
      env: withSecret,
      cwd: folder,
    });
    expect(stdout).toMatch(/ok {3}413 too_large +oversized\.json/);
    expect(stdout).toMatch(/files, (\d+) answered as expected, 0 not/);
    expect(code).toBe(0);
  });

  it('exits 1 on a 401, and listen prints the likely causes', async () => {
    const { code, stdout } = await cli(['send', 'UserSignedUp', '--url', url], {
      env: { SCHOOL_WEBHOOK_SECRET: 'not-the-endpoint-secret' },
    });
    expect(code).toBe(1);
    expect(stdout).toMatch(/^401 UserSignedUp/);
    // The status line first, its details indented under it.
    await printed('401 invalid_signature\n  the signature matches no secret\n  Likely causes:');
    await printed('temporary key');
    await printed('A body parser re-serialised the body');
  });

  it('answers the same key and timestamp twice as a duplicate', async () => {
    const args = ['send', 'UserSignedUp', '--url', url, '--key', 'cli-dup-1'];
    const timestamp = ['--timestamp', new Date().toISOString()];
    const first = await cli([...args, ...timestamp], { env: withSecret });
    const second = await cli([...args, ...timestamp], { env: withSecret });
    expect(first.stdout).toContain('"outcome":"processed"');
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('"outcome":"duplicate"');
    await printed('200 duplicate UserSignedUp key=cli-dup-1');
  });

  it('send prints the key and timestamp it stamped, never the signature, and the command that resends it as a duplicate', async () => {
    const first = await cli(['send', 'CourseCompleted', '--url', url], { env: withSecret });
    expect(first.code).toBe(0);
    const lines = first.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('200 CourseCompleted');
    const sent = /^sent CourseCompleted idempotencyKey=(\S+) timestamp=(\S+)$/.exec(lines.at(-2)!);
    expect(sent).not.toBeNull();
    const [, key, timestamp] = sent!;
    // The receiver saw that key, and the timestamp is the moment it was sent (RFC 3339, now).
    await printed(`200 processed CourseCompleted key=${key}`);
    expect(Math.abs(Date.parse(timestamp!) - Date.now())).toBeLessThan(60_000);
    expect(lines.at(-1)).toBe(
      `resend: schoolhooks send CourseCompleted --url ${url} --key ${key} --timestamp ${timestamp}`,
    );
    // A signature is 64 hex characters: none is printed, nor the secret.
    expect(first.stdout).not.toMatch(/[0-9a-f]{64}/i);
    expect(first.stdout).not.toContain(SECRET);

    const resend = lines.at(-1)!.split(' ').slice(2);
    const again = await cli(resend, { env: withSecret });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('"outcome":"duplicate"');
    expect(again.stdout.trimEnd().split('\n').at(-1)).toBe(lines.at(-1));
  });

  it('send quotes a key the shell would split, and prints what it sent when no answer came', async () => {
    const closed = `http://127.0.0.1:9/hooks`;
    const run = await cli(
      [
        'send',
        'UserSignedUp',
        '--url',
        closed,
        '--key',
        "it's a key",
        '--timestamp',
        '2026-11-01T10:00:00Z',
      ],
      { env: withSecret },
    );
    expect(run.code).toBe(1);
    expect(run.stdout).toBe(
      'sent UserSignedUp idempotencyKey="it\'s a key" timestamp=2026-11-01T10:00:00Z\n' +
        `resend: schoolhooks send UserSignedUp --url ${closed} --key 'it'\\''s a key' --timestamp 2026-11-01T10:00:00Z\n`,
    );
    expect(run.stderr).toMatch(/^schoolhooks send: http:\/\/127\.0\.0\.1:9\/hooks: /);
  });

  it('sends a data file as the event given by --event', async () => {
    const file = join(folder, 'signed-in.json');
    await writeFile(file, JSON.stringify({ user: { id: 5 } }));
    const { code, stdout } = await cli(['send', file, '--event', 'UserSignedIn', '--url', url], {
      env: withSecret,
    });
    expect(code).toBe(0);
    expect(stdout).toMatch(/^200 UserSignedIn/);
    await printed('200 processed UserSignedIn');
  });

  it('replays a folder of envelopes, each re-stamped so none is stale or a duplicate', async () => {
    const first = await cli(['replay', 'fixtures', '--url', url], { env: withSecret });
    const again = await cli(['replay', 'fixtures', '--url', url], { env: withSecret });
    expect(first.stdout).toContain('13 files, 13 answered as expected, 0 not');
    expect(again.stdout.match(/ok {3}200 processed/g)).toHaveLength(13);
  });

  it('replay exits 1 when an answer is not the expected one', async () => {
    const { code, stdout } = await cli(['replay', 'fixtures/invalid', '--url', url, '--raw'], {
      env: withSecret,
    });
    // Sent as they are, the invalid payloads are older than 72 h: 422 stale, not invalid_payload.
    expect(stdout).toMatch(
      /FAIL 422 stale +payment-completed-missing-invoice\.json \(expected 422 invalid_payload\)/,
    );
    expect(code).toBe(1);
  });
});

describe('usage', () => {
  it.each(COMMANDS)('%s --help prints its usage and exits 0', async (name) => {
    const { code, stdout } = await cli([name, '--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(new RegExp(`^Usage: schoolhooks ${name}`));
  });

  it('exits 2 with no command, an unknown command or an unknown option', async () => {
    const none = await cli([]);
    const unknown = await cli(['lsiten']);
    const option = await cli(['schema', '--colour']);
    expect([none.code, unknown.code, option.code]).toEqual([2, 2, 2]);
    expect(none.stderr).toContain('Usage: schoolhooks <command>');
    expect(unknown.stderr).toContain("unknown command 'lsiten'");
    expect(option.stderr).toContain("schoolhooks schema: unknown option '--colour'\n");
    expect(option.stderr).toContain("Run 'schoolhooks schema --help'");
  });

  it('never echoes a secret passed where it does not belong', async () => {
    const { code, stdout, stderr } = await cli(['sign', SECRET], { input: BODY, env: withSecret });
    expect(code).toBe(2);
    expect(stdout + stderr).not.toContain(SECRET);
  });

  it('send exits 2 without --url, for an unknown event, or without a secret', async () => {
    const noUrl = await cli(['send', 'UserSignedUp'], { env: withSecret });
    const unknown = await cli(['send', 'NoSuchEvent', '--url', 'http://127.0.0.1:9/'], {
      env: withSecret,
    });
    const noSecret = await cli(['send', 'UserSignedUp', '--url', 'http://127.0.0.1:9/']);
    expect([noUrl.code, unknown.code, noSecret.code]).toEqual([2, 2, 2]);
    expect(noUrl.stderr).toContain('--url is required');
    expect(unknown.stderr).toContain('NoSuchEvent: no such file, and not an event name');
  });
});

describe('verify', () => {
  it('accepts a match with any of several secrets', async () => {
    const { code } = await cli(
      ['verify', '--signature', hmac(BODY), '--secret', 'old-secret', '--secret', SECRET],
      { input: BODY },
    );
    expect(code).toBe(0);
  });

  it('takes the body byte for byte: a trailing newline changes the signature', async () => {
    const { code } = await cli(['verify', '--signature', hmac(BODY.trimEnd())], {
      input: BODY,
      env: withSecret,
    });
    expect(code).toBe(1);
  });

  it('exits 1 on a signature that is not 64 hex characters', async () => {
    const { code, stderr } = await cli(['verify', '--signature', `sha256=${hmac(BODY)}`], {
      input: BODY,
      env: withSecret,
    });
    expect(code).toBe(1);
    expect(stderr).toContain('64 hex characters');
  });

  it('exits 2 without --signature', async () => {
    const { code, stderr } = await cli(['verify'], { input: BODY, env: withSecret });
    expect(code).toBe(2);
    expect(stderr).toContain('--signature is required');
  });
});

describe('schema', () => {
  it('prints the envelope and data of one event', async () => {
    const { code, stdout } = await cli(['schema', 'PaymentCompleted']);
    expect(code).toBe(0);
    const schema = JSON.parse(stdout) as {
      $schema: string;
      required: string[];
      properties: Record<string, { const?: string; properties?: Record<string, unknown> }>;
    };
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.properties.event?.const).toBe('PaymentCompleted');
    expect(schema.required).toEqual(['event', 'timestamp', 'idempotencyKey', 'data']);
    expect(Object.keys(schema.properties.data?.properties ?? {})).toContain('payment');
  });

  it('prints every event in $defs without a name', async () => {
    const { code, stdout } = await cli(['schema']);
    expect(code).toBe(0);
    const schema = JSON.parse(stdout) as { $defs: Record<string, unknown>; oneOf: unknown[] };
    const names = [...FIXED_CONTRACT_EVENTS, ...UNCONTRACTED_EVENTS];
    expect(Object.keys(schema.$defs).sort()).toEqual(names.sort());
    expect(schema.oneOf).toHaveLength(names.length);
  });

  it('exits 2 for a name that is not an event', async () => {
    const { code, stderr } = await cli(['schema', 'PaymentComplete']);
    expect(code).toBe(2);
    expect(stderr).toContain('PaymentComplete is not an event');
  });
});

describe('simulate against nothing', () => {
  it('exits 1 when no event could be delivered, after the whole retry schedule', async () => {
    const { code, stdout } = await cli(
      ['simulate', '--url', 'http://127.0.0.1:9/', '--events', '1'],
      { env: withSecret },
    );
    expect(code).toBe(1);
    expect(stdout).toMatch(/^\+0s {7}UserSignedUp +attempt 1 /m);
    expect(stdout).toMatch(/^\+4h 46m {3}UserSignedUp +attempt 5 /m);
    expect(stdout).toContain(
      '1 event, 5 requests over 4h 46m of platform time: 0 delivered, 1 failed',
    );
  });
});

describe('simulate --down-for: the receiver down from the start', () => {
  let server: Server;
  let url = '';
  let requests = 0;

  beforeAll(async () => {
    server = createServer((_request, response) => {
      requests += 1;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"ok":true,"outcome":"processed"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('down for 5h, past the 4h 46m of retries: every event fails and no request reaches it', async () => {
    requests = 0;
    const { code, stdout } = await cli(
      ['simulate', '--url', url, '--events', '2', '--down-for', '5h'],
      { env: withSecret },
    );
    expect(code).toBe(1);
    expect(stdout.match(/FAIL endpoint down \(simulated outage\)/g)).toHaveLength(10);
    expect(stdout).toContain(
      '2 events, 10 requests over 4h 46m of platform time: 0 delivered, 2 failed',
    );
    expect(requests).toBe(0);
  });

  it('down for 2h: the event is delivered by the retry 2h 1m after the first attempt', async () => {
    requests = 0;
    const { code, stdout } = await cli(
      ['simulate', '--url', url, '--events', '1', '--down-for', '2h'],
      { env: withSecret },
    );
    expect(code).toBe(0);
    expect(stdout.match(/FAIL endpoint down \(simulated outage\)/g)).toHaveLength(3);
    expect(stdout).toMatch(/^\+2h 1m +UserSignedUp +attempt 4 {2}ok +200 processed /m);
    expect(stdout).toContain(
      '1 event, 4 requests over 2h 1m of platform time: 1 delivered, 0 failed',
    );
    expect(requests).toBe(1);
  });
});

describe('a reader that closes early (`| head -1`)', () => {
  it('send: the output ends quietly when stdout closes, and the exit code is the answer’s', async () => {
    // The receiver answers after the reader has gone: every line of send meets a closed pipe.
    const received: string[] = [];
    const server = createServer((req, res) => {
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => received.push(chunk));
      req.on('end', () =>
        setTimeout(() => res.writeHead(200).end('{"ok":true,"outcome":"processed"}'), 300),
      );
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const child = start(
        ['send', 'UserSignedUp', '--url', `http://127.0.0.1:${port}/`],
        withSecret,
      );
      child.stdout?.destroy();
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const [code] = (await once(child, 'close')) as [number | null];
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      expect(received.join('')).toContain('"event":"UserSignedUp"');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('schema | head -n 1: head prints the first line, and the bin exits 0 without a word', async () => {
    // 500 KB of JSON Schema, far more than a pipe holds: head exits while the bin still writes.
    const bin = `"${process.execPath}" --import "${TSX}" "${CLI}"`;
    const shell = spawn('sh', ['-c', `{ ${bin} schema; echo "bin exit $?" >&2; } | head -n 1`], {
      cwd: ROOT,
    });
    let stdout = '';
    let stderr = '';
    shell.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    shell.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await once(shell, 'close');
    expect({ stdout, stderr }).toEqual({ stdout: '{\n', stderr: 'bin exit 0\n' });
  });
});
