/**
 * `schoolhooks inbox` against a real Redis and a real BullMQ inbox holding a completed job, a
 * dead letter and a waiting job.
 */

import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { main } from '../../src/cli/main.js';
import { bullmqInbox, type BullmqInbox } from '../../src/inbox/bullmq.js';
import { createReceiver, memoryStore, type Receiver } from '../../src/index.js';
import {
  createTestDelivery,
  fixtureDelivery,
  SECRET,
  type Delivery,
} from '../helpers/deliveries.js';
import { freePort, useTestRedis, type TestRedis, keysMatching } from '../helpers/redis.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let redis: TestRedis;
let client: Redis;
let inbox: BullmqInbox;
let receiver: Receiver;
const queue = `cli-${randomUUID()}`;
const prefix = `test-bull-cli-${randomUUID().slice(0, 8)}`;
const signatures: string[] = [];
let done: Delivery;
let dead: Delivery;
let waiting: Delivery;

async function cli(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    out: (text) => void (stdout += `${text}\n`),
    err: (text) => void (stderr += `${text}\n`),
    readStdin: async () => new Uint8Array(),
    stdinIsTty: true,
    env: { REDIS_URL: redis.url, ...env },
    untilStopped: () => new Promise(() => {}),
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

const target = () => ['--queue', queue, '--prefix', prefix];

async function deliver(delivery: Delivery): Promise<void> {
  signatures.push(delivery.headers['signature']!);
  const result = await receiver.handle({ method: 'POST', ...delivery });
  expect(result.outcome).toBe('queued');
}

beforeAll(async () => {
  redis = await useTestRedis();
  client = new Redis(redis.url);
  inbox = bullmqInbox({ connection: client, queueName: queue, prefix, backoffMs: 10 });
  receiver = createReceiver({ secret: SECRET, store: memoryStore(), inbox });
  receiver.on('UserSignedIn', () => {});
  done = createTestDelivery('UserSignedIn', { user: { id: 1 } }, { idempotencyKey: 'cli:done' });
  dead = fixtureDelivery(
    'PaymentCompleted',
    (data) => {
      (data['payment'] as { invoice: Record<string, unknown> }).invoice['totalAmount'] = 'lots';
    },
    { idempotencyKey: `dead-${randomUUID()}` },
  );
  await deliver(done);
  await deliver(dead);
  const worker = inbox.work(receiver);
  await vi.waitFor(
    async () => {
      expect(await inbox.jobs({ state: 'completed' })).toHaveLength(1);
      expect(await inbox.jobs({ state: 'failed' })).toHaveLength(1);
    },
    { timeout: 10_000, interval: 25 },
  );
  await worker.close();
  // Stored after the worker stopped: it stays waiting.
  waiting = createTestDelivery('UserSignedIn', { user: { id: 2 } });
  await deliver(waiting);
});

afterAll(async () => {
  await inbox?.queue.obliterate({ force: true });
  await inbox?.close();
  client?.disconnect();
  await redis?.close();
});

/** Nothing secret or signed in what the CLI printed. */
function expectNothingSecret(run: Run): void {
  for (const text of [run.stdout, run.stderr]) {
    expect(text).not.toContain(SECRET);
    for (const signature of signatures) expect(text).not.toContain(signature);
    expect(text).not.toContain('"body"');
  }
}

describe('schoolhooks inbox list', () => {
  it('lists every job with its state, attempts, event and reason', async () => {
    const run = await cli(['inbox', 'list', ...target()]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+STATE\s+ATTEMPTS\s+EVENT\s+RECEIVED\s+REASON$/);
    expect(lines.at(-1)).toBe('3 jobs');
    // The id of `cli:done` is escaped (BullMQ refuses ':' in ids).
    expect(run.stdout).toMatch(/cli%3Adone\s+completed\s+1\s+UserSignedIn/);
    expect(run.stdout).toMatch(
      new RegExp(
        `${dead.idempotencyKey}\\s+failed\\s+1\\s+PaymentCompleted\\s+\\S+\\s+invalid_payload: `,
      ),
    );
    expect(run.stdout).toMatch(
      new RegExp(`${waiting.idempotencyKey}\\s+waiting\\s+0\\s+UserSignedIn`),
    );
    expectNothingSecret(run);
  });

  it('lists one state, as JSON too', async () => {
    const run = await cli(['inbox', 'list', '--state', 'failed', '--json', ...target()]);
    expect(run.code).toBe(0);
    const jobs = JSON.parse(run.stdout) as Record<string, unknown>[];
    expect(jobs).toEqual([
      {
        id: dead.idempotencyKey,
        event: 'PaymentCompleted',
        idempotencyKey: dead.idempotencyKey,
        state: 'failed',
        attemptsMade: 1,
        reason: expect.stringMatching(/^invalid_payload: .*totalAmount/),
        receivedAt: expect.stringMatching(/^\d{4}-/),
      },
    ]);
    expectNothingSecret(run);
  });

  it('says so when a state holds no job', async () => {
    const run = await cli(['inbox', 'list', '--state', 'active', ...target()]);
    expect(run).toEqual({ code: 0, stdout: '0 jobs\n', stderr: '' });
  });
});

describe('schoolhooks inbox show', () => {
  it('shows one job by its idempotencyKey or its id, never its signature', async () => {
    const byKey = await cli(['inbox', 'show', 'cli:done', ...target()]);
    expect(byKey.code).toBe(0);
    expect(byKey.stdout).toMatch(/^id:\s+cli%3Adone$/m);
    expect(byKey.stdout).toMatch(/^idempotencyKey:\s+cli:done$/m);
    expect(byKey.stdout).toMatch(/^state:\s+completed$/m);
    expect(byKey.stdout).toMatch(/^outcome:\s+processed$/m);
    expect(byKey.stdout).toMatch(/^attempts:\s+1$/m);
    expect(byKey.stdout).toMatch(/^finishedAt:\s+\d{4}-/m);
    expect(byKey.stdout).not.toMatch(/^reason:/m);
    expectNothingSecret(byKey);
    const byId = await cli(['inbox', 'show', 'cli%3Adone', '--json', ...target()]);
    expect(JSON.parse(byId.stdout)).toMatchObject({
      idempotencyKey: 'cli:done',
      state: 'completed',
    });

    const failed = await cli(['inbox', 'show', dead.idempotencyKey, ...target()]);
    expect(failed.stdout).toMatch(/^reason:\s+invalid_payload: PaymentCompleted payload failed/m);
    expectNothingSecret(failed);
  });

  it('exits 1 for a job it does not hold', async () => {
    const run = await cli(['inbox', 'show', 'nope', ...target()]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("no job 'nope'");
  });
});

describe('schoolhooks inbox retry', () => {
  it('retries a named dead letter, and exits 1 for a job that is not one', async () => {
    const run = await cli([
      'inbox',
      'retry',
      dead.idempotencyKey,
      waiting.idempotencyKey,
      ...target(),
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe(`retried ${dead.idempotencyKey}\n`);
    expect(run.stderr).toBe(
      `schoolhooks inbox: ${waiting.idempotencyKey}: not a dead letter in this inbox\n`,
    );
    expect(await inbox.getJob(dead.idempotencyKey)).toMatchObject({
      state: 'waiting',
      attemptsMade: 0,
    });
  });

  it('retries --all dead letters, of one --event', async () => {
    // The retried job fails again (nothing was fixed): a dead letter once more.
    const worker = inbox.work(receiver);
    await vi.waitFor(
      async () =>
        expect(await inbox.getJob(dead.idempotencyKey)).toMatchObject({ state: 'failed' }),
      { timeout: 10_000, interval: 25 },
    );
    await worker.close();
    const other = await cli(['inbox', 'retry', '--all', '--event', 'UserSignedIn', ...target()]);
    expect(other).toEqual({ code: 0, stdout: '0 dead letters back in the queue\n', stderr: '' });
    const all = await cli(['inbox', 'retry', '--all', '--event', 'PaymentCompleted', ...target()]);
    expect(all).toEqual({ code: 0, stdout: '1 dead letter back in the queue\n', stderr: '' });
    expect(await inbox.jobs({ state: 'failed' })).toEqual([]);
  });
});

describe('schoolhooks inbox: a queue that is not there', () => {
  /** Every key of the test's prefix, and any key anywhere that names `name`. */
  async function keysOf(name: string): Promise<{ prefixed: string[]; named: string[] }> {
    return {
      prefixed: (await keysMatching(client, `${prefix}:*`)).sort(),
      named: await keysMatching(client, `*${name}*`),
    };
  }

  it.each([['list'], ['show', 'cli:done'], ['retry', 'cli:done']])(
    'exits 2 for %s, names the queues under the prefix, and writes no key',
    async (...action) => {
      const typo = `cli-typo-${randomUUID()}`;
      const before = await keysOf(typo);
      const run = await cli(['inbox', ...action, '--queue', typo, '--prefix', prefix]);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(
        `schoolhooks inbox: no queue '${typo}' under the prefix '${prefix}' in this Redis; ` +
          `the queues there: ${queue}\n`,
      );
      expect(await keysOf(typo)).toEqual({ prefixed: before.prefixed, named: [] });
    },
  );

  it('says so when the prefix holds no queue at all', async () => {
    const empty = `test-bull-none-${randomUUID().slice(0, 8)}`;
    const run = await cli(['inbox', 'list', '--prefix', empty]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      `no queue 'schoolhooks' under the prefix '${empty}' in this Redis, nor any other queue ` +
        '(check --redis and --prefix)',
    );
    expect(await keysMatching(client, `${empty}:*`)).toEqual([]);
  });

  it('finds a queue by its jobs when its meta key is gone', async () => {
    const meta = `${prefix}:${queue}:meta`;
    const saved = await client.hgetall(meta);
    await client.del(meta);
    try {
      const run = await cli(['inbox', 'list', '--state', 'active', ...target()]);
      expect(run).toEqual({ code: 0, stdout: '0 jobs\n', stderr: '' });
    } finally {
      await client.hset(meta, saved);
    }
  });
});

describe('schoolhooks inbox: usage and failures', () => {
  it.each([
    [['inbox'], 'name an action'],
    [['inbox', 'drop'], "unknown action 'drop'"],
    [['inbox', 'list', '--state', 'lost'], '--state must be one of'],
    [['inbox', 'show'], 'show takes one job id'],
    [['inbox', 'retry'], 'retry takes job ids, or --all'],
    [['inbox', 'retry', 'a', '--all'], 'retry takes job ids, or --all'],
    [['inbox', 'list', '--event', 'X'], '--event is for retry --all'],
    [['inbox', 'list', '--redis', 'http://localhost'], 'redis:// or rediss://'],
    [['inbox', 'list', '--queue', 'a:b'], 'without ":"'],
  ])('exits 2 for %j', async (args, message) => {
    const run = await cli(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
  });

  it('reads the Redis at redis://127.0.0.1:6379 without --redis or REDIS_URL', async () => {
    const run = await cli(['inbox', 'list', ...target()], { REDIS_URL: '' });
    if (redis.url === 'redis://127.0.0.1:6379') {
      // The suite's Redis is the default one: the inbox's jobs are listed from it.
      expect(run.stdout).toContain('3 jobs');
      expect(run.code).toBe(0);
    } else {
      // The suite runs its own Redis elsewhere: the default one is tried, and answers nothing.
      expect(run.stderr).toMatch(
        /cannot reach Redis at redis:\/\/127\.0\.0\.1:6379|no queue '[^']+' under the prefix/,
      );
    }
  });

  it('exits 1 soon when Redis cannot be reached, without printing the password', async () => {
    const port = await freePort();
    const startedAt = performance.now();
    const run = await cli(['inbox', 'list', '--redis', `redis://user:hunter2@127.0.0.1:${port}`]);
    expect(performance.now() - startedAt).toBeLessThan(5000);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`cannot reach Redis at redis://***@127.0.0.1:${port}`);
    expect(run.stderr).not.toContain('hunter2');
  });

  it('prints its help', async () => {
    const run = await cli(['inbox', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('schoolhooks inbox retry <id>... | --all [--event NAME]');
  });
});
