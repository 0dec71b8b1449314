/**
 * memoryInbox's `watch`: a timer in this process, over a real receiver and its watchdog, with
 * intervals of a few hundred ms.
 */

import { afterEach } from 'vitest';
import { memoryInbox, type MemoryInbox } from '../../src/index.js';
import { describeWatchContract } from './watch-contract.js';

const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

function inboxes(count: number): MemoryInbox[] {
  return Array.from({ length: count }, () => {
    const inbox = memoryInbox();
    cleanups.push(() => inbox.close());
    return inbox;
  });
}

describeWatchContract('memoryInbox', { inboxes, processes: false, logs: false });
