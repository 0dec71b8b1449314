import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { nodeListener } from '../src/adapters/node.js';
import {
  createReceiver,
  HandlerError,
  memoryStore,
  type IdempotencyStore,
  type Logger,
} from '../src/index.js';
import { listen, post, type AdapterServer } from './adapters/suite.js';
import { createTestDelivery, fixtureDelivery, SECRET } from './helpers/deliveries.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/console-receiver.ts', import.meta.url));

/** The fixture receiver in a child process; its stderr as it comes. */
async function startChild(mode: 'handler' | 'express') {
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    ['--import', 'tsx', FIXTURE, mode],
    { env: { ...process.env, SECRET } },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /listening (\d+)/.exec(stdout);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`the receiver exited with ${code}: ${stderr}`)));
  });
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    /** Stderr once it holds `text` (a line is written after the answer is sent). */
    async stderrHolding(text: string): Promise<string> {
      await vi.waitFor(() => expect(stderr).toContain(text), { timeout: 10_000, interval: 50 });
      return stderr;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

describe('a receiver without a logger', () => {
  let stop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await stop?.();
    stop = undefined;
  });

  it("writes a handler's thrown message to stderr, on one line, without the secret", async () => {
    const child = await startChild('handler');
    stop = child.stop;
    const delivery = fixtureDelivery('PaymentCompleted');
    expect((await post(child.url, delivery)).status).toBe(500);
    const stderr = await child.stderrHolding('crm hiccup');
    const lines = stderr.split('\n').filter((line) => line.includes('crm hiccup'));
    expect(lines).toEqual([
      `schoolhooks: webhook handler failed: a handler of PaymentCompleted failed: crm hiccup ` +
        `(idempotencyKey ${delivery.idempotencyKey}) ` +
        `(event=PaymentCompleted idempotencyKey=${delivery.idempotencyKey})`,
    ]);
    expect(stderr).not.toContain(SECRET);
    expect(stderr).not.toContain(delivery.headers['signature']);
  });

  it('prints the body-parser fix when express.json() is mounted first', async () => {
    const child = await startChild('express');
    stop = child.stop;
    const answer = await post(child.url, createTestDelivery());
    expect(answer).toMatchObject({ status: 500, body: { outcome: 'body_unavailable' } });
    const stderr = await child.stderrHolding('body parser');
    expect(stderr).toContain('mount expressMiddleware before express.json()');
    expect(stderr).toContain('rawBodySaver');
  });
});

describe('the receiver and the console', () => {
  let server: AdapterServer | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await server?.close();
    server = undefined;
  });

  function spyConsole() {
    return {
      warn: vi.spyOn(console, 'warn').mockImplementation(() => {}),
      error: vi.spyOn(console, 'error').mockImplementation(() => {}),
      info: vi.spyOn(console, 'info').mockImplementation(() => {}),
      log: vi.spyOn(console, 'log').mockImplementation(() => {}),
      debug: vi.spyOn(console, 'debug').mockImplementation(() => {}),
    };
  }

  async function serve(receiver: ReturnType<typeof createReceiver>): Promise<string> {
    server = await listen(createServer(nodeListener(receiver)).listen(0, '127.0.0.1'), '/');
    return server.url;
  }

  it('writes one console line per failure and none for a processed delivery', async () => {
    const console_ = spyConsole();
    const receiver = createReceiver({ secret: SECRET }).onAny(() => {});
    const url = await serve(receiver);
    expect((await post(url, createTestDelivery())).status).toBe(200);
    expect(
      (await post(url, createTestDelivery('UserSignedIn', {}, { secret: 'other' }))).status,
    ).toBe(401);
    expect(console_.warn).toHaveBeenCalledTimes(1);
    expect(console_.warn.mock.calls[0]![0]).toMatch(/^schoolhooks: webhook invalid signature: /);
    for (const quiet of [console_.error, console_.info, console_.log, console_.debug]) {
      expect(quiet).not.toHaveBeenCalled();
    }
  });

  it('prints one line per failure with an onError handler: its own, none of the console fallback', async () => {
    const console_ = spyConsole();
    const told: string[] = [];
    const receiver = createReceiver({ secret: SECRET })
      .on('UserSignedIn', () => {
        throw new Error('crm hiccup');
      })
      .onError((error) => {
        told.push(error.code);
        console.error(`my app: ${error.message}`);
      });
    const url = await serve(receiver);
    expect((await post(url, createTestDelivery())).status).toBe(500);
    expect(
      (await post(url, createTestDelivery('UserSignedIn', {}, { secret: 'other' }))).status,
    ).toBe(401);
    expect(told).toEqual(['handler_failed', 'invalid_signature']);
    // Two failures, two lines in all: each the handler's.
    const lines = [...console_.warn.mock.calls, ...console_.error.mock.calls].map(([line]) =>
      String(line),
    );
    expect(lines).toHaveLength(2);
    expect(lines.every((line) => line.startsWith('my app: '))).toBe(true);
    for (const quiet of [console_.info, console_.log, console_.debug]) {
      expect(quiet).not.toHaveBeenCalled();
    }
  });

  it('prints one line per failure without an onError handler, and none with a silent one', async () => {
    const console_ = spyConsole();
    const failing = () => {
      throw new Error('crm hiccup');
    };
    const unheard = createReceiver({ secret: SECRET }).on('UserSignedIn', failing);
    const url = await serve(unheard);
    expect((await post(url, createTestDelivery())).status).toBe(500);
    expect(console_.warn.mock.calls.length + console_.error.mock.calls.length).toBe(1);
    expect(String(console_.error.mock.calls[0]![0])).toMatch(
      /^schoolhooks: webhook handler failed: a handler of UserSignedIn failed: crm hiccup /,
    );
    await server!.close();
    server = undefined;

    console_.warn.mockClear();
    console_.error.mockClear();
    const heard: string[] = [];
    const silent = createReceiver({ secret: SECRET })
      .on('UserSignedIn', failing)
      .onError((error) => void heard.push(error.code));
    const silentUrl = await serve(silent);
    expect((await post(silentUrl, createTestDelivery())).status).toBe(500);
    expect(heard).toEqual(['handler_failed']);
    expect(console_.warn).not.toHaveBeenCalled();
    expect(console_.error).not.toHaveBeenCalled();
  });

  it('stays silent with logger: false', async () => {
    const console_ = spyConsole();
    const receiver = createReceiver({ secret: SECRET, logger: false }).on('UserSignedIn', () => {
      throw new Error('crm hiccup');
    });
    const url = await serve(receiver);
    expect((await post(url, createTestDelivery())).status).toBe(500);
    expect(
      (await post(url, createTestDelivery('UserSignedIn', {}, { secret: 'other' }))).status,
    ).toBe(401);
    for (const spy of Object.values(console_)) expect(spy).not.toHaveBeenCalled();
  });

  it('gives the logger it is given every line, and the console none', async () => {
    const console_ = spyConsole();
    const lines: [string, string | undefined][] = [];
    const logger: Logger = {
      debug: (_, msg) => lines.push(['debug', msg]),
      info: (_, msg) => lines.push(['info', msg]),
      warn: (_, msg) => lines.push(['warn', msg]),
      error: (_, msg) => lines.push(['error', msg]),
    };
    const receiver = createReceiver({ secret: SECRET, logger }).onAny(() => {});
    const url = await serve(receiver);
    await post(url, createTestDelivery());
    expect(lines).toEqual([['info', 'webhook processed']]);
    for (const spy of Object.values(console_)) expect(spy).not.toHaveBeenCalled();
  });

  it('reports a failure outside a delivery to the console when no onError is registered', async () => {
    const console_ = spyConsole();
    const store = memoryStore();
    const failing: IdempotencyStore = {
      ...store,
      settle: (claim, how) =>
        how === 'complete' ? Promise.reject(new Error('disk full')) : store.settle(claim, how),
    };
    const receiver = createReceiver({ secret: SECRET, store: failing }).onAny(() => {});
    const url = await serve(receiver);
    expect((await post(url, createTestDelivery())).status).toBe(200);
    expect(console_.warn).toHaveBeenCalledWith(
      'schoolhooks: webhook failure: the idempotency store failed to record completion: disk full',
    );
  });

  it("puts the cause's message in a HandlerError, bounded, on one line, without a secret", async () => {
    const errors: HandlerError[] = [];
    const long = 'x'.repeat(5000);
    const receiver = createReceiver({ secret: ['whsec_live_1a2b3c4d5e6f', SECRET], logger: false })
      .on('UserSignedIn', () => {
        throw new Error(`token whsec_live_1a2b3c4d5e6f refused\nthen ${long}`);
      })
      .onError((error) => void errors.push(error as HandlerError));
    const url = await serve(receiver);
    const delivery = createTestDelivery();
    await post(url, delivery);
    const [error] = errors;
    expect(error).toBeInstanceOf(HandlerError);
    expect(error!.message).toMatch(
      /^a handler of UserSignedIn failed: token \[hidden\] refused then x+… \(idempotencyKey /,
    );
    expect(error!.message).not.toContain('whsec_live');
    expect(error!.message.length).toBeLessThan(450);
    expect((error!.cause as Error).message).toContain(long);
  });

  it('names each failure of several handlers, and what was thrown when it is not an Error', async () => {
    const errors: HandlerError[] = [];
    const receiver = createReceiver({ secret: SECRET, logger: false })
      .on('UserSignedIn', () => Promise.reject(new Error('crm hiccup')))
      .on('UserSignedIn', () => {
        throw 'mail down';
      })
      .onError((error) => void errors.push(error as HandlerError));
    const url = await serve(receiver);
    await post(url, createTestDelivery());
    expect(errors[0]!.message).toMatch(
      /^a handler of UserSignedIn failed: 2 handlers failed: crm hiccup; mail down \(idempotencyKey /,
    );
  });
});
