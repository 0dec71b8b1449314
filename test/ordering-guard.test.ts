// The ordering guard through receiver.handle() and processStored (docs/receiving.md): with
// `latestOnly`, a state older (by its timestamp) than the newest processed for its entity is
// answered 200 superseded and runs nothing; two deliveries of one entity never run at once. The
// entity is taken in the delivery's one claim and ended in its one settle.
import { describe, expect, it, vi } from 'vitest';
import {
  ConfigError,
  createReceiver,
  memoryInbox,
  memoryStore,
  type IdempotencyStore,
  type Logger,
  type ReceiverOptions,
  type SchoolhooksError,
  type Settlement,
  StoreUnavailableError,
} from '../src/index.js';
import { configRefusal } from './helpers/failure-of.js';
import { deferred, SECRET, signedRequest } from './helpers/signed.js';

/** `agoMs` before now, as the platform stamps an event. */
const at = (agoMs: number) => new Date(Date.now() - agoMs).toISOString();

/** A CourseProgressChanged of one lesson of one user, stamped `agoMs` ago. */
function progress(agoMs: number, lessonId: number | null = 884213, user = 1937465) {
  const data = { user: { id: user }, course: { id: 73120 }, lessonId, status: 'OnTheory' };
  return signedRequest({ event: 'CourseProgressChanged', data, timestamp: at(agoMs) });
}

function setup(options: Partial<ReceiverOptions> = {}) {
  const errors: SchoolhooksError[] = [];
  const lines: { level: string; fields: Record<string, unknown> }[] = [];
  const logger: Logger = {
    debug: (fields) => void lines.push({ level: 'debug', fields }),
    info: (fields) => void lines.push({ level: 'info', fields }),
    warn: (fields) => void lines.push({ level: 'warn', fields }),
    error: (fields) => void lines.push({ level: 'error', fields }),
  };
  const receiver = createReceiver({ secret: SECRET, logger, ...options });
  receiver.onError((error) => void errors.push(error));
  const ran: string[] = [];
  return { receiver, errors, lines, ran };
}

describe('on(name, handler, { latestOnly: true })', () => {
  it('is refused for an event about no entity, naming it, and registers nothing', () => {
    const { receiver } = setup();
    for (const name of ['UserSignedIn', 'CourseLessonPracticeCompleted', 'UserTgConnected']) {
      const on = () => receiver.on(name as 'CourseProgressChanged', () => {}, { latestOnly: true });
      expect(on).toThrow(ConfigError);
      expect(on).toThrow(new RegExp(`latestOnly needs an event about an entity.*${name}`));
    }
    const mixed = () =>
      receiver.on(
        ['CourseProgressChanged', 'UserSignedIn'] as unknown as 'CourseProgressChanged',
        () => {},
        { latestOnly: true },
      );
    expect(mixed).toThrow(/UserSignedIn/);
  });

  it('is accepted for every event of the entity table', () => {
    const { receiver } = setup();
    const names = [
      'PaymentCompleted',
      'ProductEnrolledToFree',
      'ProductEnrolledViaLms',
      'ProductEnrolledViaPayment',
      'ProductEnrolledByInviteLink',
      'CertificateIssued',
      'UserSignedUp',
      'UserCreatedViaLms',
      'CourseProgressChanged',
      'CourseCompleted',
    ] as const;
    expect(() => receiver.on(names, () => {}, { latestOnly: true })).not.toThrow();
  });

  it('is a ConfigError at createReceiver for a store of the earlier contract, naming what it lacks', () => {
    // A store written for 0.2: claim(key, leaseMs), complete, release; no settle, no peek.
    const earlier = {
      claim: () => Promise.resolve({ state: 'in_flight' }),
      complete: () => Promise.resolve(),
      release: () => Promise.resolve(),
    } as unknown as IdempotencyStore;
    const refusal = configRefusal(() => setup({ store: earlier }));
    expect(refusal).toBeInstanceOf(ConfigError);
    expect(refusal.message).toMatch(/^store lacks settle\(\), peek\(\): /);
  });
});

describe('the ordering guard on one receiver', () => {
  it('answers an older state 200 superseded, runs nothing, completes its key and logs it at info', async () => {
    const { receiver, ran, lines, errors } = setup();
    receiver.on('CourseProgressChanged', (event) => void ran.push(event.timestamp), {
      latestOnly: true,
    });
    const newer = progress(1_000);
    const older = progress(60_000);
    expect(await receiver.handle(newer)).toMatchObject({ status: 200, outcome: 'processed' });
    const answer = await receiver.handle(older);
    expect(answer).toMatchObject({
      status: 200,
      outcome: 'superseded',
      body: { ok: true, outcome: 'superseded', idempotencyKey: expect.any(String) },
    });
    expect(ran).toHaveLength(1);
    // Its key was completed: a resend of it is a duplicate, still running nothing.
    expect(await receiver.handle(older)).toMatchObject({ status: 200, outcome: 'duplicate' });
    expect(ran).toHaveLength(1);
    const logged = lines.filter((line) => line.fields['outcome'] === 'superseded');
    expect(logged.map((line) => line.level)).toEqual(['info']);
    expect(errors).toEqual([]);
  });

  it('runs every newer state, in turn', async () => {
    const { receiver, ran } = setup();
    receiver.on('CourseProgressChanged', (event) => void ran.push(event.idempotencyKey), {
      latestOnly: true,
    });
    for (const agoMs of [50_000, 40_000, 10_000]) {
      expect((await receiver.handle(progress(agoMs))).outcome).toBe('processed');
    }
    expect(ran).toHaveLength(3);
  });

  it('runs a state as old as the newest processed: the same timestamp is not superseded', async () => {
    const { receiver, ran } = setup();
    receiver.on('CourseProgressChanged', (event) => void ran.push(event.idempotencyKey), {
      latestOnly: true,
    });
    const timestamp = at(30_000);
    const data = { user: { id: 1 }, course: { id: 2 }, lessonId: 3 };
    for (const status of ['OnTheory', 'OnPractice']) {
      const request = signedRequest({
        event: 'CourseProgressChanged',
        data: { ...data, status },
        timestamp,
      });
      expect((await receiver.handle(request)).outcome).toBe('processed');
    }
    expect(ran).toHaveLength(2);
  });

  it('keeps different entities apart: another lesson, course progress or user is never superseded', async () => {
    const { receiver, ran } = setup();
    receiver.on('CourseProgressChanged', () => void ran.push('ran'), { latestOnly: true });
    await receiver.handle(progress(1_000));
    for (const request of [
      progress(60_000, 1),
      progress(60_000, null),
      progress(60_000, 884213, 42),
    ]) {
      expect((await receiver.handle(request)).outcome).toBe('processed');
    }
    expect(ran).toHaveLength(4);
  });

  it('keeps the same entity under two tenants apart', async () => {
    const { receiver, ran } = setup({ secret: () => SECRET });
    receiver.on('CourseProgressChanged', (_, ctx) => void ran.push(ctx.tenant!), {
      latestOnly: true,
    });
    const newer = { ...progress(1_000), tenant: 'school-a' };
    expect((await receiver.handle(newer)).outcome).toBe('processed');
    expect((await receiver.handle({ ...progress(60_000), tenant: 'school-b' })).outcome).toBe(
      'processed',
    );
    expect((await receiver.handle({ ...progress(60_000), tenant: 'school-a' })).outcome).toBe(
      'superseded',
    );
    expect(ran).toEqual(['school-a', 'school-b']);
  });

  it('answers 409 in_flight to a second delivery of the entity while the first runs, and frees its key', async () => {
    const { receiver, ran } = setup();
    const gate = deferred();
    const started = deferred();
    receiver.on(
      'CourseProgressChanged',
      async (event) => {
        ran.push(event.idempotencyKey);
        started.resolve();
        await gate.promise;
      },
      { latestOnly: true },
    );
    const first = receiver.handle(progress(2_000));
    await started.promise;
    const second = progress(1_000);
    expect(await receiver.handle(second)).toMatchObject({ status: 409, outcome: 'in_flight' });
    gate.resolve();
    expect((await first).outcome).toBe('processed');
    // The second's key was released: its retry runs (it is newer).
    expect((await receiver.handle(second)).outcome).toBe('processed');
    expect(ran).toHaveLength(2);
  });

  it('records nothing for a failed handler: an older state runs after it, and the failed one is retried', async () => {
    const { receiver, ran, errors } = setup();
    let failing = true;
    receiver.on(
      'CourseProgressChanged',
      (event) => {
        if (failing && event.data.status === 'Completed') throw new Error('crm hiccup');
        ran.push(event.data.status ?? '');
      },
      { latestOnly: true },
    );
    const data = { user: { id: 1 }, course: { id: 2 }, lessonId: 3 };
    const completed = signedRequest({
      event: 'CourseProgressChanged',
      data: { ...data, status: 'Completed' },
      timestamp: at(1_000),
    });
    const onTheory = signedRequest({
      event: 'CourseProgressChanged',
      data: { ...data, status: 'OnTheory' },
      timestamp: at(60_000),
    });
    expect((await receiver.handle(completed)).outcome).toBe('handler_failed');
    expect((await receiver.handle(onTheory)).outcome).toBe('processed');
    failing = false;
    expect((await receiver.handle(completed)).outcome).toBe('processed');
    expect(ran).toEqual(['OnTheory', 'Completed']);
    expect(errors.map((error) => error.code)).toEqual(['handler_failed']);
  });

  it('completes the entity when handlers that timed out end well, and frees it when they fail', async () => {
    const { receiver, ran } = setup({ handlerTimeoutMs: 20 });
    const ends: { resolve: () => void; fail: (error: Error) => void }[] = [];
    receiver.on(
      'CourseProgressChanged',
      async (event) => {
        await new Promise<void>((resolve, fail) => ends.push({ resolve, fail }));
        ran.push(event.timestamp);
      },
      { latestOnly: true },
    );
    const settle = () => new Promise((resolve) => setTimeout(resolve, 10));
    expect((await receiver.handle(progress(10_000))).outcome).toBe('timeout');
    // Still running: the entity is held.
    expect((await receiver.handle(progress(500))).outcome).toBe('in_flight');
    ends[0]!.resolve();
    await settle();
    // They ended well: 10 s ago is the newest processed.
    expect((await receiver.handle(progress(20_000))).outcome).toBe('superseded');
    expect((await receiver.handle(progress(5_000))).outcome).toBe('timeout');
    ends[1]!.fail(new Error('crm hiccup'));
    await settle();
    // They failed: nothing recorded past 10 s ago, and the entity is free.
    const between = receiver.handle(progress(7_000));
    while (ends.length < 3) await new Promise((resolve) => setImmediate(resolve));
    ends[2]!.resolve();
    expect((await between).outcome).toBe('processed');
    expect(ran).toHaveLength(2);
  });

  it('guards every handler of the event, a plain one and onAny too, once one of them is latestOnly', async () => {
    const { receiver, ran } = setup();
    receiver.on('CourseProgressChanged', () => void ran.push('latest'), { latestOnly: true });
    receiver.on('CourseProgressChanged', () => void ran.push('plain'));
    receiver.onAny(() => void ran.push('any'));
    await receiver.handle(progress(1_000));
    expect((await receiver.handle(progress(60_000))).outcome).toBe('superseded');
    expect(ran.sort()).toEqual(['any', 'latest', 'plain']);
  });

  it('runs an event whose payload names no entity (an enrollment without its access) unguarded', async () => {
    const { receiver, ran } = setup();
    receiver.on('ProductEnrolledToFree', () => void ran.push('ran'), { latestOnly: true });
    const data = { user: { id: 1937465 } };
    for (const agoMs of [1_000, 60_000]) {
      const request = signedRequest({ event: 'ProductEnrolledToFree', data, timestamp: at(agoMs) });
      expect((await receiver.handle(request)).outcome).toBe('processed');
    }
    expect(ran).toHaveLength(2);
  });

  it('orders the events that share an entity together: the four enrollments of one access', async () => {
    const { receiver, ran } = setup();
    receiver.on(
      ['ProductEnrolledToFree', 'ProductEnrolledByInviteLink'],
      (event) => void ran.push(event.event),
      { latestOnly: true },
    );
    const data = { user: { id: 1 }, access: { id: 2418830 }, inviteLinkId: 5531 };
    const invite = signedRequest({
      event: 'ProductEnrolledByInviteLink',
      data,
      timestamp: at(1_000),
    });
    const free = signedRequest({ event: 'ProductEnrolledToFree', data, timestamp: at(60_000) });
    expect((await receiver.handle(invite)).outcome).toBe('processed');
    expect((await receiver.handle(free)).outcome).toBe('superseded');
    expect(ran).toEqual(['ProductEnrolledByInviteLink']);
  });

  it('answers 503 store_unavailable when the store fails the claim, and the retry runs', async () => {
    const store = memoryStore();
    let fail = true;
    const flaky: IdempotencyStore = {
      ...store,
      claim: (request) => {
        if (fail) throw new Error('ECONNRESET redis://:hunter2@10.0.0.1');
        return store.claim(request);
      },
    };
    const { receiver, ran, errors } = setup({ store: flaky });
    receiver.on('CourseProgressChanged', () => void ran.push('ran'), { latestOnly: true });
    const request = progress(1_000);
    expect(await receiver.handle(request)).toMatchObject({
      status: 503,
      outcome: 'store_unavailable',
    });
    expect(errors.map((error) => error.code)).toEqual(['store_unavailable']);
    expect(errors[0]!.message).not.toContain('hunter2');
    fail = false;
    expect((await receiver.handle(request)).outcome).toBe('processed');
    expect(ran).toEqual(['ran']);
  });
});

/**
 * A memory store whose settle (`complete` or `release`) fails while `failing.on` is set: at once
 * (a throw, as a store's bug) or later (a rejection, as a dropped connection), with a message
 * quoting a URL's password and the signing secret, which the seller must never read.
 */
function settleFailing(
  failingHow: Settlement,
  how: 'throws' | 'rejects',
  extra: Partial<IdempotencyStore> = {},
) {
  const store = memoryStore();
  const failing = { on: true, calls: 0 };
  const cause = new Error(`ECONNRESET redis://:hunter2@10.0.0.1 (${SECRET})`);
  const settled: Settlement[] = [];
  const settle: IdempotencyStore['settle'] = (claim, settlement) => {
    settled.push(settlement);
    if (failing.on && settlement === failingHow) {
      failing.calls += 1;
      if (how === 'throws') throw cause;
      return Promise.reject(cause);
    }
    return store.settle(claim, settlement);
  };
  const flaky: IdempotencyStore = { ...store, settle, ...extra };
  return { store: flaky, failing, cause, settled };
}

/** What the seller reads of a store failure: its words, then the cause's, no secret. */
const cleanCause = 'ECONNRESET redis://:[hidden]@10.0.0.1 ([hidden])';

describe("the ordering guard's store failures: reported to onError, the answer unchanged", () => {
  for (const how of ['throws', 'rejects'] as const) {
    it(`acknowledges handlers that succeeded when the settle ${how}, reports it, and leaves the entity to its lease`, async () => {
      const { store, failing, cause } = settleFailing('complete', how);
      const { receiver, ran, errors } = setup({ store, leaseMs: 50 });
      receiver.on('CourseProgressChanged', (event) => void ran.push(event.timestamp), {
        latestOnly: true,
      });
      const request = progress(1_000);
      expect(await receiver.handle(request)).toMatchObject({ status: 200, outcome: 'processed' });
      expect(failing.calls).toBe(1);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(StoreUnavailableError);
      expect(errors[0]!.code).toBe('store_unavailable');
      expect(errors[0]!.message).toBe(
        `the idempotency store failed to record completion: ${cleanCause}`,
      );
      expect(errors[0]!.cause).toBe(cause);
      // Its version was taken at claim time: an older state is superseded even now.
      failing.on = false;
      await new Promise((resolve) => setTimeout(resolve, 80));
      expect((await receiver.handle(progress(60_000))).outcome).toBe('superseded');
      expect(ran).toHaveLength(1);
    });

    it(`still answers 500 handler_failed when the release ${how}, and reports it`, async () => {
      const { store, failing, cause, settled } = settleFailing('release', how);
      const { receiver, errors } = setup({ store });
      receiver.on(
        'CourseProgressChanged',
        () => {
          throw new Error('crm hiccup');
        },
        { latestOnly: true },
      );
      const request = progress(1_000);
      expect(await receiver.handle(request)).toMatchObject({
        status: 500,
        outcome: 'handler_failed',
      });
      expect(failing.calls).toBe(1);
      expect(settled).toEqual(['release']);
      expect(errors.map((error) => error.code).sort()).toEqual([
        'handler_failed',
        'store_unavailable',
      ]);
      const reported = errors.find((error) => error instanceof StoreUnavailableError);
      expect(reported?.message).toBe(
        `the idempotency store failed to release the key: ${cleanCause}`,
      );
      expect(reported?.cause).toBe(cause);
    });
  }

  it('reports a failed settle after timed-out handlers end well', async () => {
    const { store, cause } = settleFailing('complete', 'rejects');
    const { receiver, errors } = setup({ store, handlerTimeoutMs: 20 });
    const gate = deferred();
    receiver.on('CourseProgressChanged', () => gate.promise, { latestOnly: true });
    const request = progress(1_000);
    expect((await receiver.handle(request)).outcome).toBe('timeout');
    gate.resolve();
    await vi.waitFor(() =>
      expect(errors.map((error) => error.code)).toContain('store_unavailable'),
    );
    const reported = errors.find((error) => error instanceof StoreUnavailableError);
    expect(reported?.message).toBe(
      `the idempotency store failed to record completion: ${cleanCause}`,
    );
    expect(reported?.cause).toBe(cause);
  });

  it('reports a failed release after timed-out handlers fail', async () => {
    const { store, cause } = settleFailing('release', 'rejects');
    const { receiver, errors } = setup({ store, handlerTimeoutMs: 20 });
    const gate = deferred();
    receiver.on(
      'CourseProgressChanged',
      async () => {
        await gate.promise;
        throw new Error('crm hiccup');
      },
      { latestOnly: true },
    );
    expect((await receiver.handle(progress(1_000))).outcome).toBe('timeout');
    gate.resolve();
    await vi.waitFor(() =>
      expect(errors.map((error) => error.code)).toContain('store_unavailable'),
    );
    const reported = errors.find((error) => error instanceof StoreUnavailableError);
    expect(reported?.message).toBe(
      `the idempotency store failed to release the key: ${cleanCause}`,
    );
    expect(reported?.cause).toBe(cause);
  });

  it("answers 503 when the handlers' transaction cannot commit, naming the commit", async () => {
    const abandon = vi.fn();
    const memory = memoryStore();
    const { store, cause } = settleFailing('complete', 'rejects', {
      claim: async (request) => {
        const claim = await memory.claim(request);
        return claim.state === 'claimed'
          ? { ...claim, transaction: { client: {} as never, abandon } }
          : claim;
      },
    });
    const { receiver, errors } = setup({ store });
    receiver.on('CourseProgressChanged', () => undefined, { latestOnly: true });
    const result = await receiver.handle(progress(1_000));
    expect(result).toMatchObject({ status: 503, outcome: 'store_unavailable' });
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toBe(
      `the idempotency store failed to commit the handlers' transaction: ${cleanCause}`,
    );
    expect(errors[0]!.cause).toBe(cause);
  });

  it('names the failed claim in the words the seller reads', async () => {
    const memory = memoryStore();
    const cause = new Error(`ECONNRESET redis://:hunter2@10.0.0.1 (${SECRET})`);
    const store: IdempotencyStore = { ...memory, claim: () => Promise.reject(cause) };
    const { receiver, errors } = setup({ store });
    receiver.on('CourseProgressChanged', () => undefined, { latestOnly: true });
    expect((await receiver.handle(progress(1_000))).status).toBe(503);
    expect(errors[0]!.message).toBe(`the idempotency store failed to claim the key: ${cleanCause}`);
    expect(errors[0]!.cause).toBe(cause);
  });
});

describe('the ordering guard behind an inbox (processStored)', () => {
  it('answers a stored older state superseded: the run succeeds, its handler never runs', async () => {
    const inbox = memoryInbox({ backoffMs: 5 });
    const { receiver, ran } = setup({ inbox });
    receiver.on('CourseProgressChanged', (event) => void ran.push(event.timestamp), {
      latestOnly: true,
    });
    const newer = progress(1_000);
    const older = progress(60_000);
    expect((await receiver.handle(newer)).outcome).toBe('queued');
    expect((await receiver.handle(older)).outcome).toBe('queued');
    const worker = inbox.work(receiver);
    await inbox.idle();
    await worker.close();
    expect(ran).toEqual([JSON.parse(newer.body).timestamp]);
    const jobs = await inbox.jobs();
    expect(jobs.map((job) => job.state)).toEqual(['completed', 'completed']);
  });

  it('tells the inbox to retry a run whose entity another run holds, and not to retry a superseded one', async () => {
    const stored: Parameters<ReturnType<typeof createReceiver>['processStored']>[0][] = [];
    const inbox = {
      enqueue: async (delivery: (typeof stored)[number]) => void stored.push(delivery),
    };
    const { receiver } = setup({ inbox });
    const gate = deferred();
    const started = deferred();
    receiver.on(
      'CourseProgressChanged',
      async () => {
        started.resolve();
        await gate.promise;
      },
      { latestOnly: true },
    );
    await receiver.handle(progress(1_000));
    await receiver.handle(progress(500));
    await receiver.handle(progress(60_000));
    const [newer, newest, older] = stored;
    const first = receiver.processStored(newer!, { attempt: 1 });
    await started.promise;
    expect(await receiver.processStored(newest!, { attempt: 1 })).toMatchObject({
      outcome: 'in_flight',
      ok: false,
      retry: true,
    });
    gate.resolve();
    expect(await first).toMatchObject({ outcome: 'processed', ok: true });
    expect(await receiver.processStored(older!, { attempt: 1 })).toMatchObject({
      outcome: 'superseded',
      ok: true,
      retry: false,
    });
  });
});
