import { createHmac } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { durationOf, formatDuration } from '../../src/cli/duration.js';
import type { CliIo } from '../../src/cli/command.js';
import { COMMANDS, main } from '../../src/cli/main.js';
import { nearestName } from '../../src/utils/nearest-name.js';
import { ROOT, runBin, type BinRun } from '../helpers/cli-bin.js';

const SECRET = 'usage-test-secret-usage-test-secret-usage-test-secret-usage-tes';

type Run = BinRun;

type Env = Record<string, string>;

/** Run the bin as the user would, to its end, with `input` on stdin and no inherited secret. */
function bin(
  args: readonly string[],
  { input = '', secret = true, vars = {} }: { input?: string; secret?: boolean; vars?: Env } = {},
): Promise<Run> {
  const env = { ...(secret ? { SCHOOL_WEBHOOK_SECRET: SECRET } : {}), ...vars };
  return runBin(args, { env, unset: ['SCHOOL_WEBHOOK_SECRET', 'REDIS_URL'], input });
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

// One process at a time: the suites above already start a dozen at once.
describe('a mistake in what the user typed is a usage error (exit 2) naming it', () => {
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
      'a --down-for in words',
      ['simulate', '--url', url, '--down-for', '5 hours'],
      {},
      'schoolhooks simulate: --down-for must be a duration of 1s or more, such as 5h or 2h 30m',
    ],
    [
      'a --down-for of no time',
      ['simulate', '--url', url, '--down-for', '0m'],
      {},
      'schoolhooks simulate: --down-for must be a duration of 1s or more, such as 5h or 2h 30m',
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
    expect(run.stdout.replaceAll('\n', ' ')).toContain(
      '2 usage error: a bad option, argument, number, URL or secret',
    );
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

/** The width the help is laid out for: a terminal's default. */
const WIDTH = 80;

/**
 * What a terminal of {@link WIDTH} columns shows badly in a help text: a line wider than it (the
 * terminal cuts it anywhere), trailing spaces, a line broken early while its sentence goes on
 * under it (the next word would have fitted), and an option's "(default …)" in the middle of its
 * sentence rather than at its end.
 */
function wrappingFaults(help: string): string[] {
  const faults: string[] = [];
  const lines = help.split('\n');
  const indentOf = (line: string): number => line.length - line.trimStart().length;
  lines.forEach((line, i) => {
    if (line.length > WIDTH) faults.push(`${line.length} columns: ${line}`);
    if (/\s$/.test(line)) faults.push(`trailing space: ${line}`);
    const next = lines[i + 1];
    if (next === undefined || next.trim() === '' || line.trim() === '') return;
    // A new entry: an option, another usage form, a `term  text` item, a less indented line, or a
    // new sentence or list after one that ended.
    const newEntry =
      /^\s*(-|schoolhooks )/.test(next) ||
      /^ +\S+(?: \S+)*? {2,}\S/.test(next) ||
      indentOf(next) < indentOf(line) ||
      (/[.:)]$/.test(line) && /^\s*[A-Z]/.test(next)) ||
      (line.endsWith(':') && indentOf(next) > indentOf(line));
    // An option whose flag leaves no room for its text has the text under it.
    if (newEntry || /^ +(-\w, )?--[\w-]+( [A-Z]+)?$/.test(line)) return;
    // The first word, a usage group (`[--secret S]...`, `<EventName | file.json>`) or a redirect
    // (`< body.json`) as one.
    const word = /^(\S*\[[^\]]*\]\S*|\S*<[^>]*>\S*|\S*< \S+|\S+)/.exec(next.trim())![0];
    if (line.length + 1 + word.length <= WIDTH) {
      faults.push(`broken early ("${word}" fits): ${line}`);
    }
    if (/\(default [^)]*\)$/.test(line)) faults.push(`a default in mid-sentence: ${line}`);
  });
  return faults;
}

describe(`every help fits ${WIDTH} columns and is wrapped whole`, () => {
  /** What `schoolhooks ...args` prints on stdout: the same `main` the bin runs, in this process. */
  async function printed(args: readonly string[]): Promise<string> {
    let stdout = '';
    const io: CliIo = {
      out: (text) => void (stdout += `${text}\n`),
      err: () => {},
      readStdin: async () => new Uint8Array(),
      stdinIsTty: true,
      env: {},
      untilStopped: async () => {},
    };
    expect(await main(args, io)).toBe(0);
    return stdout;
  }

  it.each([[], ...COMMANDS.map((command) => [command.name])])(
    'schoolhooks %s --help',
    async (...name) => {
      const help = await printed([...name.filter((word) => word !== undefined), '--help']);
      expect(help.length).toBeGreaterThan(100);
      expect(wrappingFaults(help)).toEqual([]);
    },
  );

  it('tells the faults it looks for', () => {
    expect(wrappingFaults(`${'x'.repeat(WIDTH)}\n${'y'.repeat(WIDTH + 1)}`)).toEqual([
      `${WIDTH + 1} columns: ${'y'.repeat(WIDTH + 1)}`,
    ]);
    // What inbox --help printed: a default appended to the first line of a two-line help.
    expect(
      wrappingFaults(
        '  --queue NAME    Queue name; a queue that is not there is a usage (default schoolhooks)\n' +
          '                  error that lists the ones there',
      ),
    ).toEqual([
      '88 columns:   --queue NAME    Queue name; a queue that is not there is a usage (default schoolhooks)',
      'a default in mid-sentence:   --queue NAME    Queue name; a queue that is not there is a usage (default schoolhooks)',
    ]);
    expect(wrappingFaults('Exit code 0 when it matches,\n1 when it does not.')).toEqual([
      'broken early ("1" fits): Exit code 0 when it matches,',
    ]);
    expect(wrappingFaults('Commands:\n  listen     Run a receiver\n  send       Send one')).toEqual(
      [],
    );
    expect(wrappingFaults('in ps)\nRepeat --secret to accept several')).toEqual([]);
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

  it('reads back what it prints (--down-for), and nothing else', () => {
    for (const ms of [
      15_000,
      11 * 60_000,
      (4 * 60 + 46) * 60_000,
      3_605_000,
      14 * 24 * 3_600_000,
    ]) {
      expect(durationOf(formatDuration(ms))).toBe(ms);
    }
    expect(durationOf('2h30m')).toBe(150 * 60_000);
    expect(durationOf('0s')).toBe(0);
    for (const text of [
      '',
      ' ',
      '5',
      '5 h',
      '5hours',
      '30m 2h',
      '1h 1h',
      ' 5h',
      '5h ',
      '1.5h',
      '-5h',
    ]) {
      expect(durationOf(text), text).toBeUndefined();
    }
  });
});
