/** DeadlineQueue: one timer expires, in order, the calls that outlived their shared budget. */

import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { Deadline, DeadlineQueue } from '../src/deadlines.js';

/** A call that records when it was told it expired. */
class Call extends Deadline {
  constructor(
    private readonly log: string[],
    readonly name: string,
  ) {
    super();
  }
  expire(): void {
    this.log.push(this.name);
  }
}

describe('DeadlineQueue', () => {
  it('tells every call still queued once its budget ran out, in order, and no removed one', async () => {
    const queue = new DeadlineQueue(40);
    const log: string[] = [];
    const started = performance.now();
    const first = new Call(log, 'first');
    const done = new Call(log, 'done');
    queue.add(first);
    queue.add(done);
    await sleep(15);
    const third = new Call(log, 'third');
    queue.add(third);
    queue.remove(done);
    expect(queue.size).toBe(2);

    await sleep(30);
    // first's 40 ms are over, third's are not.
    expect(log).toEqual(['first']);
    expect(performance.now() - started).toBeGreaterThanOrEqual(40);
    await sleep(30);
    expect(log).toEqual(['first', 'third']);
    expect(queue.size).toBe(0);
  });

  it('holds only calls in flight, and starts again once empty', async () => {
    const queue = new DeadlineQueue(20);
    const log: string[] = [];
    const calls = Array.from({ length: 3000 }, (_, i) => new Call(log, `c${i}`));
    for (const call of calls) queue.add(call);
    expect(queue.size).toBe(3000);
    // Removed out of order, twice for some: each leaves at once, and only once.
    for (const call of [...calls].reverse()) queue.remove(call);
    queue.remove(calls[0]!);
    expect(queue.size).toBe(0);
    await sleep(40);
    expect(log).toEqual([]);

    queue.add(new Call(log, 'later'));
    await sleep(40);
    expect(log).toEqual(['later']);
  });

  it('re-arms for a call added by an expiring one', async () => {
    const queue = new DeadlineQueue(20);
    const log: string[] = [];
    class Chained extends Call {
      override expire(): void {
        super.expire();
        queue.add(new Call(log, 'chained'));
      }
    }
    queue.add(new Chained(log, 'first'));
    await sleep(70);
    expect(log).toEqual(['first', 'chained']);
  });
});
