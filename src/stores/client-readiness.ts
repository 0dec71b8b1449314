/**
 * Waiting for a Redis client to be ready, for calls that must fail fast: shared by `redisStore`
 * and `bullmqInbox`, which must never queue a command to run after its caller was told it failed.
 * @module
 */

import { noop } from '../utils/noop.js';

/** The part of an ioredis `Redis` or `Cluster` this needs (no import of ioredis). */
export interface StatusClient {
  readonly status: string;
  connect(): Promise<unknown>;
  on(event: string, listener: (error?: unknown) => void): unknown;
  off(event: string, listener: (error?: unknown) => void): unknown;
}

/** A call waiting for the client: whether it gave up, and a signal that says when it does. */
export interface WaitingCall {
  readonly aborted: boolean;
  readonly signal?: AbortSignal;
}

/** Events of ioredis that end a connection attempt, one way or the other. */
const STATUS_EVENTS: readonly string[] = ['ready', 'close', 'end'];

/**
 * Make `whenReady(call)` for `client`: it resolves once the client is ready. A client still
 * connecting (a process that just started, or a `lazyConnect` client, which it starts) is waited
 * for until the attempt succeeds, fails or the call gives up; one that is reconnecting, closing
 * or closed fails at once with `notReady()`, its `cause` the connection error seen last while a
 * call waited (when `notReady()` gave none). One set of listeners serves every waiting call.
 *
 * @example
 * ```ts
 * const whenReady = readinessOf(client, () => new Error('Redis is not ready'));
 * if (client.status !== 'ready') await whenReady(call);
 * ```
 */
export function readinessOf(
  client: StatusClient,
  notReady: () => Error,
): (call: WaitingCall) => Promise<void> {
  let statusChange: Promise<void> | undefined;
  // Why the last attempt a call waited for failed (connect ECONNREFUSED …), for notReady's cause.
  let lastError: unknown;

  /**
   * Settles when the connection attempt ends either way. Its error is listened to only while a
   * call waits (a listener would otherwise stop ioredis printing an error nobody handles).
   */
  function nextStatusChange(): Promise<void> {
    statusChange ??= new Promise<void>((resolve) => {
      const failed = (error?: unknown): void => {
        lastError = error;
      };
      const settle = (): void => {
        for (const event of STATUS_EVENTS) client.off(event, settle);
        client.off('error', failed);
        statusChange = undefined;
        if (client.status === 'ready') lastError = undefined;
        resolve();
      };
      for (const event of STATUS_EVENTS) client.on(event, settle);
      client.on('error', failed);
    });
    return statusChange;
  }

  /** notReady's error, caused by the last connection error seen, so its message can say why. */
  function notReadyWithCause(): Error {
    const error = notReady();
    if (lastError !== undefined && error.cause === undefined) error.cause = lastError;
    return error;
  }

  return async function whenReady(call) {
    for (;;) {
      const { status } = client;
      if (status === 'ready') return;
      if (status === 'wait') client.connect().catch(noop);
      else if (status !== 'connecting' && status !== 'connect') throw notReadyWithCause();
      if (call.aborted) throw notReadyWithCause();
      const { signal } = call;
      await (signal === undefined
        ? nextStatusChange()
        : Promise.race([
            nextStatusChange(),
            new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve())),
          ]));
      if (call.aborted) throw notReadyWithCause();
    }
  };
}
