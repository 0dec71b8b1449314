import { describe, expect, it, vi } from 'vitest';
import {
  createReceiver,
  InboxUnavailableError,
  memoryInbox,
  memoryStore,
  type Inbox,
  type ReceiverOptions,
  type SchoolhooksError,
  type StoredDelivery,
} from '../../src/index.js';
import { SECRET, signedRequest } from '../helpers/signed.js';
import { describeInboxContract } from './contract.js';

describeInboxContract({
  factory: 'memoryInbox',
  newInbox: (options) => memoryInbox({ backoffMs: 5, ...options }),
  newStore: () => memoryStore(),
  jobId: (key) => key,
  inspectable: false,
  cleanup: async () => {},
});

/** The delivery an inbox would have stored for a signed request. */
function storedOf(request: ReturnType<typeof signedRequest>): StoredDelivery {
  const { event, idempotencyKey } = JSON.parse(request.body) as Record<string, string>;
  return {
    body: request.body,
    signature: request.headers['signature']!,
    event: event!,
    idempotencyKey: idempotencyKey!,
    receivedAt: new Date().toISOString(),
  };
}

function setup(options: Partial<ReceiverOptions> = {}, inbox = memoryInbox({ backoffMs: 5 })) {
  const errors: SchoolhooksError[] = [];
  const receiver = createReceiver({ secret: SECRET, inbox, ...options });
  receiver.onError((error) => {
    errors.push(error);
  });
  return { receiver, inbox, errors };
}

describe('createReceiver({ inbox }): the HTTP side', () => {
  it('answers 503 inbox_unavailable when the inbox fails, and releases the key for the retry', async () => {
    let fail = true;
    const stored: StoredDelivery[] = [];
    const flaky: Inbox = {
      async enqueue(delivery) {
        if (fail) throw new Error('queue down');
        stored.push(delivery);
      },
    };
    const { receiver, errors } = setup({}, flaky as ReturnType<typeof memoryInbox>);
    const request = signedRequest({ idempotencyKey: 'q-3' });
    const result = await receiver.handle(request);
    expect(result).toEqual({
      status: 503,
      outcome: 'inbox_unavailable',
      body: { ok: false, outcome: 'inbox_unavailable', idempotencyKey: 'q-3' },
    });
    expect(errors.some((e) => e instanceof InboxUnavailableError)).toBe(true);
    fail = false;
    expect((await receiver.handle(request)).outcome).toBe('queued');
    expect(stored).toHaveLength(1);
  });

  it('answers 503 inbox_unavailable when enqueue throws synchronously', async () => {
    const broken = {
      enqueue(): Promise<void> {
        throw new Error('no');
      },
    };
    const { receiver } = setup({}, broken as unknown as ReturnType<typeof memoryInbox>);
    expect((await receiver.handle(signedRequest())).outcome).toBe('inbox_unavailable');
  });

  it('stores the raw body and signature exactly, and nothing else secret', async () => {
    const stored: StoredDelivery[] = [];
    const capture: Inbox = {
      async enqueue(delivery) {
        stored.push(delivery);
      },
    };
    const { receiver } = setup({}, capture as ReturnType<typeof memoryInbox>);
    const request = signedRequest({ idempotencyKey: 'q-4' });
    await receiver.handle({ ...request, body: Buffer.from(request.body) });
    expect(stored[0]).toEqual({
      body: request.body,
      signature: request.headers['signature'],
      event: 'UserSignedIn',
      idempotencyKey: 'q-4',
      receivedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(JSON.stringify(stored)).not.toContain(SECRET);
  });
});

describe('inbox.work(receiver): the worker side', () => {
  it('never runs one event twice: a stored repeat is a duplicate run', async () => {
    const store = memoryStore();
    const { receiver, inbox } = setup({ store });
    const effects: string[] = [];
    receiver.on('UserSignedIn', (event) => {
      effects.push(event.idempotencyKey);
    });
    const request = signedRequest({ idempotencyKey: 'w-5' });
    const stored = storedOf(request);
    expect(await receiver.processStored(stored, { attempt: 1 })).toEqual({
      outcome: 'processed',
      ok: true,
      retry: false,
    });
    expect(await receiver.processStored(stored, { attempt: 1 })).toMatchObject({
      outcome: 'duplicate',
      ok: true,
    });
    expect(effects).toEqual(['w-5']);
    await inbox.close();
  });

  it('answers in_flight, to retry later, while another worker runs the same event', async () => {
    const { receiver } = setup();
    let release!: () => void;
    receiver.on('UserSignedIn', () => new Promise<void>((resolve) => (release = resolve)));
    const request = signedRequest({ idempotencyKey: 'w-6' });
    const stored = storedOf(request);
    const first = receiver.processStored(stored, { attempt: 1 });
    await vi.waitFor(() => expect(release).toBeDefined());
    expect(await receiver.processStored(stored, { attempt: 2 })).toEqual({
      outcome: 'in_flight',
      ok: false,
      retry: true,
      reason: 'in_flight: another worker is running this event',
    });
    release();
    expect((await first).outcome).toBe('processed');
  });

  it('dead-letters a job whose signature no longer verifies (a job is not trusted for being stored)', async () => {
    const { receiver } = setup();
    const request = signedRequest({ idempotencyKey: 'w-7' });
    const tampered = { ...storedOf(request), body: request.body.replace('w-7', 'w-8') };
    expect(await receiver.processStored(tampered, { attempt: 1 })).toMatchObject({
      outcome: 'invalid_signature',
      ok: false,
      retry: false,
    });
  });

  it('retries a run that outlives handlerTimeoutMs', async () => {
    const { receiver } = setup({ handlerTimeoutMs: 20 });
    receiver.on('UserSignedIn', () => new Promise((resolve) => setTimeout(resolve, 200)));
    const request = signedRequest({ idempotencyKey: 'w-9' });
    const stored = storedOf(request);
    expect(await receiver.processStored(stored, { attempt: 1 })).toMatchObject({
      outcome: 'timeout',
      ok: false,
      retry: true,
    });
  });
});

describe('memoryInbox: how many run at once, what it keeps, and closing', () => {
  /** A handler that holds every run until released, counting how many run at once. */
  function gate() {
    let running = 0;
    let most = 0;
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    const handler = async () => {
      running++;
      most = Math.max(most, running);
      await opened;
      running--;
    };
    return { handler, open, most: () => most, running: () => running };
  }

  it('resolves idle() at once when it holds nothing, and only once the last job ended', async () => {
    const { receiver, inbox } = setup();
    await inbox.idle();
    const held = gate();
    receiver.on('UserSignedIn', held.handler);
    await receiver.handle(signedRequest({ idempotencyKey: 'i-1' }));
    const worker = inbox.work(receiver);
    let idle = false;
    const waiting = inbox.idle().then(() => (idle = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(idle).toBe(false);
    held.open();
    await waiting;
    expect(await inbox.jobs({ state: 'completed' })).toHaveLength(1);
    await worker.close();
  });

  /** Whether `promise` settles within `ms`: 'settled' or 'pending'. */
  const within = (promise: Promise<unknown>, ms: number) =>
    Promise.race([
      promise.then(() => 'settled' as const),
      new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), ms)),
    ]);

  it('keeps idle() waiting while jobs wait for a worker, even as more arrive', async () => {
    const { receiver, inbox } = setup();
    const ran: string[] = [];
    receiver.on('UserSignedIn', (event) => void ran.push(event.idempotencyKey));
    await receiver.handle(signedRequest({ idempotencyKey: 'w-1' }));
    const idle = inbox.idle();
    // Another delivery stored while nothing runs: the inbox still has two jobs to do.
    await receiver.handle(signedRequest({ idempotencyKey: 'w-2' }));
    expect(await within(idle, 30)).toBe('pending');
    const worker = inbox.work(receiver);
    expect(await within(idle, 2_000)).toBe('settled');
    expect(ran.sort()).toEqual(['w-1', 'w-2']);
    await worker.close();
  });

  it('counts a dead letter as done for idle(), and a replayed one as to do again', async () => {
    const inbox = memoryInbox({ attempts: 1, backoffMs: 5 });
    const { receiver } = setup({}, inbox);
    let failing = true;
    const ran: boolean[] = [];
    receiver.on('UserSignedIn', () => {
      ran.push(failing);
      if (failing) throw new Error('crm down');
    });
    await receiver.handle(signedRequest({ idempotencyKey: 'd-1' }));
    const worker = inbox.work(receiver);
    // Its one run failed: a dead letter, which "dead letters stay" leaves out of idle().
    expect(await within(inbox.idle(), 2_000)).toBe('settled');
    expect(await inbox.jobs({ state: 'failed' })).toMatchObject([{ id: 'd-1' }]);
    await worker.close();
    failing = false;
    expect(await inbox.retryFailed()).toBe(1);
    // Replayed, with no worker running: the inbox has a job to do again.
    expect(await within(inbox.idle(), 30)).toBe('pending');
    const again = inbox.work(receiver);
    expect(await within(inbox.idle(), 2_000)).toBe('settled');
    expect(await inbox.jobs({ state: 'completed' })).toMatchObject([{ id: 'd-1' }]);
    expect(ran).toEqual([true, false]);
    await again.close();
  });

  it('close() lets the running job end and starts no waiting one', async () => {
    const { receiver, inbox } = setup();
    const held = gate();
    const ran: string[] = [];
    receiver.on('UserSignedIn', async (event) => {
      ran.push(event.idempotencyKey);
      await held.handler();
    });
    await receiver.handle(signedRequest({ idempotencyKey: 'c-1' }));
    await receiver.handle(signedRequest({ idempotencyKey: 'c-2' }));
    inbox.work(receiver, { concurrency: 1 });
    await vi.waitFor(() => expect(held.running()).toBe(1));
    const closing = inbox.close();
    held.open();
    await closing;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(ran).toEqual(['c-1']);
    expect(await inbox.jobs({ state: 'waiting' })).toMatchObject([{ id: 'c-2' }]);
  });

  it('forgets a completed job keepCompletedMs after it completed, not a moment earlier', async () => {
    const inbox = memoryInbox({ backoffMs: 5, keepCompletedMs: 60_000 });
    const { receiver } = setup({}, inbox);
    receiver.on('UserSignedIn', () => undefined);
    const completedAt = Date.now();
    const clock = vi.spyOn(Date, 'now').mockReturnValue(completedAt);
    try {
      await receiver.handle(signedRequest({ idempotencyKey: 'k-1' }));
      const worker = inbox.work(receiver);
      await inbox.idle();
      await worker.close();
      // A delivery stored 1 ms before the end of the window keeps it; one at its end drops it.
      clock.mockReturnValue(completedAt + 59_999);
      await inbox.enqueue(storedOf(signedRequest({ idempotencyKey: 'k-2' })));
      expect((await inbox.jobs()).map((job) => job.id)).toEqual(['k-1', 'k-2']);
      clock.mockReturnValue(completedAt + 60_000);
      await inbox.enqueue(storedOf(signedRequest({ idempotencyKey: 'k-3' })));
      expect((await inbox.jobs()).map((job) => job.id)).toEqual(['k-2', 'k-3']);
    } finally {
      clock.mockRestore();
      await inbox.close();
    }
  });

  it('keeps completed jobs a day by default', async () => {
    const inbox = memoryInbox();
    const { receiver } = setup({}, inbox);
    receiver.on('UserSignedIn', () => undefined);
    const completedAt = Date.now();
    const clock = vi.spyOn(Date, 'now').mockReturnValue(completedAt);
    try {
      await receiver.handle(signedRequest({ idempotencyKey: 'day-1' }));
      const worker = inbox.work(receiver);
      await inbox.idle();
      await worker.close();
      clock.mockReturnValue(completedAt + 24 * 3_600_000 - 1);
      await inbox.enqueue(storedOf(signedRequest({ idempotencyKey: 'day-2' })));
      expect((await inbox.jobs()).map((job) => job.id)).toEqual(['day-1', 'day-2']);
      clock.mockReturnValue(completedAt + 24 * 3_600_000);
      await inbox.enqueue(storedOf(signedRequest({ idempotencyKey: 'day-3' })));
      expect((await inbox.jobs()).map((job) => job.id)).toEqual(['day-2', 'day-3']);
    } finally {
      clock.mockRestore();
      await inbox.close();
    }
  });

  it('once closed: refuses new deliveries, runs no delayed retry, and leaves a failed run waiting', async () => {
    const inbox = memoryInbox({ backoffMs: 100 });
    const { receiver } = setup({}, inbox);
    const runs: string[] = [];
    const held = gate();
    receiver.on('UserSignedIn', async (event) => {
      runs.push(event.idempotencyKey);
      if (event.idempotencyKey === 'z-2') await held.handler();
      throw new Error('fails');
    });
    await receiver.handle(signedRequest({ idempotencyKey: 'z-1' }));
    inbox.work(receiver, { concurrency: 2 });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await inbox.jobs({ state: 'delayed' })).toMatchObject([{ id: 'z-1' }]);
    await receiver.handle(signedRequest({ idempotencyKey: 'z-2' }));
    await new Promise((resolve) => setTimeout(resolve, 5));
    let closed = false;
    const closing = inbox.close().then(() => (closed = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    // close() waits for the run in progress.
    expect(closed).toBe(false);
    held.open();
    await closing;
    // Its failure leaves it waiting at once, with no retry timer.
    expect(await inbox.jobs({ state: 'waiting' })).toMatchObject([{ id: 'z-2' }]);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(runs).toEqual(['z-1', 'z-2']);
    expect(await inbox.jobs({ state: 'waiting' })).toMatchObject([{ id: 'z-2' }]);
  });
});
