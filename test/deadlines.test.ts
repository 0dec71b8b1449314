/** DeadlineQueue: one timer expires, in order, the calls that outlived their shared budget. */

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Deadline, DeadlineQueue } from '../src/utils/deadlines.js';

/** A call that records when it was told it expired. */
class Call extends Deadline {
  constructor(
    protected readonly log: string[],
    readonly name: string,
  ) {
    super();
  }
  expire(): void {
    this.log.push(`${this.name}@${performance.now()}`);
  }
}

/** A call whose expiry adds another call, `chained`, to its queue. */
class Chained extends Call {
  constructor(
    log: string[],
    name: string,
    private readonly queue: DeadlineQueue,
  ) {
    super(log, name);
  }
  override expire(): void {
    super.expire();
    this.queue.add(new Call(this.log, 'chained'));
  }
}

describe('DeadlineQueue', () => {
  // The queue's clock (performance.now) and its timer, both under the test's control.
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] }));
  afterEach(() => vi.useRealTimers());

  it('tells every call still queued when its budget ran out, in order, and no removed one', () => {
    const queue = new DeadlineQueue(40);
    const log: string[] = [];
    const start = performance.now();
    const first = new Call(log, 'first');
    const done = new Call(log, 'done');
    queue.add(first);
    queue.add(done);
    vi.advanceTimersByTime(15);
    queue.add(new Call(log, 'third'));
    queue.remove(done);
    expect(queue.size).toBe(2);

    vi.advanceTimersByTime(24);
    expect(log).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(log).toEqual([`first@${start + 40}`]);
    vi.advanceTimersByTime(14);
    expect(log).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(log).toEqual([`first@${start + 40}`, `third@${start + 55}`]);
    expect(queue.size).toBe(0);
  });

  it('holds only calls in flight, arms one timer, and starts again once empty', () => {
    const queue = new DeadlineQueue(20);
    const log: string[] = [];
    const calls = Array.from({ length: 3000 }, (_, i) => new Call(log, `c${i}`));
    for (const call of calls) queue.add(call);
    expect(queue.size).toBe(3000);
    expect(vi.getTimerCount()).toBe(1);
    // Removed out of order, the first one twice: each leaves at once, and only once.
    for (const call of [...calls].reverse()) queue.remove(call);
    queue.remove(calls[0]!);
    expect(queue.size).toBe(0);
    vi.advanceTimersByTime(40);
    expect(log).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);

    queue.add(new Call(log, 'later'));
    vi.advanceTimersByTime(20);
    expect(log).toHaveLength(1);
  });

  it('leaves the queue as it is when asked to remove a call it never held', () => {
    const queue = new DeadlineQueue(20);
    const log: string[] = [];
    queue.add(new Call(log, 'queued'));
    // Never added: taking it out must not unlink the calls that are there.
    queue.remove(new Call(log, 'stranger'));
    expect(queue.size).toBe(1);
    vi.advanceTimersByTime(20);
    expect(log.map((entry) => entry.split('@')[0])).toEqual(['queued']);
  });

  it('arms its timer once for a deadline ahead, not once per millisecond until then', () => {
    const queue = new DeadlineQueue(50);
    const log: string[] = [];
    const armed = vi.spyOn(globalThis, 'setTimeout');
    queue.add(new Call(log, 'waiting'));
    vi.advanceTimersByTime(49);
    expect(log).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(log).toHaveLength(1);
    expect(armed).toHaveBeenCalledTimes(1);
    armed.mockRestore();
  });

  it('keeps one timer when an expiring call adds another (the add armed it already)', () => {
    const queue = new DeadlineQueue(20);
    const log: string[] = [];
    queue.add(new Chained(log, 'first', queue));
    vi.advanceTimersByTime(20);
    expect(vi.getTimerCount()).toBe(1);
  });

  it('re-arms for a call added by an expiring one, and for the calls behind one that threw', () => {
    const queue = new DeadlineQueue(20);
    const log: string[] = [];
    class Throwing extends Call {
      override expire(): void {
        super.expire();
        throw new Error('expire failed');
      }
    }
    queue.add(new Chained(log, 'first', queue));
    vi.advanceTimersByTime(20);
    vi.advanceTimersByTime(20);
    expect(log.map((entry) => entry.split('@')[0])).toEqual(['first', 'chained']);

    queue.add(new Throwing(log, 'throws'));
    vi.advanceTimersByTime(5);
    queue.add(new Call(log, 'behind'));
    expect(() => vi.advanceTimersByTime(15)).toThrow('expire failed');
    vi.advanceTimersByTime(5);
    expect(log.map((entry) => entry.split('@')[0])).toEqual([
      'first',
      'chained',
      'throws',
      'behind',
    ]);
  });
});
