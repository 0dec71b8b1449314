/**
 * The answers a receiver keeps for the watchdog under load: a process that answers more than
 * `maxPending` (10 000) deliveries between two timer ticks still takes every one to its store (it
 * writes as soon as `writeAtNotes` wait), and the answers it must drop while its store cannot take
 * them are counted and told to `onError`, never lost in silence.
 */

import { describe, expect, it } from 'vitest';
import { createReceiver, type IdempotencyStore, type SchoolhooksError } from '../../src/index.js';
import { memoryStore } from '../../src/stores/memory.js';
import { createDelivery } from '../../src/testing/index.js';
import { createWatchdog } from '../../src/watchdog/index.js';
import type { WatchBatch } from '../../src/watchdog/types.js';

const SECRET = 'whsec_answer_notes_test_0123456789abcdef';
const FAILING_KEY = '0b9f7d1e-6c3a-4f58-9e21-7a4d5c8b3f60';

/** `count` deliveries of UserSignedUp, signed, each with its own key. */
function deliveries(count: number) {
  return Array.from({ length: count }, () =>
    createDelivery('UserSignedUp', undefined, { secret: SECRET }),
  );
}

describe('answers kept for the watchdog under load', () => {
  it('keeps a failing delivery at risk after 12 000 answers handled in one run of microtasks', async () => {
    // memoryStore answers at once, so a loop of handle() calls never lets a timer fire: before,
    // only the last 10 000 answers were still held when the first write came, and the failure
    // (the oldest) was gone.
    const receiver = createReceiver({ secret: SECRET, store: memoryStore() });
    receiver.on('UserSignedUp', (event) => {
      if (event.idempotencyKey === FAILING_KEY) throw new Error('the CRM is down');
    });
    receiver.onError(() => {});
    const failing = createDelivery('UserSignedUp', undefined, {
      secret: SECRET,
      idempotencyKey: FAILING_KEY,
    });
    expect((await receiver.handle(failing)).status).toBe(500);
    for (const delivery of deliveries(12_000)) {
      expect((await receiver.handle(delivery)).status).toBe(200);
    }

    const health = await createWatchdog({ receiver }).check();

    expect(health.status).toBe('at_risk');
    expect(health.atRisk.map((delivery) => delivery.idempotencyKey)).toEqual([FAILING_KEY]);
  });

  it('counts what it drops while the store cannot take its answers, and tells onError', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // A store whose first write hangs until the test opens the gate (a stalled server).
    const watched = receiverWhoseWatch(() => gate);
    for (const delivery of deliveries(SENT)) await watched.receiver.handle(delivery);
    expect(watched.errors).toEqual([]);

    open();
    await createWatchdog({ receiver: watched.receiver }).check();

    // Every answer is either in the store or counted among the dropped, and only past 10 000.
    expect(watched.errors).toHaveLength(1);
    expect(watched.errors[0]!.code).toBe('store_unavailable');
    const dropped = droppedIn(watched.errors[0]!);
    expect(dropped).toBeGreaterThan(0);
    expect(watched.written() + dropped).toBe(SENT);
    expect(watched.written()).toBeGreaterThanOrEqual(10_000);
  });

  it('writes once, not once an answer, while the store refuses, and counts what it drops', async () => {
    let down = true;
    const watched = receiverWhoseWatch(async () => {
      if (down) throw new Error('connect ECONNREFUSED 127.0.0.1:6379');
    });
    for (const delivery of deliveries(SENT)) await watched.receiver.handle(delivery);

    // One early write (at 1 000 answers) failed; the answers after it waited for the timer.
    expect(watched.errors.map((e) => e.message)).toEqual([expect.stringContaining('ECONNREFUSED')]);
    down = false;
    await createWatchdog({ receiver: watched.receiver }).check();

    expect(watched.errors).toHaveLength(2);
    expect(watched.written()).toBe(10_000);
    expect(droppedIn(watched.errors[1]!)).toBe(SENT - watched.written());
  });
});

/** Answers the tests past the bound send: 1 500 more than a process holds. */
const SENT = 11_500;

/**
 * A receiver on a memoryStore whose `watch` first awaits `before` (a stalled or refusing server),
 * with the errors it reported and how many notes reached the store.
 */
function receiverWhoseWatch(before: () => Promise<void>) {
  const inner = memoryStore();
  let written = 0;
  const store: IdempotencyStore = {
    ...inner,
    async watch(batch: WatchBatch) {
      await before();
      written += batch.notes.length;
      return inner.watch!(batch);
    },
  };
  const errors: SchoolhooksError[] = [];
  const receiver = createReceiver({ secret: SECRET, store }).onError((e) => errors.push(e));
  receiver.on('UserSignedUp', () => {});
  return { receiver, errors, written: () => written };
}

/** How many answers `error` says were dropped. */
function droppedIn(error: SchoolhooksError): number {
  return Number(/(\d+) answers were not kept for the watchdog/.exec(error.message)?.[1]);
}
