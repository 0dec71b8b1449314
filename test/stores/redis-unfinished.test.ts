/**
 * What redisStore keeps when Redis did not confirm a completion or a release
 * (src/stores/redis-unfinished.ts), and how its scripts are sent (src/stores/redis-script-sender.ts),
 * with a client whose status the test sets. On real Redis, test/stores/redis-completion.test.ts
 * checks that every unfinished completion is sent again; here each rule is seen on its own:
 * nothing is kept before a lease is known, nothing is sent while the client is not ready,
 * nothing after the lease it would end has ended, and a script reloaded after NOSCRIPT is not sent
 * to a client that went down meanwhile.
 */

import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BoundedCalls } from '../../src/bounded-calls.js';
import { ScriptSender } from '../../src/stores/redis-script-sender.js';
import { COMPLETE } from '../../src/stores/redis-scripts.js';
import { UnfinishedCalls } from '../../src/stores/redis-unfinished.js';

/** A client that records the scripts sent to it and answers OK, or NOSCRIPT when told to. */
class FakeClient extends EventEmitter {
  status = 'ready';
  sent: string[] = [];
  noScript = false;
  /** What the client's status becomes as it answers NOSCRIPT. */
  downOnNoScript: string | undefined;
  evalsha(sha: string, ...args: unknown[]): Promise<unknown> {
    this.sent.push(`evalsha ${String(args[1])}`);
    if (this.noScript) {
      if (this.downOnNoScript !== undefined) this.status = this.downOnNoScript;
      return Promise.reject(new Error('NOSCRIPT No matching script'));
    }
    return Promise.resolve(1);
  }
  eval(lua: string, ...args: unknown[]): Promise<unknown> {
    this.sent.push(`eval ${String(args[1])}`);
    return Promise.resolve(1);
  }
  connect(): Promise<void> {
    return Promise.resolve();
  }
}

function setUp() {
  const client = new FakeClient();
  const redis = client as unknown as Redis;
  const calls = new BoundedCalls(1_000, {
    timedOut: (name) => new Error(`${name} timed out`),
    failed: (name, error) => new Error(`${name} failed: ${String(error)}`),
  });
  const sender = new ScriptSender(redis);
  const unfinished = new UnfinishedCalls(redis, calls, sender, 100);
  return { client, calls, sender, unfinished };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('UnfinishedCalls', () => {
  it('keeps nothing before any lease was noted (no claim, so no completion matters)', () => {
    const { unfinished } = setUp();
    unfinished.keep('k', COMPLETE, ['token', 'fp', 1000]);
    expect(unfinished.get('k')).toBeUndefined();
  });

  it('sends a kept call again at the next ready, never while the client is not ready', async () => {
    vi.useFakeTimers();
    const { client, unfinished } = setUp();
    unfinished.leased(60_000);
    client.status = 'reconnecting';
    unfinished.keep('k', COMPLETE, ['token', 'fp', 1000]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(client.sent).toEqual([]);
    client.status = 'ready';
    client.emit('ready');
    await vi.advanceTimersByTimeAsync(0);
    expect(client.sent).toEqual(['evalsha k']);
    expect(unfinished.get('k')).toBeUndefined();
    expect(client.listenerCount('ready')).toBe(0);
  });

  it('sends a kept call again soon when the client stayed ready (Redis was slow, not gone)', async () => {
    vi.useFakeTimers();
    const { client, unfinished } = setUp();
    unfinished.leased(60_000);
    unfinished.keep('k', COMPLETE, ['token', 'fp', 1000]);
    await vi.advanceTimersByTimeAsync(150);
    expect(client.sent).toEqual(['evalsha k']);
  });

  it('drops a kept call whose lease has ended, without sending it', async () => {
    vi.useFakeTimers();
    const { client, unfinished } = setUp();
    unfinished.leased(5_000);
    client.status = 'reconnecting';
    unfinished.keep('k', COMPLETE, ['token', 'fp', 1000]);
    await vi.advanceTimersByTimeAsync(5_001);
    client.status = 'ready';
    client.emit('ready');
    await vi.advanceTimersByTimeAsync(0);
    expect(client.sent).toEqual([]);
    expect(unfinished.get('k')).toBeUndefined();
    expect(client.listenerCount('ready')).toBe(0);
  });
});

describe('ScriptSender', () => {
  it('loads a script Redis forgot (NOSCRIPT) with EVAL', async () => {
    const { client, calls, sender } = setUp();
    client.noScript = true;
    await calls.run('claim', (call) => sender.evalScript(COMPLETE, 'k', ['a'], call));
    expect(client.sent).toEqual(['evalsha k', 'eval k']);
  });

  it('sends no EVAL to a client that went down as it answered NOSCRIPT', async () => {
    const { client, calls, sender } = setUp();
    client.noScript = true;
    client.downOnNoScript = 'reconnecting';
    const failure = await calls
      .run('claim', (call) => sender.evalScript(COMPLETE, 'k', ['a'], call))
      .then(
        () => undefined,
        (error: unknown) => error as Error,
      );
    expect(failure?.message).toMatch(/not ready \(status: reconnecting\)/);
    expect(client.sent).toEqual(['evalsha k']);
  });
});
