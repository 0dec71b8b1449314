/**
 * examples/bull-board.js (Express) and examples/bull-board-hono.js (Hono) run as written (their
 * `schoolhooks` imports resolved to the sources): each answers a delivery 202, its worker runs
 * it, Bull Board serves its page and lists the job without its signature, and SIGTERM ends it.
 */

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
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

interface BoardJob {
  id: string;
  returnValue: unknown;
  data: unknown;
}

describe.each(['examples/bull-board.js', 'examples/bull-board-hono.js'])('%s', (example) => {
  it('receives into the inbox, runs the job, shows it in Bull Board without its signature, and stops on SIGTERM', async () => {
    const queue = `example-${randomUUID()}`;
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--import', './test/helpers/source-packages.mjs', example],
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
    const stored = new Queue(queue, { connection: { host: '127.0.0.1', port: redis.port } });
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
      const signature = delivery.headers['signature']!;

      const answer = await fetch(webhooks, {
        method: 'POST',
        headers: delivery.headers,
        body: delivery.body,
      });
      expect(answer.status).toBe(202);

      const page = await fetch(board);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toContain('text/html');
      // The page is a shell for Bull Board's script, served from the same base path.
      const script = /<script[^>]* src="(static\/js\/main\.[^"]+\.js)"/.exec(await page.text());
      expect(script).not.toBeNull();
      const asset = await fetch(`${board}/${script![1]!}`);
      expect(asset.status).toBe(200);
      expect(asset.headers.get('content-type')).toContain('javascript');

      const jobs = await vi.waitFor(
        async () => {
          const response = await fetch(`${board}/api/queues?activeQueue=${queue}&status=completed`);
          const text = await response.text();
          // The job's data is shown without its signature (the formatter of the recipe).
          expect(text).not.toContain(signature);
          expect(text).not.toContain(SECRET);
          const { queues } = JSON.parse(text) as { queues: { name: string; jobs: BoardJob[] }[] };
          const listed = queues.find((q) => q.name === queue)?.jobs ?? [];
          expect(listed).toHaveLength(1);
          return listed;
        },
        { timeout: 10_000, interval: 50 },
      );
      expect(jobs[0]).toMatchObject({ id: delivery.idempotencyKey, returnValue: 'ignored' });
      expect(jobs[0]!.data).toMatchObject({ event: 'UserSignedIn', body: delivery.body });

      // The job's own page reads it from the API, also without its signature.
      const one = await fetch(`${board}/api/queues/${queue}/${encodeURIComponent(jobs[0]!.id)}`);
      expect(one.status).toBe(200);
      const text = await one.text();
      expect(text).not.toContain(signature);
      expect(text).not.toContain(SECRET);
      const { job, status } = JSON.parse(text) as { job: BoardJob; status: string };
      expect(status).toBe('completed');
      expect(job).toMatchObject({ id: delivery.idempotencyKey, returnValue: 'ignored' });
      expect(job.data).toMatchObject({ event: 'UserSignedIn', body: delivery.body });

      // Redis does hold the signature (the worker verifies it again): only the formatter hides it.
      const raw = await stored.getJob(jobs[0]!.id);
      expect(raw?.data).toMatchObject({ signature });
    } finally {
      child.kill('SIGTERM');
      await stored.close();
    }
    // Its SIGTERM handler closes the server, the worker, the inbox and Redis: nothing is left open.
    expect(await exited).toBe(0);
  });
});
