/**
 * The behaviour every inbox we ship must have (`memoryInbox`, `bullmqInbox`, `pgBossInbox`), as
 * one suite each inbox runs, the way test/stores/contract.ts holds the stores' behaviour.
 * Deliveries reach the receiver over real HTTP (the node adapter on a loopback server, and
 * fetch); workers run in their own time, so every wait polls.
 * @module
 */

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { nodeListener } from '../../src/adapters/node.js';
import {
  ConfigError,
  createReceiver,
  InboxUnavailableError,
  paymentCompletedDataSchema,
  PayloadValidationError,
  type IdempotencyStore,
  type InboxJob,
  type InboxWorker,
  type ManagedInbox,
  type Receiver,
  type ReceiverOptions,
  type SchoolhooksError,
  type StoredDelivery,
} from '../../src/index.js';
import { openTelemetry } from '../../src/telemetry/otel/index.js';
import {
  createTestDelivery,
  fixtureDelivery,
  SECRET,
  signedHeaders,
  storedOf,
  type Delivery,
} from '../helpers/deliveries.js';
import { failureOf } from '../helpers/failure-of.js';
import {
  lookupIn,
  tenantDelivery,
  tenantOfRequest,
  tenantPath,
  tenantSecret,
  tenantSecrets,
  UNUSUAL_TENANTS,
} from '../helpers/tenants.js';

/** The options every inbox takes: its retry policy and how long it keeps completed jobs. */
export interface ContractInboxOptions {
  attempts?: number;
  backoffMs?: number;
  keepCompletedMs?: number;
}

/** One job as `getJob` shows it, for the inboxes that show single jobs. */
export interface ShownJob extends InboxJob {
  outcome?: string;
  finishedAt?: string;
}

/**
 * An inbox that also shows and replays single jobs by id, or by idempotencyKey (and the tenant
 * the delivery's route named, for a tenant's job).
 */
export interface InspectableInbox extends ManagedInbox {
  getJob(idOrKey: string, options?: { tenant?: string }): Promise<ShownJob | undefined>;
  retryJob(idOrKey: string, options?: { tenant?: string }): Promise<boolean>;
}

/** An inbox implementation under test, and how to make and dispose of its inboxes. */
export interface InboxUnderTest {
  /** The factory's name, as its `ConfigError`s say it (`memoryInbox`). */
  factory: string;
  /** A fresh inbox of its own (queue, schema), disposed of by {@link cleanup}. */
  newInbox(options?: ContractInboxOptions): ManagedInbox;
  /** The idempotency store a receiver of this inbox uses (one per receiver). */
  newStore(): IdempotencyStore;
  /** The job id the inbox derives from an idempotencyKey. */
  jobId(idempotencyKey: string): string;
  /** Options every worker of the contract gets beside its concurrency (a short poll). */
  workOptions?: Readonly<Record<string, number>>;
  /** True for inboxes with `getJob` and `retryJob`. */
  inspectable: boolean;
  /** Close what the test's inboxes opened; called after each test, once its workers closed. */
  cleanup(): Promise<void>;
}

/** The reason a payload that misses the schema's type for totalAmount is dead-lettered with. */
const INVALID_TOTAL_AMOUNT =
  'invalid_payload: PaymentCompleted payload failed validation at data.payment.invoice.totalAmount: Invalid input: expected number, received string';

/** A promise the test lets through when it decides. */
function gate(): { passed: Promise<void>; open: () => void } {
  let open!: () => void;
  const passed = new Promise<void>((resolve) => (open = resolve));
  return { passed, open };
}

/** Waits until `check` passes, polling: workers run in their own time. */
function eventually<T>(check: () => Promise<T> | T, timeout = 10_000): Promise<T> {
  return vi.waitFor(check, { timeout, interval: 20 });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Runs the inbox contract against `subject`'s inboxes.
 *
 * @example
 * ```ts
 * describeInboxContract({
 *   factory: 'memoryInbox',
 *   newInbox: (options) => memoryInbox({ backoffMs: 5, ...options }),
 *   newStore: () => memoryStore(),
 *   jobId: (key) => key,
 *   inspectable: false,
 *   cleanup: async () => {},
 * });
 * ```
 */
export function describeInboxContract(subject: InboxUnderTest): void {
  describe(`${subject.factory}: the inbox contract`, () => inboxContract(subject));
}

function inboxContract(subject: InboxUnderTest): void {
  const { factory } = subject;
  /** What each test opened, closed after it (last first) whatever happened. */
  const cleanups: (() => Promise<unknown>)[] = [];

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
    await subject.cleanup();
  });

  function newReceiver(inbox: ManagedInbox, options: Partial<ReceiverOptions> = {}) {
    const errors: SchoolhooksError[] = [];
    const receiver = createReceiver({
      secret: SECRET,
      store: subject.newStore(),
      inbox,
      logger: false,
      ...options,
    });
    receiver.onError((error) => {
      errors.push(error);
    });
    return { receiver, errors };
  }

  function work(inbox: ManagedInbox, receiver: Receiver, concurrency = 1): InboxWorker {
    const worker = inbox.work(receiver, { ...subject.workOptions, concurrency });
    cleanups.push(() => worker.close());
    return worker;
  }

  /**
   * The receiver behind node:http on a loopback port; resolves to a poster of deliveries, to `/`
   * or to the route of a tenant (`/t/<tenant>`, which the adapter's `tenant` option reads).
   */
  async function serve(receiver: Receiver) {
    const server = createServer(nodeListener(receiver, { tenant: tenantOfRequest }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    return async (
      delivery: { body: string | Buffer<ArrayBuffer>; headers: Delivery['headers'] },
      tenant?: string,
    ) => {
      const response = await fetch(tenant === undefined ? url : url + tenantPath(tenant), {
        method: 'POST',
        headers: delivery.headers,
        body: delivery.body,
      });
      return {
        status: response.status,
        body: (await response.json()) as Record<string, unknown>,
      };
    };
  }

  /** The jobs in `state`, once there are `count` of them. */
  function jobsOnce(inbox: ManagedInbox, state: InboxJob['state'], count: number) {
    return eventually(async () => {
      const jobs = await inbox.jobs({ state });
      expect(jobs).toHaveLength(count);
      return jobs;
    });
  }

  /** `inbox` with its `getJob` and `retryJob`, required of an inspectable inbox. */
  function inspected(inbox: ManagedInbox): InspectableInbox | undefined {
    if (!subject.inspectable) return undefined;
    expect(inbox).toHaveProperty('getJob', expect.any(Function));
    expect(inbox).toHaveProperty('retryJob', expect.any(Function));
    return inbox as InspectableInbox;
  }

  describe('options', () => {
    it('takes 1 run and 0 ms, and refuses runs and durations it cannot work with', () => {
      expect(() =>
        subject.newInbox({ attempts: 1, backoffMs: 0, keepCompletedMs: 0 }),
      ).not.toThrow();
      for (const attempts of [0, -1, 1.5, Number.NaN]) {
        expect(() => subject.newInbox({ attempts }), String(attempts)).toThrow(
          new ConfigError(`${factory}: attempts must be a positive integer`),
        );
      }
      for (const backoffMs of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
        expect(() => subject.newInbox({ backoffMs }), String(backoffMs)).toThrow(
          new ConfigError(`${factory}: backoffMs must be a number of ms, 0 or more`),
        );
      }
      expect(() => subject.newInbox({ keepCompletedMs: -1 })).toThrow(
        new ConfigError(`${factory}: keepCompletedMs must be a number of ms, 0 or more`),
      );
    });

    it('refuses a worker with a concurrency it cannot work with, and any worker once closed', async () => {
      const inbox = subject.newInbox();
      const { receiver } = newReceiver(inbox);
      for (const concurrency of [0, 1.5, -1]) {
        const refused = new ConfigError(`${factory}: concurrency must be a positive integer`);
        expect(() => inbox.work(receiver, { concurrency }), String(concurrency)).toThrow(refused);
      }
      await inbox.close();
      expect(() => inbox.work(receiver)).toThrow(
        new ConfigError(`${factory}: the inbox is closed`),
      );
    });

    it('rejects enqueue once closed with an InboxUnavailableError, and answers 503 for it', async () => {
      // One closed before it was ever used, one closed once running.
      const unused = subject.newInbox();
      await unused.close();
      const inbox = subject.newInbox();
      await inbox.jobs();
      await inbox.close();
      for (const closed of [unused, inbox]) {
        const failure = await failureOf(closed.enqueue(storedOf(createTestDelivery())));
        expect(failure).toBeInstanceOf(InboxUnavailableError);
        expect(failure).toMatchObject({
          code: 'inbox_unavailable',
          message: 'the inbox is closed',
        });
      }
      const { receiver, errors } = newReceiver(inbox);
      const post = await serve(receiver);
      const delivery = createTestDelivery();
      expect(await post(delivery)).toEqual({
        status: 503,
        body: { ok: false, outcome: 'inbox_unavailable', idempotencyKey: delivery.idempotencyKey },
      });
      expect(errors.map((error) => error.code)).toEqual(['inbox_unavailable']);
    });
  });

  describe('the HTTP side', () => {
    it('answers 202 before any worker runs, a worker started later processes it once, a repeat is 200 duplicate', async () => {
      const inbox = subject.newInbox();
      const { receiver } = newReceiver(inbox);
      const effects: string[] = [];
      receiver.on('UserSignedIn', (event, ctx) => {
        effects.push(`${event.idempotencyKey}@${ctx.attempt}`);
      });
      const post = await serve(receiver);
      const delivery = createTestDelivery('UserSignedIn', { user: { id: 1 } });
      const key = delivery.idempotencyKey;
      const id = subject.jobId(key);

      expect(await post(delivery)).toEqual({
        status: 202,
        body: { ok: true, outcome: 'queued', idempotencyKey: key },
      });
      expect(await inbox.jobs()).toMatchObject([
        { id, event: 'UserSignedIn', idempotencyKey: key, state: 'waiting', attemptsMade: 0 },
      ]);
      expect(await post(delivery)).toMatchObject({ status: 200, body: { outcome: 'duplicate' } });
      expect(effects).toEqual([]);

      work(inbox, receiver, 2);
      await jobsOnce(inbox, 'completed', 1);
      expect(effects).toEqual([`${key}@1`]);
      expect(await inbox.jobs()).toMatchObject([{ id, state: 'completed', attemptsMade: 1 }]);
      const shown = await inspected(inbox)?.getJob(key);
      if (subject.inspectable) {
        expect(shown).toMatchObject({
          id,
          state: 'completed',
          outcome: 'processed',
          attemptsMade: 1,
          finishedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        });
      }
      // Still a duplicate once processed; nothing more is stored or run.
      expect((await post(delivery)).body['outcome']).toBe('duplicate');
      expect(await inbox.jobs()).toHaveLength(1);
      expect(effects).toHaveLength(1);
    });

    it('keeps one job, the first copy, however often one key is enqueued, and never lists the body or signature', async () => {
      const inbox = subject.newInbox();
      const stored: StoredDelivery = {
        ...storedOf(createTestDelivery()),
        idempotencyKey: `order:${randomUUID()}`,
        receivedAt: '2026-01-01T00:00:00.000Z',
      };
      await Promise.all([inbox.enqueue(stored), inbox.enqueue(stored), inbox.enqueue(stored)]);
      await inbox.enqueue({ ...stored, receivedAt: '2026-01-01T00:00:05.000Z' });
      const jobs = await inbox.jobs();
      expect(jobs).toEqual([
        {
          id: subject.jobId(stored.idempotencyKey),
          event: 'UserSignedIn',
          idempotencyKey: stored.idempotencyKey,
          state: 'waiting',
          attemptsMade: 0,
          receivedAt: '2026-01-01T00:00:00.000Z',
        },
      ]);
      const shown = inspected(inbox);
      if (shown) {
        // Found by its id or by its key; an unknown key is no job.
        expect(await shown.getJob(stored.idempotencyKey)).toMatchObject({ state: 'waiting' });
        expect(await shown.getJob(jobs[0]!.id)).toMatchObject({ state: 'waiting' });
        expect(await shown.getJob('no-such-key')).toBeUndefined();
        expect(await shown.getJob(randomUUID())).toBeUndefined();
        jobs.push((await shown.getJob(jobs[0]!.id))!);
      }
      expect(JSON.stringify(jobs)).not.toContain(stored.signature);
      expect(JSON.stringify(jobs)).not.toContain('"body"');
    });

    it('finds and replays by its key a job whose key starts with "~", and lists that key as sent', async () => {
      const inbox = subject.newInbox({ attempts: 1 });
      const { receiver } = newReceiver(inbox);
      let failing = true;
      receiver.on('UserSignedIn', () => {
        if (failing) throw new Error('CRM is down');
      });
      const post = await serve(receiver);
      const key = `~${randomUUID()}`;
      const delivery = createTestDelivery(
        'UserSignedIn',
        { user: { id: 1 } },
        { idempotencyKey: key },
      );
      expect((await post(delivery)).status).toBe(202);
      work(inbox, receiver);
      const [dead] = await jobsOnce(inbox, 'failed', 1);
      expect(dead).toMatchObject({ idempotencyKey: key });
      expect(dead).not.toHaveProperty('tenant');
      failing = false;
      const shown = inspected(inbox);
      if (shown) {
        expect(await shown.getJob(key)).toMatchObject({ id: dead!.id, state: 'failed' });
        expect(await shown.retryJob(key)).toBe(true);
      } else {
        expect(await inbox.retryFailed()).toBe(1);
      }
      await jobsOnce(inbox, 'completed', 1);
    });

    it('lists jobs oldest first', async () => {
      const inbox = subject.newInbox();
      const keys = [createTestDelivery(), createTestDelivery(), createTestDelivery()].map(
        (delivery) => delivery.idempotencyKey,
      );
      for (const key of keys) {
        await inbox.enqueue(
          storedOf(createTestDelivery('UserSignedIn', {}, { idempotencyKey: key })),
        );
      }
      expect((await inbox.jobs()).map((job) => job.idempotencyKey)).toEqual(keys);
      expect((await inbox.jobs({ state: 'waiting' })).map((job) => job.idempotencyKey)).toEqual(
        keys,
      );
    });

    it('keeps an invalid payload instead of refusing it: validation waits for the worker', async () => {
      const inbox = subject.newInbox();
      const { receiver } = newReceiver(inbox);
      const post = await serve(receiver);
      const delivery = createTestDelivery('UserSignedUp', { user: 'not an object' });
      expect((await post(delivery)).status).toBe(202);
      expect(await inbox.jobs()).toMatchObject([{ idempotencyKey: delivery.idempotencyKey }]);
    });

    it('still refuses what never verifies or parses, stale events and bodies that are not UTF-8, before storing anything', async () => {
      const inbox = subject.newInbox();
      const { receiver } = newReceiver(inbox);
      const post = await serve(receiver);
      const delivery = createTestDelivery();
      const wrong = { body: delivery.body, headers: signedHeaders(delivery.body, 'x'.repeat(64)) };
      expect(await post(wrong)).toMatchObject({
        status: 401,
        body: { outcome: 'invalid_signature' },
      });
      const cut = '{"event":';
      expect(await post({ body: cut, headers: signedHeaders(cut) })).toMatchObject({
        status: 400,
        body: { outcome: 'malformed' },
      });
      const old = createTestDelivery('UserSignedIn', {}, { timestamp: '2001-01-01T00:00:00Z' });
      expect((await post(old)).body['outcome']).toBe('stale');
      // A lone byte that is not UTF-8, inside a string: text could not give the bytes back.
      const text = createTestDelivery('UserSignedIn', { name: 'X' }).body;
      const bytes = Buffer.from(text);
      bytes[bytes.indexOf('X')] = 0xff;
      expect(await post({ body: bytes, headers: signedHeaders(bytes) })).toMatchObject({
        status: 400,
        body: { outcome: 'malformed' },
      });
      expect(await inbox.jobs()).toEqual([]);
    });

    it('still runs a delivery stored as base64 (as earlier versions stored some)', async () => {
      const inbox = subject.newInbox();
      const { receiver } = newReceiver(inbox);
      const runs: string[] = [];
      receiver.on('UserSignedIn', (event) => void runs.push(event.idempotencyKey));
      const delivery = createTestDelivery();
      await inbox.enqueue({
        ...storedOf(delivery),
        body: Buffer.from(delivery.body).toString('base64'),
        encoding: 'base64',
      });
      work(inbox, receiver);
      await jobsOnce(inbox, 'completed', 1);
      expect(runs).toEqual([delivery.idempotencyKey]);
    });
  });

  describe('the worker side', () => {
    it('retries a failing handler by the retry policy: it succeeds on attempt 3, its effect once, the reason cleared', async () => {
      const inbox = subject.newInbox({ backoffMs: 300 });
      const { receiver, errors } = newReceiver(inbox);
      const effects: string[] = [];
      const runs: { attempt: number; at: number }[] = [];
      receiver.on('UserSignedIn', (event, ctx) => {
        runs.push({ attempt: ctx.attempt, at: performance.now() });
        if (ctx.attempt < 3) throw new Error(`CRM is down (attempt ${ctx.attempt})`);
        effects.push(event.idempotencyKey);
      });
      const post = await serve(receiver);
      const delivery = createTestDelivery();
      expect((await post(delivery)).status).toBe(202);
      work(inbox, receiver);
      const [completed] = await jobsOnce(inbox, 'completed', 1);
      expect(runs.map((run) => run.attempt)).toEqual([1, 2, 3]);
      // 300 ms after the first failure, 600 ms after the second: the delay doubles.
      expect(runs[1]!.at - runs[0]!.at).toBeGreaterThanOrEqual(290);
      expect(runs[2]!.at - runs[1]!.at).toBeGreaterThanOrEqual(590);
      expect(effects).toEqual([delivery.idempotencyKey]);
      expect(completed).toMatchObject({ state: 'completed', attemptsMade: 3 });
      // Completed: the reason of the failed runs before it no longer shows.
      expect(completed).not.toHaveProperty('reason');
      const shown = await inspected(inbox)?.getJob(delivery.idempotencyKey);
      if (subject.inspectable) expect(shown).not.toHaveProperty('reason');
      expect(errors.filter((error) => error.code === 'handler_failed')).toHaveLength(2);
    });

    it('shows a retried job as delayed with its reason, dead-letters it after `attempts`, and replays it from attempt 1', async () => {
      const inbox = subject.newInbox({ attempts: 3, backoffMs: 500 });
      const { receiver } = newReceiver(inbox);
      const attempts: number[] = [];
      receiver.on('UserSignedIn', (_event, ctx) => {
        attempts.push(ctx.attempt);
        throw new Error('CRM is down');
      });
      const post = await serve(receiver);
      const delivery = createTestDelivery();
      await post(delivery);
      work(inbox, receiver);
      // (Half a second before its second run, so a poll under load still sees the first wait.)
      const [delayed] = await jobsOnce(inbox, 'delayed', 1);
      expect(delayed).toMatchObject({ attemptsMade: 1, reason: 'handler_failed: CRM is down' });
      const [dead] = await jobsOnce(inbox, 'failed', 1);
      expect(dead).toMatchObject({
        idempotencyKey: delivery.idempotencyKey,
        attemptsMade: 3,
        reason: 'handler_failed: CRM is down',
      });
      expect(attempts).toEqual([1, 2, 3]);
      expect(await inbox.jobs({ state: 'waiting' })).toEqual([]);
      // One dead letter back, with all its attempts again.
      const shown = inspected(inbox);
      if (shown) {
        expect(await shown.retryJob(delivery.idempotencyKey)).toBe(true);
        expect(await shown.retryJob(delivery.idempotencyKey)).toBe(false);
      } else {
        expect(await inbox.retryFailed()).toBe(1);
      }
      expect(await inbox.retryFailed()).toBe(0);
      await eventually(() => expect(attempts).toEqual([1, 2, 3, 1, 2, 3]));
      await jobsOnce(inbox, 'failed', 1);
    });

    it('dead-letters at once a job whose signature no longer verifies, never running a handler', async () => {
      const inbox = subject.newInbox();
      const { receiver, errors } = newReceiver(inbox);
      const handler = vi.fn();
      receiver.on('UserSignedIn', handler);
      const stored = storedOf(createTestDelivery('UserSignedIn', { user: { id: 7 } }));
      await inbox.enqueue({ ...stored, body: stored.body.replace('"id":7', '"id":8') });
      work(inbox, receiver);
      const [dead] = await jobsOnce(inbox, 'failed', 1);
      expect(dead).toMatchObject({
        attemptsMade: 1,
        reason: expect.stringMatching(/^invalid_signature: /),
      });
      expect(handler).not.toHaveBeenCalled();
      expect(errors.map((error) => error.code)).toContain('invalid_signature');
    });

    it('dead-letters an invalid payload at once, never running a handler, and replays it after a fix', async () => {
      const inbox = subject.newInbox();
      const { receiver, errors } = newReceiver(inbox);
      const handler = vi.fn();
      receiver.on('PaymentCompleted', handler);
      const post = await serve(receiver);
      // The full fixture, with one field of a type the schema does not read.
      const delivery = fixtureDelivery('PaymentCompleted', (data) => {
        const payment = data['payment'] as { invoice: Record<string, unknown> };
        payment.invoice['totalAmount'] = '4990.00';
      });
      expect((await post(delivery)).status).toBe(202);
      const worker = work(inbox, receiver);
      const [dead] = await jobsOnce(inbox, 'failed', 1);
      expect(dead).toMatchObject({ idempotencyKey: delivery.idempotencyKey, attemptsMade: 1 });
      expect(dead?.reason).toBe(INVALID_TOTAL_AMOUNT);
      expect(handler).not.toHaveBeenCalled();
      expect(errors.find((error) => error.code === 'invalid_payload')).toBeInstanceOf(
        PayloadValidationError,
      );
      await worker.close();

      // The fix: a receiver whose schema reads this payload, as an upgrade would bring.
      const lenient = paymentCompletedDataSchema.extend({
        payment: paymentCompletedDataSchema.shape.payment.extend({
          invoice: paymentCompletedDataSchema.shape.payment.shape.invoice.extend({
            totalAmount: z.union([z.number(), z.string()]),
          }),
        }),
      });
      const { receiver: fixed } = newReceiver(inbox, { schemas: { PaymentCompleted: lenient } });
      const effects: string[] = [];
      fixed.on('PaymentCompleted', (event) => {
        effects.push(event.idempotencyKey);
      });
      work(inbox, fixed);
      expect(await inbox.retryFailed({ event: 'UserSignedIn' })).toBe(0);
      expect(await inbox.retryFailed({ event: 'PaymentCompleted' })).toBe(1);
      const [completed] = await jobsOnce(inbox, 'completed', 1);
      expect(completed).toMatchObject({ idempotencyKey: delivery.idempotencyKey, attemptsMade: 1 });
      expect(effects).toEqual([delivery.idempotencyKey]);
      expect(await inbox.retryFailed()).toBe(0);
      expect(handler).not.toHaveBeenCalled();
    });

    it('keeps a dead letter’s reason on one line, with no secret of ours in it', async () => {
      const inbox = subject.newInbox({ attempts: 1 });
      const { receiver } = newReceiver(inbox);
      receiver.on('UserSignedIn', () => {
        throw new Error(`CRM refused\nkey ${SECRET}`);
      });
      await inbox.enqueue(storedOf(createTestDelivery()));
      work(inbox, receiver);
      const [dead] = await jobsOnce(inbox, 'failed', 1);
      expect(dead?.reason).toBe('handler_failed: CRM refused key [hidden]');
      expect(JSON.stringify(await inbox.jobs())).not.toContain(SECRET);
    });

    it('retryFailed() without an event puts back every dead letter, whatever its event', async () => {
      const inbox = subject.newInbox({ attempts: 1 });
      const { receiver } = newReceiver(inbox);
      const fail = () => {
        throw new Error('CRM is down');
      };
      receiver.on('UserSignedIn', fail);
      receiver.on('PaymentCompleted', fail);
      await inbox.enqueue(storedOf(createTestDelivery('UserSignedIn')));
      await inbox.enqueue(storedOf(fixtureDelivery('PaymentCompleted'), 'PaymentCompleted'));
      const worker = work(inbox, receiver);
      await jobsOnce(inbox, 'failed', 2);
      await worker.close();

      expect(await inbox.retryFailed()).toBe(2);
      const waiting = await inbox.jobs({ state: 'waiting' });
      expect(waiting.map((job) => job.event).sort()).toEqual(['PaymentCompleted', 'UserSignedIn']);
      expect(waiting.map((job) => job.attemptsMade)).toEqual([0, 0]);
      expect(await inbox.retryFailed()).toBe(0);
    });

    it.each([1, 2])(
      'runs up to `concurrency` (%i) jobs at once per worker, and no more',
      async (concurrency) => {
        const inbox = subject.newInbox();
        const { receiver } = newReceiver(inbox);
        const release = gate();
        let running = 0;
        let most = 0;
        receiver.on('UserSignedIn', async () => {
          running++;
          most = Math.max(most, running);
          await release.passed;
          running--;
        });
        for (let i = 0; i < 3; i++) await inbox.enqueue(storedOf(createTestDelivery()));
        work(inbox, receiver, concurrency);
        await eventually(() => expect(running).toBe(concurrency));
        await sleep(100);
        expect(running).toBe(concurrency);
        expect(await inbox.jobs({ state: 'active' })).toHaveLength(concurrency);
        release.open();
        await jobsOnce(inbox, 'completed', 3);
        expect(most).toBe(concurrency);
      },
    );

    it('closes a worker gracefully: the run in progress finishes and completes, nothing new starts', async () => {
      const inbox = subject.newInbox();
      const { receiver } = newReceiver(inbox);
      const release = gate();
      const started: string[] = [];
      const finished: string[] = [];
      receiver.on('UserSignedIn', async (event) => {
        started.push(event.idempotencyKey);
        await release.passed;
        finished.push(event.idempotencyKey);
      });
      const first = storedOf(createTestDelivery());
      await inbox.enqueue(first);
      const worker = work(inbox, receiver);
      await eventually(() => expect(started).toHaveLength(1));
      const second = storedOf(createTestDelivery());
      await inbox.enqueue(second);
      let closed = false;
      const closing = worker.close().then(() => (closed = true));
      await sleep(100);
      // close() waits for the run in progress.
      expect(closed).toBe(false);
      release.open();
      await closing;
      expect(finished).toEqual([first.idempotencyKey]);
      expect(started).toEqual([first.idempotencyKey]);
      expect(await inbox.jobs({ state: 'completed' })).toMatchObject([
        { idempotencyKey: first.idempotencyKey },
      ]);
      expect(await inbox.jobs({ state: 'waiting' })).toMatchObject([
        { idempotencyKey: second.idempotencyKey },
      ]);
    });

    it('runs each job in a schoolhooks.job span linked to the delivery that stored it', async () => {
      const exporter = new InMemorySpanExporter();
      const tracerProvider = new BasicTracerProvider({
        spanProcessors: [new SimpleSpanProcessor(exporter)],
      });
      const inbox = subject.newInbox({ backoffMs: 1 });
      const { receiver } = newReceiver(inbox, { telemetry: openTelemetry({ tracerProvider }) });
      receiver.on('UserSignedIn', (_event, ctx) => {
        if (ctx.attempt === 1) throw new Error('database down');
      });
      const post = await serve(receiver);
      const delivery = createTestDelivery();
      expect((await post(delivery)).status).toBe(202);
      work(inbox, receiver);
      await jobsOnce(inbox, 'completed', 1);

      const spans = exporter.getFinishedSpans();
      const stored = spans.find((span) => span.name === 'schoolhooks.delivery')!.spanContext();
      const jobs = spans.filter((span) => span.name === 'schoolhooks.job');
      expect(jobs).toHaveLength(2);
      for (const [index, job] of jobs.entries()) {
        const attempt = index + 1;
        expect(job.kind).toBe(SpanKind.CONSUMER);
        // A trace of its own (it may run hours later), linked to the delivery's span.
        expect(job.spanContext().traceId).not.toBe(stored.traceId);
        expect(job.links.map((link) => link.context)).toMatchObject([
          { traceId: stored.traceId, spanId: stored.spanId },
        ]);
        expect(job.status.code).toBe(attempt === 1 ? SpanStatusCode.ERROR : SpanStatusCode.UNSET);
        expect(job.attributes).toMatchObject({
          'schoolhooks.attempt': attempt,
          'schoolhooks.event': 'UserSignedIn',
          'schoolhooks.idempotency_key': delivery.idempotencyKey,
          'schoolhooks.outcome': attempt === 1 ? 'handler_failed' : 'processed',
        });
      }
    });
  });

  describe('tenants: many schools on one endpoint', () => {
    /** A receiver whose secret lookup answers what `secrets` holds for each tenant now. */
    function tenantReceiver(
      inbox: ManagedInbox,
      secrets: ReadonlyMap<string, string | readonly string[]>,
      options: Partial<ReceiverOptions> = {},
    ) {
      return newReceiver(inbox, { secret: lookupIn(secrets), ...options });
    }

    /** Each run of a handler: the tenant the worker gave it, the key, the attempt. */
    function recordRuns(receiver: Receiver): string[] {
      const runs: string[] = [];
      receiver.on('UserSignedIn', (event, ctx) => {
        runs.push(`${ctx.tenant}|${event.idempotencyKey}@${ctx.attempt}`);
      });
      return runs;
    }

    const queued = (key: string) => ({
      status: 202,
      body: { ok: true, outcome: 'queued', idempotencyKey: key },
    });
    const duplicate = { status: 200, body: expect.objectContaining({ outcome: 'duplicate' }) };

    it('keeps one idempotencyKey of two tenants as two jobs, each listed with its tenant and run once with it as ctx.tenant; each resend is a duplicate', async () => {
      const inbox = subject.newInbox();
      const secrets = tenantSecrets(['school-a', 'school-b']);
      const { receiver } = tenantReceiver(inbox, secrets);
      const runs = recordRuns(receiver);
      const post = await serve(receiver);
      const key = randomUUID();
      const timestamp = new Date().toISOString();
      const a = tenantDelivery(key, timestamp, tenantSecret('school-a'));
      const b = tenantDelivery(key, timestamp, tenantSecret('school-b'));

      expect(await post(a, 'school-a')).toEqual(queued(key));
      expect(await post(b, 'school-b')).toEqual(queued(key));
      expect(await post(a, 'school-a')).toEqual(duplicate);
      expect(await post(b, 'school-b')).toEqual(duplicate);
      // Each tenant's delivery verifies with its own secret only.
      expect(await post(b, 'school-a')).toMatchObject({
        status: 401,
        body: { outcome: 'invalid_signature' },
      });
      const jobs = await inbox.jobs();
      expect(jobs).toMatchObject([
        { event: 'UserSignedIn', idempotencyKey: key, tenant: 'school-a', state: 'waiting' },
        { event: 'UserSignedIn', idempotencyKey: key, tenant: 'school-b', state: 'waiting' },
      ]);
      expect(new Set(jobs.map((job) => job.id)).size).toBe(2);
      // Neither is the job an untenanted delivery of the key would be.
      expect(jobs.map((job) => job.id)).not.toContain(subject.jobId(key));
      const shown = inspected(inbox);
      if (shown) {
        for (const job of jobs) {
          expect(await shown.getJob(job.id)).toMatchObject({
            tenant: job.tenant,
            state: 'waiting',
          });
          const byKey = await shown.getJob(key, { tenant: job.tenant! });
          expect(byKey).toMatchObject({ id: job.id, tenant: job.tenant });
        }
        expect(await shown.getJob(key)).toBeUndefined();
        expect(await shown.getJob(key, { tenant: 'school-c' })).toBeUndefined();
      }
      expect(runs).toEqual([]);

      work(inbox, receiver, 2);
      await jobsOnce(inbox, 'completed', 2);
      await sleep(100);
      expect(runs.sort()).toEqual([`school-a|${key}@1`, `school-b|${key}@1`]);
      expect(await post(a, 'school-a')).toEqual(duplicate);
      expect(await post(b, 'school-b')).toEqual(duplicate);
      expect(await inbox.jobs()).toHaveLength(2);
    });

    it('runs one job for two deliveries of one key under one tenant (two of its endpoints, each with its secret)', async () => {
      const inbox = subject.newInbox();
      const endpoints = [tenantSecret('school-a', 1), tenantSecret('school-a', 2)];
      const { receiver } = tenantReceiver(inbox, new Map([['school-a', endpoints]]));
      const runs = recordRuns(receiver);
      const post = await serve(receiver);
      const key = randomUUID();
      const timestamp = new Date().toISOString();
      const [first, second] = endpoints.map((secret) => tenantDelivery(key, timestamp, secret));

      // At once, as the platform fans out: one is stored, the other is a duplicate or, while
      // the first is being stored, 409 in_flight (which the platform retries).
      const answers = await Promise.all([post(first!, 'school-a'), post(second!, 'school-a')]);
      expect(answers.filter((answer) => answer.status === 202)).toEqual([queued(key)]);
      expect(answers.filter((answer) => answer.status !== 202)).toEqual([
        expect.objectContaining({
          body: expect.objectContaining({
            outcome: expect.stringMatching(/^(duplicate|in_flight)$/),
          }),
        }),
      ]);
      expect(await post(first!, 'school-a')).toEqual(duplicate);
      expect(await post(second!, 'school-a')).toEqual(duplicate);
      // Stored again by a process with a store of its own: the inbox still keeps one job.
      await inbox.enqueue({ ...storedOf(second!), tenant: 'school-a' });
      const jobs = await inbox.jobs();
      expect(jobs).toMatchObject([{ idempotencyKey: key, tenant: 'school-a' }]);
      expect(jobs).toHaveLength(1);

      work(inbox, receiver, 2);
      await jobsOnce(inbox, 'completed', 1);
      await sleep(100);
      expect(runs).toEqual([`school-a|${key}@1`]);
    });

    it('verifies a stored job with its tenant’s secrets: signed with another tenant’s, a dead letter never run; its tenant’s secret gone, retried and not run until it is back', async () => {
      const inbox = subject.newInbox({ backoffMs: 100 });
      // The worker's receiver asks the lookup again within 50 ms, as after a rotation.
      const secrets = tenantSecrets(['school-a', 'school-b', 'school-c']);
      const { receiver, errors } = tenantReceiver(inbox, secrets, { secretCacheMs: 50 });
      const runs = recordRuns(receiver);
      const forged = tenantDelivery(
        randomUUID(),
        new Date().toISOString(),
        tenantSecret('school-b'),
      );
      const rotated = tenantDelivery(
        randomUUID(),
        new Date().toISOString(),
        tenantSecret('school-c'),
      );
      await inbox.enqueue({ ...storedOf(forged), tenant: 'school-a' });
      await inbox.enqueue({ ...storedOf(rotated), tenant: 'school-c' });
      // School C's secret is rotated away: its lookup now gives none.
      secrets.delete('school-c');
      work(inbox, receiver);

      const [dead] = await jobsOnce(inbox, 'failed', 1);
      expect(dead).toMatchObject({
        idempotencyKey: forged.idempotencyKey,
        tenant: 'school-a',
        attemptsMade: 1,
        reason: expect.stringMatching(/^invalid_signature: /),
      });
      const waiting = await eventually(async () => {
        const job = (await inbox.jobs()).find((one) => one.tenant === 'school-c');
        expect(job).toMatchObject({
          idempotencyKey: rotated.idempotencyKey,
          reason: expect.stringMatching(/^unknown_tenant: /),
        });
        expect(job!.attemptsMade).toBeGreaterThanOrEqual(1);
        return job!;
      });
      expect(waiting.state).not.toBe('failed');
      expect(runs).toEqual([]);
      expect(errors.map((error) => error.code)).toEqual(
        expect.arrayContaining(['invalid_signature', 'unknown_tenant']),
      );

      // Its secret back: the next retry runs it, once, as school C's.
      secrets.set('school-c', tenantSecret('school-c'));
      const [completed] = await jobsOnce(inbox, 'completed', 1);
      expect(completed).toMatchObject({
        tenant: 'school-c',
        idempotencyKey: rotated.idempotencyKey,
      });
      expect(runs).toHaveLength(1);
      expect(runs[0]).toMatch(new RegExp(`^school-c\\|${rotated.idempotencyKey}@([2-9]|10)$`));
      expect(await inbox.jobs({ state: 'failed' })).toMatchObject([{ tenant: 'school-a' }]);
    });

    it('keeps tenants with unusual names apart, and gives each back exactly to the worker', async () => {
      const inbox = subject.newInbox();
      const secrets = tenantSecrets(UNUSUAL_TENANTS);
      const { receiver } = tenantReceiver(inbox, secrets);
      const tenantsRun: (string | undefined)[] = [];
      receiver.on('UserSignedIn', (_event, ctx) => void tenantsRun.push(ctx.tenant));
      const post = await serve(receiver);
      const key = randomUUID();
      const timestamp = new Date().toISOString();
      const deliveries = UNUSUAL_TENANTS.map((tenant) =>
        tenantDelivery(key, timestamp, tenantSecret(tenant)),
      );
      for (const [i, tenant] of UNUSUAL_TENANTS.entries()) {
        expect(await post(deliveries[i]!, tenant), tenant).toEqual(queued(key));
      }
      for (const [i, tenant] of UNUSUAL_TENANTS.entries()) {
        expect(await post(deliveries[i]!, tenant), tenant).toEqual(duplicate);
      }
      const jobs = await inbox.jobs();
      expect(jobs.map((job) => job.tenant)).toEqual(UNUSUAL_TENANTS);
      expect(new Set(jobs.map((job) => job.id)).size).toBe(UNUSUAL_TENANTS.length);
      const shown = inspected(inbox);
      if (shown) {
        for (const job of jobs) {
          expect((await shown.getJob(job.id))?.tenant).toBe(job.tenant);
          expect((await shown.getJob(key, { tenant: job.tenant! }))?.id).toBe(job.id);
        }
      }

      work(inbox, receiver, 4);
      await jobsOnce(inbox, 'completed', UNUSUAL_TENANTS.length);
      await sleep(100);
      expect(tenantsRun.sort()).toEqual([...UNUSUAL_TENANTS].sort());
    });

    it('never takes a tenant’s delivery of a key for a delivery without a tenant whose key looks like the tenant’s', async () => {
      // One secret for every route: the route alone tells the two deliveries apart.
      const inbox = subject.newInbox();
      const { receiver } = newReceiver(inbox);
      const runs = recordRuns(receiver);
      const post = await serve(receiver);
      const key = randomUUID();
      const lookalike = `~["tenant","school-a","${key}"]`;
      const ofTenant = createTestDelivery(
        'UserSignedIn',
        { user: { id: 1 } },
        { idempotencyKey: key },
      );
      const plain = createTestDelivery(
        'UserSignedIn',
        { user: { id: 1 } },
        { idempotencyKey: lookalike },
      );
      expect(await post(ofTenant, 'school-a')).toEqual(queued(key));
      expect(await post(plain)).toEqual(queued(lookalike));
      expect(await post(ofTenant, 'school-a')).toEqual(duplicate);
      expect(await post(plain)).toEqual(duplicate);
      const jobs = await inbox.jobs();
      expect(jobs).toMatchObject([
        { idempotencyKey: key, tenant: 'school-a' },
        { idempotencyKey: lookalike },
      ]);
      expect(jobs[1]).not.toHaveProperty('tenant');
      expect(new Set(jobs.map((job) => job.id)).size).toBe(2);
      work(inbox, receiver, 2);
      await jobsOnce(inbox, 'completed', 2);
      await sleep(100);
      expect(runs.sort()).toEqual([`school-a|${key}@1`, `undefined|${lookalike}@1`].sort());
    });

    it('replays one tenant’s dead letter by its key and tenant, leaving the other tenant’s', async () => {
      const inbox = subject.newInbox({ attempts: 1 });
      const { receiver } = tenantReceiver(inbox, tenantSecrets(['school-a', 'school-b']));
      const runs = recordRuns(receiver);
      let failing = true;
      receiver.on('UserSignedIn', () => {
        if (failing) throw new Error('CRM is down');
      });
      const key = randomUUID();
      const timestamp = new Date().toISOString();
      for (const tenant of ['school-a', 'school-b']) {
        const delivery = tenantDelivery(key, timestamp, tenantSecret(tenant));
        await inbox.enqueue({ ...storedOf(delivery), tenant });
      }
      work(inbox, receiver);
      await jobsOnce(inbox, 'failed', 2);
      failing = false;
      const shown = inspected(inbox);
      if (shown) {
        // By the key alone it is no job: each tenant's is named with its tenant.
        expect(await shown.retryJob(key)).toBe(false);
        expect(await shown.retryJob(key, { tenant: 'school-b' })).toBe(true);
        expect(await shown.retryJob(key, { tenant: 'school-b' })).toBe(false);
        const [completed] = await jobsOnce(inbox, 'completed', 1);
        expect(completed).toMatchObject({ tenant: 'school-b' });
        expect(await inbox.jobs({ state: 'failed' })).toMatchObject([{ tenant: 'school-a' }]);
      } else {
        expect(await inbox.retryFailed()).toBe(2);
        await jobsOnce(inbox, 'completed', 2);
      }
      expect(runs.filter((run) => run.startsWith('school-b|'))).toHaveLength(2);
    });
  });
}
