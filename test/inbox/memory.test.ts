import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  ConfigError,
  createReceiver,
  InboxUnavailableError,
  memoryInbox,
  memoryStore,
  paymentCompletedDataSchema,
  PayloadValidationError,
  type Inbox,
  type ReceiverOptions,
  type SchoolhooksError,
  type StoredDelivery,
} from '../../src/index.js';
import { createDelivery, fixtures } from '../../src/testing/index.js';
import { SECRET, signedRaw, signedRequest } from '../helpers/signed.js';

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

describe('memoryInbox options', () => {
  it('throws a ConfigError for runs, durations or a concurrency it cannot work with', () => {
    expect(() => memoryInbox({ attempts: 1.5 })).toThrow(
      new ConfigError('memoryInbox: attempts must be a positive integer'),
    );
    expect(() => memoryInbox({ backoffMs: Number.NaN })).toThrow(
      'memoryInbox: backoffMs must be a number of ms, 0 or more',
    );
    expect(() => memoryInbox({ keepCompletedMs: -1 })).toThrow(/keepCompletedMs/);
    const inbox = memoryInbox();
    const receiver = createReceiver({ secret: SECRET, inbox });
    expect(() => inbox.work(receiver, { concurrency: 0 })).toThrow(
      'memoryInbox: concurrency must be a positive integer',
    );
  });
});

describe('the options every inbox checks (checkInboxOptions, checkConcurrency)', () => {
  it('takes 1 run and 0 ms, and refuses 0 runs, an infinite duration and a fractional concurrency', () => {
    expect(() => memoryInbox({ attempts: 1, backoffMs: 0, keepCompletedMs: 0 })).not.toThrow();
    expect(() => memoryInbox({ attempts: 0 })).toThrow(
      'memoryInbox: attempts must be a positive integer',
    );
    expect(() => memoryInbox({ backoffMs: Number.POSITIVE_INFINITY })).toThrow(
      'memoryInbox: backoffMs must be a number of ms, 0 or more',
    );
    expect(() => memoryInbox({ keepCompletedMs: -1 })).toThrow(
      'memoryInbox: keepCompletedMs must be a number of ms, 0 or more',
    );
    const inbox = memoryInbox();
    const receiver = createReceiver({ secret: SECRET, inbox });
    expect(() => inbox.work(receiver, { concurrency: 1.5 })).toThrow(ConfigError);
    expect(() => inbox.work(receiver, { concurrency: 1.5 })).toThrow(
      'memoryInbox: concurrency must be a positive integer',
    );
    void inbox.work(receiver, { concurrency: 1 }).close();
  });
});

describe('createReceiver({ inbox }): the HTTP side', () => {
  it('answers 202 queued once stored, before any handler runs', async () => {
    const { receiver, inbox } = setup();
    const handler = vi.fn();
    receiver.on('UserSignedIn', handler);
    const request = signedRequest({ idempotencyKey: 'q-1' });
    const result = await receiver.handle(request);
    expect(result).toEqual({
      status: 202,
      outcome: 'queued',
      body: { ok: true, outcome: 'queued', idempotencyKey: 'q-1' },
    });
    expect(handler).not.toHaveBeenCalled();
    expect(await inbox.jobs()).toMatchObject([
      {
        id: 'q-1',
        event: 'UserSignedIn',
        idempotencyKey: 'q-1',
        state: 'waiting',
        attemptsMade: 0,
      },
    ]);
  });

  it('answers a repeat 200 duplicate and stores it once', async () => {
    const { receiver, inbox } = setup();
    const request = signedRequest({ idempotencyKey: 'q-2' });
    expect((await receiver.handle(request)).outcome).toBe('queued');
    expect((await receiver.handle(request)).outcome).toBe('duplicate');
    expect(await inbox.jobs()).toHaveLength(1);
  });

  it('keeps an invalid payload instead of refusing it: validation waits for the worker', async () => {
    const { receiver, inbox } = setup();
    const delivery = createDelivery('UserSignedUp', { user: 'not an object' } as never, {
      secret: SECRET,
    });
    expect((await receiver.handle({ method: 'POST', ...delivery })).outcome).toBe('queued');
    expect(await inbox.jobs()).toHaveLength(1);
  });

  it('still refuses what never verifies or parses, and stale events, before storing anything', async () => {
    const { receiver, inbox } = setup();
    const wrong = signedRequest({}, 'x'.repeat(64));
    expect((await receiver.handle(wrong)).outcome).toBe('invalid_signature');
    expect((await receiver.handle(signedRaw('{"event":'))).outcome).toBe('malformed');
    const old = signedRequest({ timestamp: '2001-01-01T00:00:00Z' });
    expect((await receiver.handle(old)).outcome).toBe('stale');
    expect(await inbox.jobs()).toEqual([]);
  });

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

  it('refuses a body whose bytes are not UTF-8 with 400 malformed, and stores nothing', async () => {
    const inbox = memoryInbox({ backoffMs: 5 });
    const { receiver } = setup({}, inbox);
    receiver.on('UserSignedIn', () => {});
    const text = `{"event":"UserSignedIn","timestamp":"${new Date().toISOString()}","idempotencyKey":"q-5","data":{"name":"X"}}`;
    const bytes = Buffer.from(text);
    bytes[bytes.indexOf('X')] = 0xff; // a lone byte that is not UTF-8, inside a string
    expect(await receiver.handle(signedRaw(bytes))).toMatchObject({
      status: 400,
      outcome: 'malformed',
    });
    expect(await inbox.jobs()).toEqual([]);
  });

  it('still runs a delivery stored as base64 (as earlier versions stored some)', async () => {
    const inbox = memoryInbox({ backoffMs: 5 });
    const { receiver } = setup({}, inbox);
    const handler = vi.fn();
    receiver.on('UserSignedIn', handler);
    const { body, headers } = signedRequest({ idempotencyKey: 'q-6' });
    await inbox.enqueue({
      body: Buffer.from(body).toString('base64'),
      encoding: 'base64',
      signature: headers.signature!,
      event: 'UserSignedIn',
      idempotencyKey: 'q-6',
      receivedAt: new Date().toISOString(),
    });
    const worker = inbox.work(receiver);
    await inbox.idle();
    await worker.close();
    expect(handler).toHaveBeenCalledTimes(1);
  });
});

describe('inbox.work(receiver): the worker side', () => {
  it('runs the handlers once a worker starts, with ctx.attempt 1', async () => {
    const { receiver, inbox } = setup();
    const attempts: number[] = [];
    receiver.on('UserSignedIn', (_event, ctx) => {
      attempts.push(ctx.attempt);
    });
    await receiver.handle(signedRequest({ idempotencyKey: 'w-1' }));
    const worker = inbox.work(receiver, { concurrency: 2 });
    await inbox.idle();
    await worker.close();
    expect(attempts).toEqual([1]);
    expect(await inbox.jobs({ state: 'completed' })).toHaveLength(1);
  });

  it('retries a failing handler with backoff: it succeeds on attempt 3, its effect once', async () => {
    const { receiver, inbox, errors } = setup();
    const effects: string[] = [];
    receiver.on('UserSignedIn', (event, ctx) => {
      if (ctx.attempt < 3) throw new Error(`not yet (attempt ${ctx.attempt})`);
      effects.push(event.idempotencyKey);
    });
    await receiver.handle(signedRequest({ idempotencyKey: 'w-2' }));
    const worker = inbox.work(receiver);
    await inbox.idle();
    await worker.close();
    expect(effects).toEqual(['w-2']);
    expect(await inbox.jobs()).toMatchObject([{ state: 'completed', attemptsMade: 3 }]);
    expect(errors.filter((e) => e.code === 'handler_failed')).toHaveLength(2);
  });

  it('dead-letters after `attempts`, with the handler error as the reason', async () => {
    const inbox = memoryInbox({ attempts: 2, backoffMs: 1 });
    const { receiver } = setup({}, inbox);
    receiver.on('UserSignedIn', () => {
      throw new Error('CRM is down');
    });
    await receiver.handle(signedRequest({ idempotencyKey: 'w-3' }));
    const worker = inbox.work(receiver);
    await inbox.idle();
    await worker.close();
    expect(await inbox.jobs({ state: 'failed' })).toMatchObject([
      { idempotencyKey: 'w-3', attemptsMade: 2, reason: 'handler_failed: CRM is down' },
    ]);
  });

  it('keeps a dead letter’s reason on one line, with no secret of ours in it', async () => {
    const inbox = memoryInbox({ attempts: 1, backoffMs: 1 });
    const { receiver } = setup({}, inbox);
    receiver.on('UserSignedIn', () => {
      throw new Error(`CRM refused\nkey ${SECRET}`);
    });
    await receiver.handle(signedRequest({ idempotencyKey: 'w-3b' }));
    const worker = inbox.work(receiver);
    await inbox.idle();
    await worker.close();
    const [job] = await inbox.jobs({ state: 'failed' });
    expect(job?.reason).toBe('handler_failed: CRM refused key [hidden]');
    expect(job?.reason).not.toContain(SECRET);
  });

  it('dead-letters an invalid payload at once, never running a handler, and replays it after a fix', async () => {
    const { receiver, inbox, errors } = setup();
    const handler = vi.fn();
    receiver.on('PaymentCompleted', handler);
    // The full fixture, with one field of a type the schema does not read.
    const data = fixtures.PaymentCompleted();
    Object.assign(data.payment.invoice, { totalAmount: '4990.00' });
    const delivery = createDelivery('PaymentCompleted', data as never, {
      secret: SECRET,
      idempotencyKey: 'w-4',
    });
    expect((await receiver.handle({ method: 'POST', ...delivery })).outcome).toBe('queued');
    const worker = inbox.work(receiver);
    await inbox.idle();
    const [dead] = await inbox.jobs({ state: 'failed' });
    expect(dead?.attemptsMade).toBe(1);
    expect(dead?.reason).toBe(
      'invalid_payload: PaymentCompleted payload failed validation at data.payment.invoice.totalAmount: Invalid input: expected number, received string',
    );
    expect(handler).not.toHaveBeenCalled();
    expect(errors.some((e) => e instanceof PayloadValidationError)).toBe(true);

    // The fix: a schema that reads this payload (here: totalAmount as a string too), as an
    // upgrade would bring; the dead letter is replayed and processed, once.
    await worker.close();
    const lenientInvoice = paymentCompletedDataSchema.extend({
      payment: paymentCompletedDataSchema.shape.payment.extend({
        invoice: paymentCompletedDataSchema.shape.payment.shape.invoice.extend({
          totalAmount: z.union([z.number(), z.string()]),
        }),
      }),
    });
    const fixed = createReceiver({
      secret: SECRET,
      schemas: { PaymentCompleted: lenientInvoice },
    });
    const effects: string[] = [];
    fixed.on('PaymentCompleted', (event) => {
      effects.push(event.idempotencyKey);
    });
    const fixedWorker = inbox.work(fixed);
    expect(await inbox.retryFailed({ event: 'UserSignedIn' })).toBe(0);
    expect(await inbox.retryFailed({ event: 'PaymentCompleted' })).toBe(1);
    await inbox.idle();
    await fixedWorker.close();
    expect(effects).toEqual(['w-4']);
    expect(await inbox.jobs({ state: 'completed' })).toMatchObject([{ idempotencyKey: 'w-4' }]);
    expect(await inbox.retryFailed()).toBe(0);
  });

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

  it('lets worker.close() finish the job that runs, and takes no new one', async () => {
    const { receiver, inbox } = setup();
    const finished: string[] = [];
    receiver.on('UserSignedIn', async (event) => {
      await new Promise((resolve) => setTimeout(resolve, 30));
      finished.push(event.idempotencyKey);
    });
    await receiver.handle(signedRequest({ idempotencyKey: 'c-1' }));
    await receiver.handle(signedRequest({ idempotencyKey: 'c-2' }));
    const worker = inbox.work(receiver, { concurrency: 1 });
    await worker.close();
    expect(finished).toEqual(['c-1']);
    expect((await inbox.jobs({ state: 'waiting' })).map((j) => j.id)).toEqual(['c-2']);
    await inbox.close();
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

  it('runs up to `concurrency` jobs at once per worker, and no more', async () => {
    for (const concurrency of [1, 2]) {
      const { receiver, inbox } = setup();
      const held = gate();
      receiver.on('UserSignedIn', held.handler);
      for (const key of ['p-1', 'p-2', 'p-3']) {
        await receiver.handle(signedRequest({ idempotencyKey: `${key}-${concurrency}` }));
      }
      const worker = inbox.work(receiver, { concurrency });
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(held.running(), `concurrency ${concurrency}`).toBe(concurrency);
      expect(await inbox.jobs({ state: 'active' })).toHaveLength(concurrency);
      held.open();
      await inbox.idle();
      await worker.close();
      expect(held.most()).toBe(concurrency);
      expect(await inbox.jobs({ state: 'completed' })).toHaveLength(3);
    }
  });

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

  it('keeps the first copy of a delivery stored twice', async () => {
    const inbox = memoryInbox();
    const stored = storedOf(signedRequest({ idempotencyKey: 'twice-1' }));
    await inbox.enqueue({ ...stored, receivedAt: '2026-01-01T00:00:00.000Z' });
    await inbox.enqueue({ ...stored, receivedAt: '2026-01-01T00:00:05.000Z' });
    expect(await inbox.jobs()).toMatchObject([
      { id: 'twice-1', receivedAt: '2026-01-01T00:00:00.000Z' },
    ]);
    await inbox.close();
  });

  it('clears the reason of a job that failed once and then completed', async () => {
    const { receiver, inbox } = setup();
    receiver.on('UserSignedIn', (_event, ctx) => {
      if (ctx.attempt === 1) throw new Error('once');
    });
    await receiver.handle(signedRequest({ idempotencyKey: 'r-1' }));
    const worker = inbox.work(receiver);
    await inbox.idle();
    await worker.close();
    const [job] = await inbox.jobs();
    expect(job).toMatchObject({ state: 'completed', attemptsMade: 2 });
    expect(job).not.toHaveProperty('reason');
  });

  it('runs a replayed dead letter from attempt 1 again', async () => {
    const inbox = memoryInbox({ attempts: 1, backoffMs: 1 });
    const { receiver } = setup({}, inbox);
    const attempts: number[] = [];
    let fixed = false;
    receiver.on('UserSignedIn', (_event, ctx) => {
      attempts.push(ctx.attempt);
      if (!fixed) throw new Error('not yet');
    });
    await receiver.handle(signedRequest({ idempotencyKey: 'd-1' }));
    const worker = inbox.work(receiver);
    await inbox.idle();
    fixed = true;
    expect(await inbox.retryFailed()).toBe(1);
    await inbox.idle();
    await worker.close();
    expect(attempts).toEqual([1, 1]);
    expect(await inbox.jobs()).toMatchObject([{ state: 'completed', attemptsMade: 1 }]);
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
    const enqueueing = inbox.enqueue(storedOf(signedRequest({ idempotencyKey: 'z-3' })));
    await expect(enqueueing).rejects.toBeInstanceOf(Error);
    await expect(enqueueing).rejects.toMatchObject({
      name: 'Error',
      message: 'the inbox is closed',
    });
  });
});
