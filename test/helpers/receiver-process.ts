/**
 * A receiver in a child process, for tests in which what matters is that the process lives on:
 * it is started from a bundled script (test/helpers/bundle.ts) that prints `listening <port>`,
 * and every `onError <json>` line it prints is kept.
 * @module
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { expect } from 'vitest';
import { createTestDelivery, SECRET } from './deliveries.js';
import { sleep } from './redis.js';

/** What a child's `onError` handler was told of one failure. */
export interface ToldError {
  readonly name: string;
  readonly code: string;
  readonly message: string;
}

/** A receiver process a test controls. */
export interface ReceiverProcess {
  readonly port: number;
  readonly child: ChildProcess;
  /** Every failure its `onError` was told of, in order. */
  readonly told: ToldError[];
  /** Its exit code or signal, once it has exited (it never should). */
  exit: string | undefined;
  /** What it wrote on stderr. */
  readonly stderr: string[];
  stop(): Promise<void>;
}

/** Starts `node <file>` with `env`, and waits until it prints `listening <port>`. */
export async function startReceiverProcess(
  file: string,
  env: Record<string, string>,
): Promise<ReceiverProcess> {
  const child = spawn(process.execPath, [file], {
    env: { ...process.env, SECRET, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const told: ToldError[] = [];
  const stderr: string[] = [];
  let buffered = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const listening = new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let end: number;
      while ((end = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 1);
        if (line.startsWith('listening ')) resolve(Number(line.slice('listening '.length)));
        if (line.startsWith('onError ')) {
          told.push(JSON.parse(line.slice('onError '.length)) as ToldError);
        }
      }
    });
    child.once('exit', (code, signal) => reject(new Error(`exited (${code ?? signal})`)));
  });
  child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
  const receiver: ReceiverProcess = {
    port: 0,
    child,
    told,
    exit: undefined,
    stderr,
    async stop() {
      if (receiver.exit === undefined) child.kill('SIGTERM');
      await exited;
    },
  };
  child.once('exit', (code, signal) => {
    receiver.exit = String(code ?? signal);
  });
  const port = await listening.catch((error: unknown) => {
    throw new Error(`the receiver process did not start: ${stderr.join('')}`, { cause: error });
  });
  return Object.assign(receiver, { port });
}

/** The status a signed delivery to `receiver` is answered with (`'network'`: no answer). */
export async function deliver(receiver: ReceiverProcess): Promise<number | 'network'> {
  const { body, headers } = createTestDelivery();
  try {
    const response = await fetch(`http://127.0.0.1:${receiver.port}/`, {
      method: 'POST',
      headers,
      body,
      signal: AbortSignal.timeout(5000),
    });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 'network';
  }
}

/** Delivers fresh events until one is answered `status`, for at most `withinMs`; the answers. */
export async function deliverUntil(
  receiver: ReceiverProcess,
  status: number,
  withinMs: number,
): Promise<(number | 'network')[]> {
  const answers: (number | 'network')[] = [];
  const until = Date.now() + withinMs;
  while (Date.now() < until) {
    const answer = await deliver(receiver);
    answers.push(answer);
    if (answer === status) return answers;
    await sleep(200);
  }
  return answers;
}

/** Waits until `receiver`'s onError has been told more than `count` failures, for `withinMs`. */
export async function toldMoreThan(
  receiver: ReceiverProcess,
  count: number,
  withinMs: number,
): Promise<ToldError[]> {
  const until = Date.now() + withinMs;
  while (receiver.told.length <= count && Date.now() < until) await sleep(50);
  return receiver.told.slice(count);
}

/** What `onError` is told while a receiver's store is away. */
export const STORE_UNAVAILABLE = { name: 'StoreUnavailableError', code: 'store_unavailable' };

/**
 * The story of a store that goes away and comes back, under a receiver process: `stop` takes it
 * away and onError is told `store_unavailable` (within 5 s, with no delivery sent); a delivery
 * meanwhile (unless `whileDown` is false) is answered 503, which the platform retries; `start`
 * brings it back and deliveries are answered 200 again within 15 s, none of them dropped. The
 * process never exits, and is told nothing but `store_unavailable`.
 */
export async function expectStoreComesBack(
  receiver: ReceiverProcess,
  {
    stop,
    start,
    whileDown = true,
  }: { stop: () => Promise<unknown>; start: () => Promise<unknown>; whileDown?: boolean },
): Promise<void> {
  const before = receiver.told.length;
  await stop();
  const told = await toldMoreThan(receiver, before, 5000);
  expect(receiver.exit).toBeUndefined();
  expect(told[0]).toMatchObject(STORE_UNAVAILABLE);
  if (whileDown) expect(await deliver(receiver)).toBe(503);
  await start();
  const answers = await deliverUntil(receiver, 200, 15_000);
  expect(answers.at(-1)).toBe(200);
  expect(answers).not.toContain('network');
  expect(receiver.exit).toBeUndefined();
  expect(receiver.told.every((error) => error.code === 'store_unavailable')).toBe(true);
}
