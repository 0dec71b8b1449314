/**
 * Every adapter's example (examples/<name>.js or .ts, one per subpath of package.json `exports`,
 * which test/package/adapters.test.ts requires) runs as written, its `schoolhooks` imports
 * resolved to the sources: a server answers a signed delivery 200 processed, keeps parsing its
 * own JSON routes when it shows one (an `orders` route), and ends on SIGTERM; an example that runs
 * to its end (the Lambda one invokes its handler) answers the delivery processed, then its retry
 * duplicate.
 */

import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { ADAPTERS } from '../../scripts/entries.mjs';
import { fixtureDelivery, SECRET } from '../helpers/deliveries.js';

const ROOT_URL = new URL('../../', import.meta.url);
const ROOT = fileURLToPath(ROOT_URL);

/** The settings an example runs in besides its default: the NestJS example's two platforms. */
const VARIANTS: Readonly<Record<string, readonly Record<string, string>[]>> = {
  nestjs: [{ PLATFORM: 'express' }, { PLATFORM: 'fastify' }],
};

/**
 * What an example's handler logs of the delivery, where more than the default says it ran right:
 * the NestJS example's handler logs through a provider injected into its own (under tsx, whose
 * esbuild emits no decorator metadata), so the line shows the dependency was there.
 */
const LOGGED: Readonly<Record<string, RegExp>> = {
  nestjs: /access granted to user \d+ for a payment of \d+/,
};

/** Each adapter's example, once per setting it runs in. */
const RUNS = ADAPTERS.flatMap((name) => {
  const example = [`examples/${name}.js`, `examples/${name}.ts`].find((path) =>
    existsSync(new URL(path, ROOT_URL)),
  );
  // A missing example fails test/package/adapters.test.ts, by name.
  if (example === undefined) return [];
  return (VARIANTS[name] ?? [{}]).map((env) => [example, env, LOGGED[name]] as const);
});

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
  let ended = false;
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => {
      ended = true;
      resolve(signal === 'SIGTERM' ? 0 : code);
    }),
  );
  /** The webhook URL once the server listens, or undefined if the example ran to its end. */
  async function started(): Promise<string | undefined> {
    for (let waited = 0; waited < 60_000; waited += 50) {
      const found = /listening on (http:\/\/localhost:\d+\/webhooks\/school)/.exec(output);
      if (found) return found[1]!;
      if (ended) return undefined;
      await sleep(50);
    }
    throw new Error(`not listening after 60 s: ${output}`);
  }
  return { child, exited, started, output: () => output };
}

describe.each(RUNS)('%s %o', (example, env, logged) => {
  it('answers a signed delivery as the platform expects, and stops', async () => {
    const { child, exited, started, output } = run(example, env);
    try {
      const webhooks = await started();
      if (webhooks === undefined) {
        // An example that invokes its own handler with a delivery and the retry.
        expect(await exited).toBe(0);
        expect(output()).toMatch(/first: 200 \{"ok":true,"outcome":"processed"/);
        expect(output()).toMatch(/retry: 200 \{"ok":true,"outcome":"duplicate"/);
        return;
      }
      const delivery = fixtureDelivery('PaymentCompleted');
      const answer = await fetch(webhooks, { method: 'POST', ...delivery });
      expect([answer.status, await answer.json()]).toEqual([
        200,
        { ok: true, outcome: 'processed', idempotencyKey: delivery.idempotencyKey },
      ]);
      if (/['"]\/?orders['"]/.test(readFileSync(new URL(example, ROOT_URL), 'utf8'))) {
        const order = await fetch(webhooks.replace('/webhooks/school', '/orders'), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id: 7 }),
        });
        expect(await order.json()).toEqual({ received: { id: 7 } });
      }
      // Each example logs the delivery from one of its handlers (the line may reach this
      // process's pipe after the answer).
      await vi.waitFor(() =>
        expect(output()).toMatch(
          logged ?? new RegExp(`payment of \\d+|${delivery.idempotencyKey}`),
        ),
      );
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 90_000);
});
