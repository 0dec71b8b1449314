/**
 * memoryInbox's `reconcile`: a timer in this process, with a fake `{ run }` and intervals of a
 * few hundred ms.
 */

import { afterEach } from 'vitest';
import { memoryInbox, type MemoryInbox } from '../../src/index.js';
import { describeReconcileContract } from './reconcile-contract.js';

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

describeReconcileContract('memoryInbox', { inboxes, processes: false, logs: false });
