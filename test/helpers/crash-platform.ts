/**
 * The platform's side of a crash test: receivers in child processes (bundled scripts that print
 * `listening <port>`, then lines the test reads, such as where a handler holds), killed and
 * replaced while signed deliveries are sent to them as the platform sends them, each retried until
 * it is answered 200, 201 or 202 (the answers that stop the platform's retries, docs/platform.md).
 * @module
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';

/** The answers after which the platform sends a delivery no more. */
const DELIVERED = new Set([200, 201, 202]);

/** One answer the platform got, or a connection that failed (`network`, with its cause's code). */
export interface Answered {
  readonly status: number | 'network';
  readonly outcome: string | undefined;
  readonly sentAt: number;
  readonly at: number;
}

/** Whether the platform stops retrying after this answer. */
export function isAccepted({ status }: Answered): boolean {
  return status !== 'network' && DELIVERED.has(status);
}

/** How many items fall in each group `by` names. */
export function countBy<T>(items: readonly T[], by: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[by(item)] = (counts[by(item)] ?? 0) + 1;
  return counts;
}

/** A receiver in a child process. */
export interface ChildReceiver {
  readonly pid: number;
  readonly port: number;
  readonly child: ChildProcess;
  readonly exited: Promise<unknown>;
  /** False once it was killed or has exited: the platform sends it nothing more. */
  alive: boolean;
}

/**
 * Starts `node <file>` with `env` and waits until it prints `listening <port>` (30 s at most).
 * Every line it prints is given to `onLine`, with the receiver once it listens.
 */
export async function startChildReceiver(
  file: string,
  env: NodeJS.ProcessEnv,
  onLine: (line: string, receiver: ChildReceiver | undefined) => void = () => {},
): Promise<ChildReceiver> {
  const child = spawn(process.execPath, [file], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let stdout = '';
  const self: { receiver?: ChildReceiver } = {};
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`receiver did not start: ${stderr}`)), 30_000);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      let newline: number;
      while ((newline = stdout.indexOf('\n')) !== -1) {
        const line = stdout.slice(0, newline);
        stdout = stdout.slice(newline + 1);
        const listening = /^listening (\d+)$/.exec(line);
        if (listening) {
          clearTimeout(timer);
          resolve(Number(listening[1]));
        }
        onLine(line, self.receiver);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`receiver exited with ${String(code)}: ${stderr}`));
    });
  });
  const started: ChildReceiver = { pid: child.pid!, port, child, exited, alive: true };
  self.receiver = started;
  void exited.then(() => (started.alive = false));
  return started;
}

/** Stops a receiver with SIGTERM (SIGKILL after 3 s); nothing for one that has exited. */
export async function stopChildReceiver({ child, exited }: ChildReceiver): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}

/** Posts `body` to a receiver on `port`, signed with `secret` as the platform signs it. */
export async function postSigned(port: number, body: string, secret: string): Promise<Answered> {
  const sentAt = Date.now();
  try {
    const response = await fetch(`http://127.0.0.1:${port}/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        signature: createHmac('sha256', secret).update(body).digest('hex'),
      },
      body,
    });
    const { outcome } = (await response.json()) as { outcome?: string };
    return { status: response.status, outcome, sentAt, at: Date.now() };
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const outcome = cause?.code ?? cause?.message ?? String(error);
    return { status: 'network', outcome, sentAt, at: Date.now() };
  }
}

/** The platform's delivery of each event: a UserSignedIn whose bytes are the same on every resend. */
export class SameBytes {
  readonly #bodies = new Map<string, string>();

  /** The delivery of `key`, made on first use. */
  of(key: string): { key: string; body: string } {
    let body = this.#bodies.get(key);
    if (body === undefined) {
      body = JSON.stringify({
        event: 'UserSignedIn',
        timestamp: new Date().toISOString(),
        idempotencyKey: key,
        data: {},
      });
      this.#bodies.set(key, body);
    }
    return { key, body };
  }
}
