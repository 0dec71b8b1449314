/**
 * readinessOf: how a store or an inbox waits for its client before sending a command. The Redis
 * store and the BullMQ inbox test it on real Redis; these cases drive every status and every
 * way a wait ends with a client whose status the test sets, so each rule is seen on its own.
 */

import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  readinessOf,
  type StatusClient,
  type WaitingCall,
} from '../../src/stores/client-readiness.js';

/** A client whose status the test moves, as ioredis moves its own and says so by an event. */
class FakeClient extends EventEmitter implements StatusClient {
  status = 'wait';
  connects = 0;
  connect(): Promise<void> {
    this.connects++;
    this.status = 'connecting';
    return Promise.resolve();
  }
  /** Moves to `status` and emits what ioredis emits for it. */
  become(status: 'ready' | 'close' | 'end' | 'connect'): void {
    this.status = status;
    this.emit(status);
  }
}

/** A call like BoundedCalls' own: aborted, and its signal fired, at the deadline. */
function boundedCall(): WaitingCall & { abort(): void } {
  const controller = new AbortController();
  return {
    get aborted() {
      return controller.signal.aborted;
    },
    signal: controller.signal,
    abort: () => controller.abort(),
  };
}

const NOT_READY = 'the client is not ready';
const notReady = () => new Error(NOT_READY);

/** What a wait came to within `ms`: resolved, its error's message, or still waiting. */
async function outcomeOf(waiting: Promise<void>, ms = 200): Promise<string> {
  const timer = new Promise<string>((resolve) => setTimeout(() => resolve('still waiting'), ms));
  const settled = waiting.then(
    () => 'ready',
    (error: unknown) => (error instanceof Error ? error.message : `rejected with ${String(error)}`),
  );
  return Promise.race([settled, timer]);
}

describe('readinessOf', () => {
  it('goes on at once for a ready client', async () => {
    const client = new FakeClient();
    client.status = 'ready';
    expect(await outcomeOf(readinessOf(client, notReady)({ aborted: false }), 50)).toBe('ready');
  });

  it('connects a lazy client and goes on once it is ready', async () => {
    const client = new FakeClient();
    const waiting = readinessOf(client, notReady)({ aborted: false });
    expect(client.connects).toBe(1);
    setTimeout(() => client.become('ready'), 20);
    expect(await outcomeOf(waiting)).toBe('ready');
  });

  it.each(['connecting', 'connect'])('waits while the client is %s', async (status) => {
    const client = new FakeClient();
    client.status = status;
    const waiting = readinessOf(client, notReady)(boundedCall());
    expect(await outcomeOf(waiting, 50)).toBe('still waiting');
    client.become('ready');
    expect(await outcomeOf(waiting)).toBe('ready');
    expect(client.connects).toBe(0);
  });

  it.each(['reconnecting', 'close', 'end'])(
    'refuses at once while the client is %s',
    async (status) => {
      const client = new FakeClient();
      client.status = status;
      expect(await outcomeOf(readinessOf(client, notReady)(boundedCall()), 50)).toBe(NOT_READY);
    },
  );

  it('refuses a call already past its deadline without waiting', async () => {
    const client = new FakeClient();
    client.status = 'connecting';
    expect(await outcomeOf(readinessOf(client, notReady)({ aborted: true }))).toBe(NOT_READY);
  });

  it('refuses a waiting call as soon as its deadline passes, with no status change', async () => {
    const client = new FakeClient();
    client.status = 'connecting';
    const call = boundedCall();
    const waiting = readinessOf(client, notReady)(call);
    setTimeout(() => call.abort(), 20);
    expect(await outcomeOf(waiting)).toBe(NOT_READY);
  });

  it('refuses a call whose deadline passed while the client became ready', async () => {
    // The caller has answered already: sending now would act after the answer.
    const client = new FakeClient();
    client.status = 'connecting';
    const call = boundedCall();
    const waiting = readinessOf(client, notReady)(call);
    call.abort();
    client.become('ready');
    expect(await outcomeOf(waiting)).toBe(NOT_READY);
  });

  it('refuses a waiting call when the connection closes, and waits for a call without a signal', async () => {
    const client = new FakeClient();
    client.status = 'connecting';
    const waiting = readinessOf(client, notReady)({ aborted: false });
    expect(await outcomeOf(waiting, 30)).toBe('still waiting');
    client.become('close');
    expect(await outcomeOf(waiting)).toBe(NOT_READY);
    // Every listener it added for that wait is gone.
    for (const event of ['ready', 'close', 'end']) expect(client.listenerCount(event)).toBe(0);
  });

  it('lets calls waiting together share one wait, and all go on at the same ready', async () => {
    const client = new FakeClient();
    client.status = 'connecting';
    const whenReady = readinessOf(client, notReady);
    const waits = [
      whenReady(boundedCall()),
      whenReady(boundedCall()),
      whenReady({ aborted: false }),
    ];
    expect(client.listenerCount('ready')).toBe(1);
    client.become('ready');
    expect(await Promise.all(waits.map((waiting) => outcomeOf(waiting)))).toEqual([
      'ready',
      'ready',
      'ready',
    ]);
    expect(client.listenerCount('ready')).toBe(0);
  });
});

describe("readinessOf's error listener and the cause of its refusals", () => {
  it('listens to connection errors only while a call waits', async () => {
    const client = new FakeClient();
    client.status = 'connecting';
    const waiting = readinessOf(client, notReady)({ aborted: false });
    expect(client.listenerCount('error')).toBe(1);
    client.become('ready');
    expect(await outcomeOf(waiting)).toBe('ready');
    expect(client.listenerCount('error')).toBe(0);
  });

  it('gives the connection error seen while waiting as the cause of its refusal', async () => {
    const client = new FakeClient();
    client.status = 'connecting';
    const waiting = readinessOf(client, notReady)({ aborted: false });
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:6379');
    client.emit('error', refused);
    client.become('close');
    const error = await waiting.then(
      () => undefined,
      (reason: unknown) => reason as Error,
    );
    expect(error?.message).toBe(NOT_READY);
    expect(error?.cause).toBe(refused);
  });

  it("keeps notReady's own cause, and gives none when no error was seen", async () => {
    const own = new Error('its own cause');
    const client = new FakeClient();
    client.status = 'connecting';
    const withOwn = readinessOf(client, () => new Error(NOT_READY, { cause: own }));
    const waiting = withOwn({ aborted: false });
    client.emit('error', new Error('connect ECONNREFUSED'));
    client.become('close');
    const error = await waiting.then(
      () => undefined,
      (reason: unknown) => reason as Error,
    );
    expect(error?.cause).toBe(own);

    const quiet = new FakeClient();
    quiet.status = 'close';
    const plain = await readinessOf(
      quiet,
      notReady,
    )({ aborted: false }).then(
      () => undefined,
      (reason: unknown) => reason as Error,
    );
    expect(plain?.message).toBe(NOT_READY);
    expect(plain !== undefined && 'cause' in plain).toBe(false);
  });

  it('forgets an error once the client was ready: a later refusal does not blame it', async () => {
    const client = new FakeClient();
    client.status = 'connecting';
    const whenReady = readinessOf(client, notReady);
    const waiting = whenReady({ aborted: false });
    client.emit('error', new Error('connect ECONNREFUSED (a retry then connected)'));
    client.become('ready');
    expect(await outcomeOf(waiting)).toBe('ready');
    client.status = 'reconnecting';
    const later = await whenReady({ aborted: false }).then(
      () => undefined,
      (reason: unknown) => reason as Error,
    );
    expect(later?.message).toBe(NOT_READY);
    expect(later !== undefined && 'cause' in later).toBe(false);
  });
});
