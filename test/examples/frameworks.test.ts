/**
 * The framework examples run as written (their `schoolhooks` imports resolved to the sources):
 * each server answers a signed delivery 200 processed, keeps parsing its own JSON routes, and
 * ends on SIGTERM; the Lambda example invokes its handler with a base64 event and its retry.
 */

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { fixtureDelivery, SECRET } from '../helpers/deliveries.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function run(example: string, env: Record<string, string> = {}) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', './test/helpers/source-packages.mjs', example],
    {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', SCHOOL_WEBHOOK_SECRET: SECRET, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal === 'SIGTERM' ? 0 : code)),
  );
  return { child, exited, output: () => output };
}

// The NestJS example's handler logs through a provider injected into its own (under tsx, whose
// esbuild emits no decorator metadata): the line shows the dependency was there.
const INJECTED = /access granted to user \d+ for a payment of \d+/;

describe.each([
  ['examples/fastify.js', {}, undefined],
  ['examples/koa.js', {}, undefined],
  ['examples/nestjs.ts', { PLATFORM: 'express' }, INJECTED],
  ['examples/nestjs.ts', { PLATFORM: 'fastify' }, INJECTED],
])('%s %o', (example, env, handled) => {
  it('answers a signed delivery, keeps its JSON routes, and stops on SIGTERM', async () => {
    const { child, exited, output } = run(example, env);
    try {
      const webhooks = await vi.waitFor(
        () => {
          const found = /listening on (http:\/\/localhost:\d+\/webhooks\/school)/.exec(output());
          if (!found) throw new Error(`not listening yet: ${output()}`);
          return found[1]!;
        },
        { timeout: 20_000, interval: 50 },
      );
      const delivery = fixtureDelivery('PaymentCompleted');
      const answer = await fetch(webhooks, { method: 'POST', ...delivery });
      expect([answer.status, await answer.json()]).toEqual([
        200,
        { ok: true, outcome: 'processed', idempotencyKey: delivery.idempotencyKey },
      ]);
      const order = await fetch(webhooks.replace('/webhooks/school', '/orders'), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 7 }),
      });
      expect(await order.json()).toEqual({ received: { id: 7 } });
      // Each example logs the delivery from one of its handlers.
      expect(output()).toMatch(handled ?? new RegExp(`payment of \\d+|${delivery.idempotencyKey}`));
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});

describe('examples/lambda.js', () => {
  it('invokes its handler: processed, then duplicate for the retry', async () => {
    const { exited, output } = run('examples/lambda.js');
    expect(await exited).toBe(0);
    expect(output()).toMatch(/first: 200 \{"ok":true,"outcome":"processed"/);
    expect(output()).toMatch(/retry: 200 \{"ok":true,"outcome":"duplicate"/);
  });
});
