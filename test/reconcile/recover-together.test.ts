/**
 * A run recovers a page's missing entities a few at once (src/reconcile/recover-together.ts): at
 * most 4 handlers run together, and 4 do when that many are missing; the report counts each
 * entity in the list's order whatever order they end in; and an abort starts nothing more and is
 * thrown only once the recoveries under way have ended, none left claiming behind the run.
 */

import { afterEach, describe, expect, it } from 'vitest';
import type { SchoolApi } from '../../src/api/index.js';
import { recordKeyOf } from '../../src/keys/delivery-key.js';
import { createReconciler } from '../../src/reconcile/index.js';
import { memoryStore } from '../../src/stores/memory.js';
import type { IdempotencyStore } from '../../src/stores/types.js';
import type { MockSchoolApi } from '../../src/testing/mock-school-api.js';
import { failureOf } from '../helpers/failure-of.js';
import { invoice, now, startApi } from './helpers.js';

let mock: MockSchoolApi | undefined;

afterEach(async () => {
  await mock?.close();
  mock = undefined;
});

async function apiOf(count: number): Promise<SchoolApi> {
  const started = await startApi({
    invoices: Array.from({ length: count }, (_, index) => invoice(index + 1)),
  });
  mock = started.mock;
  return started.api;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('recoveries a few at once', () => {
  it('runs at most 4 handlers at once, and 4 while that many entities are left', async () => {
    const api = await apiOf(10);
    let running = 0;
    let mostAtOnce = 0;
    const report = await createReconciler({ api, store: memoryStore(), now })
      .on('invoice', async () => {
        running++;
        mostAtOnce = Math.max(mostAtOnce, running);
        await sleep(20);
        running--;
      })
      .run({ since: '1d' });
    expect(report.recovered).toBe(10);
    expect(report.complete).toBe(true);
    expect(mostAtOnce).toBe(4);
  });

  it('reports failures in the order of the list, not the order their handlers ended in', async () => {
    const api = await apiOf(6);
    const started: string[] = [];
    const report = await createReconciler({ api, store: memoryStore(), now })
      .on('invoice', async (item) => {
        const position = started.push(String(item.invoiceId));
        // The first listed fails last, the third at once.
        if (position === 1) {
          await sleep(40);
          throw new Error('grant refused');
        }
        if (position === 3) throw new Error('grant refused');
      })
      .run({ since: '1d' });
    expect(started).toHaveLength(6);
    expect(report.failed.map(({ id }) => id)).toEqual([started[0], started[2]]);
    expect(report.recovered).toBe(4);
  });

  it('starts nothing after an abort, and throws it once no claim is left under way', async () => {
    const api = await apiOf(12);
    const memory = memoryStore();
    let claims = 0;
    let claiming = 0;
    // The first claim answers at once, the others late: the abort (in the first handler) comes
    // while they wait for their answer.
    const store: IdempotencyStore = {
      ...memory,
      claim: async (request) => {
        claiming++;
        try {
          await sleep(claims++ === 0 ? 1 : 60);
          return await memory.claim(request);
        } finally {
          claiming--;
        }
      },
    };
    const controller = new AbortController();
    const handled: string[] = [];
    const run = createReconciler({ api, store, now })
      .on('invoice', (item) => {
        handled.push(String(item.invoiceId));
        if (handled.length === 1) controller.abort(new Error('shutting down'));
      })
      .run({ since: '1d', signal: controller.signal });
    expect(await failureOf(run)).toBe(controller.signal.reason);
    // Nothing claims behind the run once it has thrown.
    expect(claiming).toBe(0);
    await sleep(60);
    expect(claiming).toBe(0);
    // Only the first handler ran: the others found the run aborted once their claim answered.
    expect(handled).toHaveLength(1);
    const states = await memory.peek(
      Array.from({ length: 12 }, (_, index) => recordKeyOf(`invoice:${index + 1}`, undefined)),
    );
    expect(states.filter((state) => state.state === 'free')).toHaveLength(11);
  });
});
