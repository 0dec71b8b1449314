/**
 * What redisStore keeps when Redis did not confirm a settle (a completion or a release of all a
 * claim took: its key, its records, its entity) (src/stores/redis-unfinished.ts), and how its
 * scripts and commands are sent (src/stores/redis-script-sender.ts), with a client whose status
 * the test sets. On real Redis, test/stores/redis-completion.test.ts checks that every unfinished
 * settle is sent again; here each rule is seen on its own: nothing is kept before a lease is
 * known, a kept settle is sent again whole (every key and argument as kept), nothing is sent
 * while the client is not ready, nothing after the lease it would end has ended, the newer of
 * two settles kept for one key is the one kept, and a script reloaded after NOSCRIPT is not sent
 * to a client that went down meanwhile.
 */

import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BoundedCalls } from '../../src/utils/bounded-calls.js';
import { ScriptSender } from '../../src/stores/redis-script-sender.js';
import { SETTLE } from '../../src/stores/redis-scripts.js';
import { UnfinishedCalls } from '../../src/stores/redis-unfinished.js';

/**
 * A client that records what is sent to it (`<command> <keys joined by ,> <args joined by ,>`)
 * and answers OK, or NOSCRIPT when told to.
 */
class FakeClient extends EventEmitter {
  status = 'ready';
  sent: string[] = [];
  noScript = false;
  /** What the client's status becomes as it answers NOSCRIPT. */
  downOnNoScript: string | undefined;
  evalsha(sha: string, ...args: unknown[]): Promise<unknown> {
    this.sent.push(`evalsha ${FakeClient.#read(args)}`);
    if (this.noScript) {
      if (this.downOnNoScript !== undefined) this.status = this.downOnNoScript;
      return Promise.reject(new Error('NOSCRIPT No matching script'));
    }
    return Promise.resolve(1);
  }
  eval(lua: string, ...args: unknown[]): Promise<unknown> {
    this.sent.push(`eval ${FakeClient.#read(args)}`);
    return Promise.resolve(1);
  }
  mget(...keys: string[]): Promise<unknown> {
    this.sent.push(`mget ${keys.join(',')}`);
    return Promise.resolve(keys.map(() => null));
  }
  connect(): Promise<void> {
    return Promise.resolve();
  }
  /** A script's `numkeys, ...keys, ...args`, as `<keys> <args>`. */
  static #read([numkeys, ...rest]: unknown[]): string {
    const n = Number(numkeys);
    return `${rest.slice(0, n).join(',')} ${rest.slice(n).join(',')}`;
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

/** A completion's arguments, as the store sends SETTLE for a key alone. */
const COMPLETION = [1, 0, 0, 'L:token', 'complete', 'D:fp', 1000, 'D:fp', 1000];

afterEach(() => {
  vi.useRealTimers();
});

describe('UnfinishedCalls', () => {
  it('keeps nothing before any lease was noted (no claim, so no settle matters)', () => {
    const { unfinished } = setUp();
    unfinished.keep(SETTLE, ['k'], COMPLETION, true);
    expect(unfinished.get('k')).toBeUndefined();
  });

  it('sends a kept call again at the next ready, never while the client is not ready', async () => {
    vi.useFakeTimers();
    const { client, unfinished } = setUp();
    unfinished.leased(60_000);
    client.status = 'reconnecting';
    unfinished.keep(SETTLE, ['k'], COMPLETION, true);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(client.sent).toEqual([]);
    client.status = 'ready';
    client.emit('ready');
    await vi.advanceTimersByTimeAsync(0);
    expect(client.sent).toEqual([`evalsha k ${COMPLETION.join(',')}`]);
    expect(unfinished.get('k')).toBeUndefined();
    expect(client.listenerCount('ready')).toBe(0);
  });

  it('sends a kept settle again whole: every key it acts on, and its arguments as kept', async () => {
    vi.useFakeTimers();
    const { client, unfinished } = setUp();
    unfinished.leased(60_000);
    client.status = 'reconnecting';
    // A claim's key, one record and its entity's version and lease: one script on one Redis.
    const keys = ['p:{k}', 'p:{r}', 'p:{e}:entity', 'p:{e}:entity-lease'];
    const args = [1, 1, 1, 'L:token', 'complete', 'D:fp', 60_000, 'D:webhook', 90_000];
    unfinished.keep(SETTLE, keys, args, true);
    // Named by its first key, and known to complete (a resend's failed claim must not drop it).
    expect(unfinished.get('p:{k}')).toMatchObject({ script: SETTLE, keys, args, completes: true });
    expect(unfinished.get('p:{r}')).toBeUndefined();
    client.status = 'ready';
    client.emit('ready');
    await vi.advanceTimersByTimeAsync(0);
    expect(client.sent).toEqual([`evalsha ${keys.join(',')} ${args.join(',')}`]);
  });

  it('sends a kept call again soon when the client stayed ready (Redis was slow, not gone)', async () => {
    vi.useFakeTimers();
    const { client, unfinished } = setUp();
    unfinished.leased(60_000);
    unfinished.keep(SETTLE, ['k'], COMPLETION, true);
    await vi.advanceTimersByTimeAsync(150);
    expect(client.sent).toEqual([`evalsha k ${COMPLETION.join(',')}`]);
  });

  it('drops a kept call whose lease has ended, without sending it', async () => {
    vi.useFakeTimers();
    const { client, unfinished } = setUp();
    unfinished.leased(5_000);
    client.status = 'reconnecting';
    unfinished.keep(SETTLE, ['k'], COMPLETION, true);
    await vi.advanceTimersByTimeAsync(5_001);
    client.status = 'ready';
    client.emit('ready');
    await vi.advanceTimersByTimeAsync(0);
    expect(client.sent).toEqual([]);
    expect(unfinished.get('k')).toBeUndefined();
    expect(client.listenerCount('ready')).toBe(0);
  });

  it('keeps the newer of two calls for one key: forgetting the older one leaves it', () => {
    const { client, unfinished } = setUp();
    unfinished.leased(60_000);
    client.status = 'reconnecting';
    const release = [1, 0, 0, 'L:first', 'release', '', 1, '', 1];
    unfinished.keep(SETTLE, ['k'], release, false);
    const older = unfinished.get('k')!;
    unfinished.keep(SETTLE, ['k'], COMPLETION, true);
    const newer = unfinished.get('k')!;
    expect(newer).toMatchObject({ args: COMPLETION, completes: true });
    // The older one's retry ends (as it would once sent): the newer one is still kept.
    unfinished.forget('k', older);
    expect(unfinished.get('k')).toBe(newer);
    unfinished.forget('k', newer);
    expect(unfinished.get('k')).toBeUndefined();
  });
  it('adds one ready listener to the client however often its one key is kept again, and takes it off once nothing is kept', () => {
    // A claim of one key that keeps timing out while Redis is slow keeps its release again
    // each time: the caller's client must not collect a listener each time.
    const { client, unfinished } = setUp();
    unfinished.leased(60_000);
    client.status = 'reconnecting';
    for (let i = 0; i < 3; i++) unfinished.keep(SETTLE, ['k'], COMPLETION, true);
    expect(client.listenerCount('ready')).toBe(1);
    unfinished.keep(SETTLE, ['other'], COMPLETION, true);
    expect(client.listenerCount('ready')).toBe(1);
    unfinished.forget('other', unfinished.get('other')!);
    expect(client.listenerCount('ready')).toBe(1);
    unfinished.forget('k', unfinished.get('k')!);
    expect(client.listenerCount('ready')).toBe(0);
  });
});

describe('ScriptSender', () => {
  it('loads a script Redis forgot (NOSCRIPT) with EVAL', async () => {
    const { client, calls, sender } = setUp();
    client.noScript = true;
    await calls.run('claim', (call) => sender.evalScript(SETTLE, 'k', ['a'], call));
    expect(client.sent).toEqual(['evalsha k a', 'eval k a']);
  });

  it('sends the keys of one slot with their count, then the arguments', async () => {
    const { client, calls, sender } = setUp();
    await calls.run('claim', (call) => sender.evalScript(SETTLE, ['a', 'b', 'c'], [1, 'x'], call));
    expect(client.sent).toEqual(['evalsha a,b,c 1,x']);
  });

  it('sends no EVAL to a client that went down as it answered NOSCRIPT', async () => {
    const { client, calls, sender } = setUp();
    client.noScript = true;
    client.downOnNoScript = 'reconnecting';
    const failure = await calls
      .run('claim', (call) => sender.evalScript(SETTLE, 'k', ['a'], call))
      .then(
        () => undefined,
        (error: unknown) => error as Error,
      );
    expect(failure?.message).toMatch(/not ready \(status: reconnecting\)/);
    expect(client.sent).toEqual(['evalsha k a']);
  });

  it('sends a command (a peek) only while the client is ready, never to one reconnecting', async () => {
    const { client, calls, sender } = setUp();
    const peek = () =>
      calls
        .run('peek', (call) => sender.send((redis) => redis.mget('a', 'b'), call))
        .then(
          () => 'sent',
          (error: unknown) => (error as Error).message,
        );
    expect(await peek()).toBe('sent');
    client.status = 'reconnecting';
    expect(await peek()).toMatch(/not ready \(status: reconnecting\)/);
    expect(client.sent).toEqual(['mget a,b']);
  });
});
