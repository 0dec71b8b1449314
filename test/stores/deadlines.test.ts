/** DeadlineQueue: one timer expires, in order, the calls that outlived their shared budget. */

import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { DeadlineQueue } from '../../src/stores/deadlines.js';

/** A call that records when it was told it expired. */
function call(log: string[], name: string) {
  return {
    settled: false,
    expire() {
      log.push(name);
    },
  };
}

describe('DeadlineQueue', () => {
  it('tells every unsettled call once its budget ran out, in order, and no settled one', async () => {
    const queue = new DeadlineQueue(40);
    const log: string[] = [];
    const started = performance.now();
    const first = call(log, 'first');
    const done = call(log, 'done');
    queue.add(first);
    queue.add(done);
    await sleep(15);
    const third = call(log, 'third');
    queue.add(third);
    done.settled = true;

    await sleep(30);
    // first's 40 ms are over, third's are not.
    expect(log).toEqual(['first']);
    expect(performance.now() - started).toBeGreaterThanOrEqual(40);
    await sleep(30);
    expect(log).toEqual(['first', 'third']);
    expect(queue.size).toBe(0);
  });

  it('drops settled calls without telling them, and starts again once empty', async () => {
    const queue = new DeadlineQueue(20);
    const log: string[] = [];
    const calls = Array.from({ length: 3000 }, (_, i) => call(log, `c${i}`));
    for (const c of calls) queue.add(c);
    for (const c of calls) c.settled = true;
    await sleep(40);
    expect(log).toEqual([]);
    expect(queue.size).toBe(0);

    queue.add(call(log, 'later'));
    await sleep(40);
    expect(log).toEqual(['later']);
  });
});
