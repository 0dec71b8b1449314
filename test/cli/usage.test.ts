import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { formatDuration } from '../../src/cli/duration.js';
import { COMMANDS } from '../../src/cli/main.js';
import { nearestName } from '../../src/nearest-name.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'src/cli/index.ts');
const SECRET = 'usage-test-secret-usage-test-secret-usage-test-secret-usage-tes';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

type Env = Record<string, string>;

/** Run the bin as the user would, to its end, with `input` on stdin and no inherited secret. */
function bin(
  args: readonly string[],
  { input = '', secret = true, vars = {} }: { input?: string; secret?: boolean; vars?: Env } = {},
): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.SCHOOL_WEBHOOK_SECRET;
  delete env.REDIS_URL;
  if (secret) env.SCHOOL_WEBHOOK_SECRET = SECRET;
  Object.assign(env, vars);
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: ROOT, env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(input);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('schoolhooks --version', () => {
  it("prints the package's version and exits 0", async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(await bin(['--version'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });
});

describe.concurrent('a mistyped word is answered with the nearest valid one, exit code 2', () => {
  it.each([
    [['lisen'], "schoolhooks: unknown command 'lisen'; did you mean listen?"],
    [['--verison'], "schoolhooks: unknown option '--verison'; did you mean --version?"],
    [['help', 'simulte'], "schoolhooks: unknown command 'simulte'; did you mean simulate?"],
    [
      ['send', 'paymentcompleted', '--url', 'http://127.0.0.1:9/'],
      'schoolhooks send: paymentcompleted: no such file, and not an event name; did you mean PaymentCompleted?',
    ],
    [
      ['send', 'UserSignedUp', '--url', 'http://127.0.0.1:9/', '--sekret', 'x'],
      "schoolhooks send: unknown option '--sekret'; did you mean --secret?",
    ],
    [
      ['send', 'data.json', '--event', 'UserSignedup', '--url', 'http://127.0.0.1:9/'],
      'schoolhooks send: --event UserSignedup is not an event of the platform; did you mean UserSignedUp?',
    ],
    [
      ['schema', 'PaymentComplete'],
      'schoolhooks schema: PaymentComplete is not an event of the platform; did you mean PaymentCompleted?',
    ],
    [['inbox', 'lsit'], "schoolhooks inbox: unknown action 'lsit'; did you mean list?"],
  ])('%j', async (args, message) => {
    const run = await bin(args);
    expect(run.code).toBe(2);
    expect(run.stderr.split('\n')[0]).toBe(message);
    expect(run.stdout).toBe('');
  });

  it('finds a name whatever its case, or a few characters away, and nothing when none is near', () => {
    const events = ['PaymentCompleted', 'UserSignedUp', 'UserSignedIn'];
    expect(nearestName('paymentcompleted', events)).toBe('PaymentCompleted');
    expect(nearestName('UserSingedUp', events)).toBe('UserSignedUp');
    expect(nearestName('CourseCompleted', events)).toBeUndefined();
    expect(nearestName('x', ['y'])).toBe('y');
    expect(nearestName('xy', ['zw'])).toBeUndefined();
  });
});

describe.concurrent('usage errors, in our own words and with one prefix', () => {
  it('an unknown option: no parseArgs text, no unbalanced quote', async () => {
    const run = await bin(['schema', '--colour']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      "schoolhooks schema: unknown option '--colour'\nRun 'schoolhooks schema --help' for usage.\n",
    );
  });

  it.each([
    [['send', 'UserSignedUp', '--url'], '--url needs a value'],
    [['send', 'UserSignedUp', '--url', '--raw'], '--url needs a value; to give one that starts'],
    [['send', 'UserSignedUp', '--raw=yes', '--url', 'http://x'], '--raw takes no value'],
    [['sign', '--secret', 'a', '--secret', 'b'], '--secret is given more than once'],
    [['sign', 'a-secret-typed-as-an-argument'], 'unexpected argument'],
  ])('%j: %s', async (args, message) => {
    const run = await bin(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^schoolhooks (send|sign): /);
    expect(run.stderr).toContain(message);
    expect(run.stderr).not.toContain('a-secret-typed-as-an-argument');
  });

  it('sign with an empty stdin is a usage error, not the signature of an empty body', async () => {
    const run = await bin(['sign'], { input: '' });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^schoolhooks sign: stdin is empty/);
  });

  it('a failure has the same prefix as a usage error: a signature that does not verify', async () => {
    const run = await bin(['verify', '--signature', '0'.repeat(64)], { input: '{}' });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^schoolhooks verify: invalid: the signature does not match/);
  });
});

describe.concurrent('a mistake in what the user typed is a usage error (exit 2) naming it', () => {
  const url = 'http://127.0.0.1:9/';
  it.each<[string, string[], Env, string]>([
    // One secret is "the secret"; where it came from is named, its value never.
    [
      'a whitespace-only --secret',
      ['listen', '--port', '0', '--secret', ' \t '],
      {},
      'schoolhooks listen: the secret (--secret) is whitespace only',
    ],
    [
      'a whitespace-only secret among several',
      ['listen', '--port', '0', '--secret', SECRET, '--secret', '  '],
      {},
      'schoolhooks listen: secret #2 of the list (--secret) is whitespace only',
    ],
    [
      'an empty --secret',
      ['send', 'UserSignedUp', '--url', url, '--secret', ''],
      {},
      'schoolhooks send: the secret (--secret) is empty',
    ],
    [
      'a whitespace-only SCHOOL_WEBHOOK_SECRET',
      ['verify', '--signature', '0'.repeat(64)],
      { SCHOOL_WEBHOOK_SECRET: '\n' },
      'schoolhooks verify: the secret ($SCHOOL_WEBHOOK_SECRET) is whitespace only',
    ],
    [
      'an empty --port (not port 0)',
      ['listen', '--port', ''],
      {},
      'schoolhooks listen: --port must be a port number (0 to 65535)',
    ],
    [
      'a --keep in hex',
      ['listen', '--ui', '--port', '0', '--keep', '0x10'],
      {},
      'schoolhooks listen: --keep must be a whole number of deliveries, 1 or more',
    ],
    [
      'an empty --seed',
      ['simulate', '--url', url, '--seed', ''],
      {},
      'schoolhooks simulate: --seed must be a whole number',
    ],
    [
      'a blank --faults',
      ['simulate', '--url', url, '--faults', ' '],
      {},
      'schoolhooks simulate: --faults must be a number from 0 to 1',
    ],
    [
      'an --events in exponent notation',
      ['simulate', '--url', url, '--events', '1e3'],
      {},
      'schoolhooks simulate: --events must be a whole number from 1 to 100000',
    ],
    [
      'an endpoint URL longer than the platform takes (255 characters)',
      ['simulate', '--url', `${url}${'a'.repeat(256)}`],
      {},
      "schoolhooks simulate: --url is longer than 255 characters, the platform's limit for an endpoint's URL",
    ],
    [
      'a --redis URL whose port is out of range',
      ['inbox', 'list', '--redis', 'redis://user:hunter2@127.0.0.1:99999'],
      {},
      'schoolhooks inbox: --redis is not a well-formed redis:// or rediss:// URL',
    ],
    [
      'a REDIS_URL that does not parse',
      ['inbox', 'list'],
      { REDIS_URL: 'redis://user:hunter2@[127.0.0.1' },
      'schoolhooks inbox: $REDIS_URL is not a well-formed redis:// or rediss:// URL',
    ],
    [
      'a REDIS_URL of another protocol',
      ['inbox', 'list'],
      { REDIS_URL: 'http://user:hunter2@127.0.0.1:6379' },
      'schoolhooks inbox: $REDIS_URL must be a redis:// or rediss:// URL',
    ],
    [
      'a --postgres URL whose port is out of range',
      ['inbox', 'list', '--postgres', 'postgres://user:hunter2@127.0.0.1:70000/test'],
      {},
      'schoolhooks inbox: --postgres is not a well-formed postgres:// or postgresql:// URL',
    ],
  ])('%s', async (_case, args, vars, message) => {
    const run = await bin(args, { vars });
    expect(run.code).toBe(2);
    const [first, help] = run.stderr.split('\n');
    expect(first!.startsWith(message)).toBe(true);
    expect(first).not.toContain('unexpected error');
    expect(help).toMatch(/^Run 'schoolhooks [a-z]+ --help' for usage\.$/);
    expect(run.stdout).toBe('');
    expect(run.stderr).not.toContain(SECRET);
    expect(run.stderr).not.toContain('hunter2');
  });

  it('a secret with whitespace around it is used as given (HMAC-SHA256 keyed by it), with a warning that never shows it', async () => {
    const padded = ' padded-secret-value\n';
    const body = '{"event":"UserSignedUp"}';
    const run = await bin(['sign'], { input: body, vars: { SCHOOL_WEBHOOK_SECRET: padded } });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`${createHmac('sha256', padded).update(body).digest('hex')}\n`);
    expect(run.stderr).toMatch(
      /^schoolhooks sign: warning: the secret \(\$SCHOOL_WEBHOOK_SECRET\) has spaces or a line break around it/,
    );
    expect(run.stderr).not.toContain('padded-secret-value');
  });

  it('the overview documents exit code 2 for these', async () => {
    const run = await bin(['--help']);
    expect(run.stdout).toContain('2 usage error: a bad option, argument, number, URL or');
  });
});

describe("each command's help is generated from its option definitions", () => {
  it.each(COMMANDS.map((command) => [command.name, command] as const))(
    '%s: every option is listed, and every option the help names exists',
    (_name, command) => {
      const options = Object.keys(command.options);
      const section = command.help.slice(command.help.indexOf('\nOptions:\n'));
      for (const option of options) expect(section).toMatch(new RegExp(`^ .*--${option}\\b`, 'm'));
      const named = new Set([...command.help.matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1]));
      expect([...named].filter((option) => !options.includes(option!))).toEqual([]);
      expect(options).toContain('help');
    },
  );

  it('shows a default once, from the definition', async () => {
    const run = await bin(['simulate', '--help']);
    expect(run.stdout).toContain('  --events N      How many events to send (default 20)\n');
    expect(run.stdout).toContain('15s; up to 5 attempts, 11m, 33m, 1h 17m and 2h 45m');
  });
});

describe('one format for durations', () => {
  it.each([
    [0, '0s'],
    [15_000, '15s'],
    [11 * 60_000, '11m'],
    [(4 * 60 + 46) * 60_000, '4h 46m'],
    [3_605_000, '1h 5s'],
    [14 * 24 * 3_600_000, '14d'],
    [1_499, '1s'],
  ])('%d ms reads %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
