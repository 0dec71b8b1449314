/**
 * examples/bull-board.js runs as written (its `schoolhooks` imports resolved to the sources): it
 * answers a delivery 202, its worker runs it, Bull Board lists the job, and SIGTERM ends it.
 */

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDelivery, SECRET } from '../helpers/deliveries.js';
import { startRedisServer, type RedisServerProcess } from '../helpers/redis.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let redis: RedisServerProcess;

beforeAll(async () => {
  redis = await startRedisServer();
});

afterAll(async () => {
  await redis?.close();
});

describe('examples/bull-board.js', () => {
  it('receives into the inbox, runs the job, shows it in Bull Board, and stops on SIGTERM', async () => {
    const queue = `example-${randomUUID()}`;
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--import',
        './test/helpers/source-packages.mjs',
        'examples/bull-board.js',
      ],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          PORT: '0',
          REDIS_URL: redis.url,
          INBOX_QUEUE: queue,
          SCHOOL_WEBHOOK_SECRET: SECRET,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const board = await vi.waitFor(
        () => {
          const found = /Bull Board on (http:\/\/localhost:\d+\/admin\/queues)/.exec(output);
          if (!found) throw new Error(`not listening yet: ${output}`);
          return found[1]!;
        },
        { timeout: 20_000, interval: 50 },
      );
      const webhooks = board.replace('/admin/queues', '/webhooks/school');

      const delivery = createTestDelivery('UserSignedIn');
      const answer = await fetch(webhooks, {
        method: 'POST',
        headers: delivery.headers,
        body: delivery.body,
      });
      expect(answer.status).toBe(202);

      const page = await fetch(board);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toContain('text/html');
      const jobs = await vi.waitFor(
        async () => {
          const response = await fetch(`${board}/api/queues?activeQueue=${queue}&status=completed`);
          const text = await response.text();
          // The job's data is shown without its signature (the formatter of the recipe).
          expect(text).not.toContain(delivery.headers['signature']!);
          const { queues } = JSON.parse(text) as {
            queues: { name: string; jobs: { id: string; returnValue: unknown; data: unknown }[] }[];
          };
          const listed = queues.find((q) => q.name === queue)?.jobs ?? [];
          expect(listed).toHaveLength(1);
          return listed;
        },
        { timeout: 10_000, interval: 50 },
      );
      expect(jobs[0]).toMatchObject({ id: delivery.idempotencyKey, returnValue: 'ignored' });
      expect(jobs[0]!.data).toMatchObject({ event: 'UserSignedIn', body: delivery.body });
    } finally {
      child.kill('SIGTERM');
    }
    // Its SIGTERM handler closes the server, the worker, the inbox and Redis: nothing is left open.
    expect(await exited).toBe(0);
  });
});
