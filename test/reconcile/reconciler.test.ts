/**
 * createReconciler over the mock platform's four lists (real HTTP) and memoryStore: each entity no
 * webhook handled is recovered once, under the record key the webhook about it would have taken;
 * dry runs record nothing; failures and timeouts are reported and retried by the next run; the
 * window leaves young entities to their webhooks and reaches back further for paid invoices.
 */

import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AuthenticationError, type SchoolApi } from '../../src/api/index.js';
import {
  RECORDED_BY_WEBHOOK,
  recordKeyOf,
  recordOf,
  RECOVERED_BY_RUN,
} from '../../src/keys/delivery-key.js';
import { entityOf } from '../../src/platform/entity-of.js';
import { createReceiver } from '../../src/receiving/receiver.js';
import {
  ConfigError,
  createReconciler,
  RecoveryError,
  type ReconcileContext,
  type ReconcilerOptions,
} from '../../src/reconcile/index.js';
import { memoryStore } from '../../src/stores/memory.js';
import type { IdempotencyStore } from '../../src/stores/types.js';
import type { MockInvoice } from '../../src/testing/mock-lists.js';
import type { MockSchoolApi } from '../../src/testing/mock-school-api.js';
import { configRefusal, failureOf } from '../helpers/failure-of.js';
import { heldOf, requestFor } from '../stores/contract.js';
import {
  access,
  ago,
  certificate,
  counter,
  DAY,
  HOUR,
  invoice,
  MINUTE,
  listQueries,
  NOW,
  now,
  PATHS,
  recordWebhook,
  startApi,
  user,
} from './helpers.js';

let mock: MockSchoolApi | undefined;

afterEach(async () => {
  await mock?.close();
  mock = undefined;
});

async function apiWith(lists: Parameters<typeof startApi>[0]): Promise<SchoolApi> {
  const started = await startApi(lists);
  mock = started.mock;
  return started.api;
}

function fixture(name: string): { event: string; data: Record<string, { id: number }> } {
  return JSON.parse(readFileSync(new URL(`../../fixtures/${name}.json`, import.meta.url), 'utf8'));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What `store` holds at `key` now (taking nothing). */
async function stateAt(store: IdempotencyStore, key: string) {
  const [state] = await store.peek([key]);
  return state;
}

/** The end of a run's window by default: the platform's retry span (4h 46m), and a quarter hour. */
const WINDOW_END = ago(4 * HOUR + 46 * MINUTE + 15 * MINUTE);

describe('a run', () => {
  it('recovers each entity of the four lists once, under the record its webhook would take', async () => {
    const payment = fixture('PaymentCompleted') as unknown as {
      event: string;
      data: { payment: { invoice: { id: number } } };
    };
    const enrolled = fixture('ProductEnrolledToFree');
    const issued = fixture('CertificateIssued');
    const signedUp = fixture('UserSignedUp');
    const api = await apiWith({
      invoices: [invoice(payment.data.payment.invoice.id), invoice(2)],
      productAccesses: [access(enrolled.data['access']!.id)],
      certificates: [certificate(issued.data['certificate']!.id)],
      users: [user(signedUp.data['user']!.id)],
    });
    const store = memoryStore();
    const seen: ReconcileContext[] = [];
    const reconciler = createReconciler({ api, store, now });
    const remember = (_item: unknown, ctx: ReconcileContext) => void seen.push(ctx);
    reconciler
      .on('invoice', remember)
      .on('access', remember)
      .on('certificate', remember)
      .on('user', remember);

    const report = await reconciler.run({ since: '2d' });

    expect(report).toEqual({
      window: { from: new Date(NOW - 2 * DAY).toISOString(), to: WINDOW_END },
      checked: { invoice: 2, access: 1, certificate: 1, user: 1 },
      handled: 0,
      recovered: 5,
      missing: [],
      failed: [],
      inFlight: [],
      unrecorded: [],
      complete: true,
    });
    // Each entity is the one entityOf names for the webhook about it.
    const entities = [payment, enrolled, issued, signedUp].map((event) => entityOf(event)!.key);
    expect(seen.map((ctx) => ctx.entity)).toEqual(
      expect.arrayContaining([...entities, 'invoice:2']),
    );
    expect(seen[0]).toMatchObject({
      kind: 'invoice',
      id: String(payment.data.payment.invoice.id),
      tenant: undefined,
      transaction: undefined,
    });
    expect(seen[0]!.signal.aborted).toBe(false);
    // A webhook for a recovered entity now finds its record done, marked as the run's.
    for (const event of [payment, enrolled, issued, signedUp]) {
      expect(await stateAt(store, recordOf(event, undefined)!)).toEqual({
        state: 'done',
        fingerprint: RECOVERED_BY_RUN,
      });
    }
  });

  it('recovers nothing a second time: the next run finds every entity handled', async () => {
    const api = await apiWith({ invoices: [1, 2, 3].map((id) => invoice(id)) });
    const store = memoryStore();
    const handled = counter();
    const reconciler = createReconciler({ api, store, now }).on('invoice', (item) =>
      handled.count(String(item.invoiceId)),
    );
    expect((await reconciler.run({ since: '1d' })).recovered).toBe(3);
    const again = await reconciler.run({ since: '1d' });
    expect(again).toMatchObject({ handled: 3, recovered: 0, failed: [] });
    expect([...handled.calls.values()]).toEqual([1, 1, 1]);
  });

  it('leaves alone an entity a webhook recorded; one another claim holds is in flight, never handled', async () => {
    const api = await apiWith({ invoices: [1, 2, 3].map((id) => invoice(id)) });
    const store = memoryStore();
    await recordWebhook(store, 'invoice:1');
    // A delivery's handlers still running (or a process that died with the claim): held, not done.
    heldOf(await store.claim(requestFor(recordKeyOf('invoice:2', undefined))));
    const handled = counter();
    const report = await createReconciler({ api, store, now, inFlightWaitMs: 100 })
      .on('invoice', (item) => handled.count(String(item.invoiceId)))
      .run({ since: '1d' });
    expect(report).toMatchObject({
      handled: 1,
      recovered: 1,
      inFlight: [{ kind: 'invoice', id: '2' }],
      complete: false,
    });
    expect([...handled.calls.keys()]).toEqual(['3']);
    expect(await stateAt(store, recordKeyOf('invoice:1', undefined))).toEqual({
      state: 'done',
      fingerprint: RECORDED_BY_WEBHOOK,
    });
  });

  it('waits for an entity another claim holds, and counts it once that claim settles', async () => {
    const api = await apiWith({ invoices: [invoice(1), invoice(2)] });
    const store = memoryStore();
    const webhook = heldOf(
      await store.claim(
        requestFor(recordKeyOf('invoice:1', undefined), { fingerprint: 'webhook' }),
      ),
    );
    setTimeout(() => void store.settle(webhook, 'complete'), 300);
    const ran: number[] = [];
    const report = await createReconciler({ api, store, now, inFlightWaitMs: 5_000 })
      .on('invoice', (item) => void ran.push(item.invoiceId))
      .run({ since: '1d' });
    expect(report).toMatchObject({ handled: 1, recovered: 1, inFlight: [], complete: true });
    expect(ran).toEqual([2]);
  });

  it('recovers an entity another claim held once that claim is released within the wait', async () => {
    const api = await apiWith({ invoices: [invoice(1)] });
    const store = memoryStore();
    const webhook = heldOf(await store.claim(requestFor(recordKeyOf('invoice:1', undefined))));
    setTimeout(() => void store.settle(webhook, 'release'), 300);
    const report = await createReconciler({ api, store, now, inFlightWaitMs: 5_000 })
      .on('invoice', () => {})
      .run({ since: '1d' });
    expect(report).toMatchObject({ handled: 0, recovered: 1, inFlight: [], complete: true });
  });

  it('takes the receiver’s store, and refuses a receiver whose webhooks record nothing', async () => {
    const api = await apiWith({ users: [user(8), user(9)] });
    const store = memoryStore();
    await recordWebhook(store, 'user:8');
    const receiver = createReceiver({ secret: 'a-secret', store });
    const report = await createReconciler({ api, receiver, now })
      .on('user', () => {})
      .run({ since: '1d' });
    expect(report).toMatchObject({ handled: 1, recovered: 1 });
    expect(await stateAt(store, recordKeyOf('user:9', undefined))).toMatchObject({ state: 'done' });
    const silent = createReceiver({ secret: 'a-secret', store, recordEntities: false });
    expect(() => createReconciler({ api, receiver: silent })).toThrow(/recordEntities: false/);
    expect(() => createReconciler({ api, receiver: silent, store })).toThrow(ConfigError);
  });

  it('scopes records to its tenant: another school’s webhook leaves this one’s entity missing', async () => {
    const api = await apiWith({ invoices: [invoice(1), invoice(2)] });
    const store = memoryStore();
    await recordWebhook(store, 'invoice:1', 'school-a');
    await recordWebhook(store, 'invoice:2', 'school-b');
    const tenants: (string | undefined)[] = [];
    const report = await createReconciler({ api, store, now, tenant: 'school-a' })
      .on('invoice', (_item, ctx) => void tenants.push(ctx.tenant))
      .run({ since: '1d' });
    expect(report).toMatchObject({ handled: 1, recovered: 1 });
    expect(tenants).toEqual(['school-a']);
    expect(await stateAt(store, recordKeyOf('invoice:2', 'school-a'))).toMatchObject({
      state: 'done',
    });
  });

  it('reads every item by narrowing the window until a page holds it, never by offset', async () => {
    const api = await apiWith({
      users: [1, 2, 3, 4, 5].map((id) => user(id, ago(10 * HOUR + id * MINUTE))),
    });
    const ids: number[] = [];
    const report = await createReconciler({ api, store: memoryStore(), now, take: 2 })
      .on('user', (item) => void ids.push(item.id))
      .run({ since: '1d' });
    expect(report.recovered).toBe(5);
    expect(ids.sort()).toEqual([1, 2, 3, 4, 5]);
    const queries = listQueries(mock!, PATHS.user);
    expect(queries.map((query) => query.get('skip'))).toEqual(queries.map(() => '0'));
    // The first asks for the whole window; each later one for a part of it.
    expect(queries[0]!.get('createdAtDateRange[from]')).toBe(ago(DAY));
    for (const query of queries.slice(1)) {
      const from = Date.parse(query.get('createdAtDateRange[from]')!);
      const to = Date.parse(query.get('createdAtDateRange[to]')!);
      expect(to - from).toBeLessThan(DAY);
    }
  });
});

describe('a dry run', () => {
  it('lists what is missing and records nothing', async () => {
    const api = await apiWith({ invoices: [1, 2].map((id) => invoice(id)), users: [user(9)] });
    const store = memoryStore();
    await recordWebhook(store, 'invoice:1');
    let ran = 0;
    const reconciler = createReconciler({ api, store, now }).on('invoice', () => void ran++);
    const dry = await reconciler.run({ since: '1d', dryRun: true });
    expect(dry).toMatchObject({
      handled: 1,
      recovered: 0,
      missing: [{ kind: 'invoice', id: '2' }],
      checked: { invoice: 2, access: 0, certificate: 0, user: 0 },
    });
    expect(ran).toBe(0);
    // Nothing was recorded: the real run recovers it.
    expect(await reconciler.run({ since: '1d' })).toMatchObject({ recovered: 1, handled: 1 });
    expect(ran).toBe(1);
  });

  it('checks all four kinds when no handler is registered', async () => {
    const api = await apiWith({ users: [user(9)], certificates: [certificate(4)] });
    const report = await createReconciler({ api, store: memoryStore(), now }).run({
      since: '1d',
      dryRun: true,
    });
    expect(report.checked).toEqual({ invoice: 0, access: 0, certificate: 1, user: 1 });
    expect(report.missing).toEqual([
      { kind: 'certificate', id: '4' },
      { kind: 'user', id: '9' },
    ]);
    for (const path of Object.values(PATHS)) expect(listQueries(mock!, path)).toHaveLength(1);
  });
});

describe('failures', () => {
  it('reports a failing handler, recovers the others, and the next run tries it again', async () => {
    const api = await apiWith({ invoices: [1, 2, 3].map((id) => invoice(id)) });
    const store = memoryStore();
    let broken = true;
    const handled = counter();
    const reconciler = createReconciler({ api, store, now }).on('invoice', (item) => {
      if (broken && item.invoiceId === 2) throw new Error('crm hiccup');
      handled.count(String(item.invoiceId));
    });
    const first = await reconciler.run({ since: '1d' });
    expect(first).toMatchObject({ recovered: 2, handled: 0 });
    expect(first.failed).toHaveLength(1);
    const [failed] = first.failed;
    expect(failed).toMatchObject({ kind: 'invoice', id: '2' });
    expect(failed!.error).toBeInstanceOf(RecoveryError);
    expect(failed!.error).toMatchObject({ code: 'handler_failed', kind: 'invoice', id: '2' });
    expect(failed!.error.message).toBe('invoice 2: the invoice handler failed: crm hiccup');
    expect((failed!.error.cause as Error).message).toBe('crm hiccup');

    broken = false;
    const second = await reconciler.run({ since: '1d' });
    expect(second).toMatchObject({ recovered: 1, handled: 2, failed: [] });
    expect(Object.fromEntries(handled.calls)).toEqual({ '1': 1, '2': 1, '3': 1 });
  });

  it('gives up a handler at handlerTimeoutMs, aborting its signal, and frees its record when it ends', async () => {
    const api = await apiWith({ invoices: [invoice(1), invoice(2)] });
    const store = memoryStore();
    let patient = false;
    let signal: AbortSignal | undefined;
    const reconciler = createReconciler({ api, store, now, handlerTimeoutMs: 50 }).on(
      'invoice',
      (item, ctx) => {
        if (item.invoiceId !== 1 || patient) return;
        signal = ctx.signal;
        return new Promise((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
        );
      },
    );
    const started = performance.now();
    const report = await reconciler.run({ since: '1d' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    expect(report).toMatchObject({ recovered: 1 });
    expect(report.failed).toHaveLength(1);
    expect(report.failed[0]!.error).toMatchObject({ code: 'timeout', kind: 'invoice', id: '1' });
    expect(report.failed[0]!.error.message).toBe(
      'invoice 1: the invoice handler still ran after 50 ms',
    );
    // Nothing was thrown: no cause, not even an empty one for a log to print.
    expect('cause' in report.failed[0]!.error).toBe(false);
    expect(signal?.aborted).toBe(true);
    expect((signal?.reason as Error).message).toBe('the invoice handler timed out after 50 ms');
    await sleep(10);
    patient = true;
    expect(await reconciler.run({ since: '1d' })).toMatchObject({ recovered: 1, handled: 1 });
  });

  it('records a recovery whose handler ends well after its timeout: no run starts it again', async () => {
    const api = await apiWith({ invoices: [invoice(1)] });
    const store = memoryStore();
    let calls = 0;
    const reconciler = createReconciler({ api, store, now, handlerTimeoutMs: 30 }).on(
      'invoice',
      async () => {
        calls += 1;
        await sleep(80);
      },
    );
    const first = await reconciler.run({ since: '1d' });
    expect(first.failed.map(({ error }) => error.code)).toEqual(['timeout']);
    // Still running: its record is held, and a run then waits for it (counted once it is done).
    expect(await reconciler.run({ since: '1d' })).toMatchObject({
      handled: 1,
      recovered: 0,
      inFlight: [],
    });
    await sleep(100);
    expect(await stateAt(store, recordKeyOf('invoice:1', undefined))).toEqual({
      state: 'done',
      fingerprint: RECOVERED_BY_RUN,
    });
    expect(calls).toBe(1);
  });

  it('reports an entity whose record the store cannot claim, and goes on', async () => {
    const api = await apiWith({ invoices: [1, 2, 3].map((id) => invoice(id)) });
    const memory = memoryStore();
    const store: IdempotencyStore = {
      ...memory,
      claim: (request) => {
        if (request.key === recordKeyOf('invoice:2', undefined)) {
          throw new Error('connection reset');
        }
        return memory.claim(request);
      },
    };
    const report = await createReconciler({ api, store, now })
      .on('invoice', () => {})
      .run({ since: '1d' });
    expect(report.recovered).toBe(2);
    expect(report.failed.map(({ id, error }) => [id, error.code, error.message])).toEqual([
      [
        '2',
        'store_unavailable',
        "invoice 2: the store failed to claim the entity's records: connection reset",
      ],
    ]);
  });

  it('tries again to record a recovery the store refused, and records it once the store is back', async () => {
    const api = await apiWith({ users: [user(1)] });
    const memory = memoryStore();
    let refusals = 2;
    const store: IdempotencyStore = {
      ...memory,
      settle: (claim, how) => {
        if (how === 'complete' && refusals-- > 0) throw new Error('the Redis client is not ready');
        return memory.settle(claim, how);
      },
    };
    let ran = 0;
    const report = await createReconciler({ api, store, now })
      .on('user', () => void ran++)
      .run({ since: '1d' });
    expect(report).toMatchObject({ recovered: 1, failed: [], unrecorded: [], complete: true });
    expect(ran).toBe(1);
    expect(await stateAt(memory, recordKeyOf('user:1', undefined))).toEqual({
      state: 'done',
      fingerprint: RECOVERED_BY_RUN,
    });
  });

  it('reports a recovery whose handler succeeded but whose record the store never wrote as unrecorded, not failed', async () => {
    const api = await apiWith({ users: [user(1)] });
    const memory = memoryStore();
    const store: IdempotencyStore = {
      ...memory,
      settle: (claim, how) =>
        how === 'complete'
          ? Promise.reject(new Error('the Redis client is not ready'))
          : memory.settle(claim, how),
    };
    const report = await createReconciler({ api, store, now })
      .on('user', () => {})
      .run({ since: '1d' });
    expect(report).toMatchObject({ recovered: 0, failed: [], complete: false });
    expect(report.unrecorded.map(({ kind, id, error }) => [kind, id, error.code])).toEqual([
      ['user', '1', 'store_unavailable'],
    ]);
    expect(report.unrecorded[0]!.error.message).toBe(
      'user 1: the store failed to record the recovery: the Redis client is not ready',
    );
  });

  it('reports a list item that fails its schema, by its id and position, and recovers the rest', async () => {
    const api = await apiWith({
      // The platform's list item without its user: no handler can use it.
      invoices: [invoice(1), { ...invoice(2), user: null } as unknown as MockInvoice, invoice(3)],
    });
    const report = await createReconciler({ api, store: memoryStore(), now })
      .on('invoice', () => {})
      .run({ since: '1d' });
    expect(report).toMatchObject({ recovered: 2, checked: { invoice: 3 } });
    expect(report.failed.map(({ kind, id, error }) => [kind, id, error.code])).toEqual([
      ['invoice', '2', 'invalid_payload'],
    ]);
    expect(report.failed[0]!.error.message).toMatch(
      /^invoice 2: the list item at position 1 does not match its schema \(user: .+\)$/,
    );
  });

  it('names a list item without its id by its position, in a run with a signal as without', async () => {
    const { invoiceId: _dropped, ...noId } = invoice(2);
    const broken = { ...noId, user: null } as unknown as MockInvoice;
    const api = await apiWith({ invoices: [invoice(1), broken] });
    for (const signal of [undefined, new AbortController().signal]) {
      const report = await createReconciler({ api, store: memoryStore(), now, take: 1 })
        .on('invoice', () => {})
        .run({ since: '1d', ...(signal ? { signal } : {}) });
      expect(report).toMatchObject({ recovered: 1, checked: { invoice: 2 } });
      expect(report.failed.map(({ id, error }) => [id, error.code])).toEqual([
        ['#1', 'invalid_payload'],
      ]);
      expect(report.failed[0]!.error.message).toMatch(
        /^invoice #1: the list item at position 1 does not match its schema \(invoiceId: .+, user: .+\)$/,
      );
    }
    // A page of `take` items each time, with the signal as without.
    const takes = listQueries(mock!, PATHS.invoice).map((query) => query.get('take'));
    expect(new Set(takes)).toEqual(new Set(['1']));
  });

  it('ends the run with the API client’s error when the platform refuses the list', async () => {
    const api = await apiWith({ invoices: [invoice(1)] });
    mock!.failNext(401, {
      success: false,
      code: 401,
      cause: 'Unauthorized',
      message: ['Unauthorized'],
      error: 'Unauthorized',
    });
    const run = createReconciler({ api, store: memoryStore(), now })
      .on('invoice', () => {})
      .run({ since: '1d' });
    await expect(run).rejects.toBeInstanceOf(AuthenticationError);
  });

  it('waits out a 429 until its retryAfter, then reads on', async () => {
    const api = await apiWith({ invoices: [invoice(1)] });
    mock!.rateLimitNext(1, 300);
    const report = await createReconciler({ api, store: memoryStore(), now })
      .on('invoice', () => {})
      .run({ since: '1d' });
    expect(report.recovered).toBe(1);
    const asked = mock!.requests.filter((request) => request.path.startsWith(PATHS.invoice));
    expect(asked).toHaveLength(2);
    expect(asked[1]!.receivedAt - asked[0]!.receivedAt).toBeGreaterThanOrEqual(250);
  });

  it('throws the signal’s reason when aborted, keeping what it recovered', async () => {
    const api = await apiWith({ invoices: [1, 2, 3].map((id) => invoice(id)) });
    const store = memoryStore();
    const controller = new AbortController();
    let handlerSignal: AbortSignal | undefined;
    const run = createReconciler({ api, store, now })
      .on('invoice', (item, ctx) => {
        if (item.invoiceId !== 2) return;
        handlerSignal = ctx.signal;
        controller.abort(new Error('shutting down'));
        return sleep(1000);
      })
      .run({ since: '1d', signal: controller.signal });
    // The run throws the signal's own reason, not an error of its own.
    const reason = await failureOf(run);
    expect(reason).toBe(controller.signal.reason);
    expect(reason.message).toBe('shutting down');
    expect(handlerSignal?.aborted).toBe(true);
    expect(await stateAt(store, recordKeyOf('invoice:1', undefined))).toMatchObject({
      state: 'done',
    });
    expect(await stateAt(store, recordKeyOf('invoice:3', undefined))).toEqual({ state: 'free' });
  });
});

describe('aborts and late handlers', () => {
  it('throws the reason when the abort comes with the last entity, not a report', async () => {
    const api = await apiWith({ invoices: [invoice(1), invoice(2)] });
    const store = memoryStore();
    const controller = new AbortController();
    const run = createReconciler({ api, store, now })
      .on('invoice', (item, ctx) => {
        if (item.invoiceId !== 2) return;
        controller.abort(new Error('shutting down'));
        return new Promise((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
        );
      })
      .run({ since: '1d', signal: controller.signal });
    expect(await failureOf(run)).toBe(controller.signal.reason);
  });

  it('frees a record it claimed when the abort came during the claim, running no handler', async () => {
    const api = await apiWith({ invoices: [invoice(1)] });
    const memory = memoryStore();
    const controller = new AbortController();
    const store: IdempotencyStore = {
      ...memory,
      claim: (request) => {
        controller.abort(new Error('shutting down'));
        return memory.claim(request);
      },
    };
    let ran = 0;
    const run = createReconciler({ api, store, now })
      .on('invoice', () => void ran++)
      .run({ since: '1d', signal: controller.signal });
    expect(await failureOf(run)).toBe(controller.signal.reason);
    expect(ran).toBe(0);
    expect(await stateAt(memory, recordKeyOf('invoice:1', undefined))).toEqual({ state: 'free' });
  });

  it('stops waiting out a 429 when the run is aborted', async () => {
    const api = await apiWith({ invoices: [invoice(1)] });
    mock!.rateLimitNext(1, 5_000);
    const controller = new AbortController();
    const started = performance.now();
    const run = createReconciler({ api, store: memoryStore(), now })
      .on('invoice', () => {})
      .run({ since: '1d', signal: controller.signal });
    setTimeout(() => controller.abort(new Error('shutting down')), 100);
    expect(await failureOf(run)).toBe(controller.signal.reason);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it.each<[string, () => Promise<void>]>([
    // A store that throws instead of rejecting is caught as well.
    [
      'throws',
      () => {
        throw new Error('read-only replica');
      },
    ],
    ['rejects', () => Promise.reject(new Error('read-only replica'))],
  ])(
    'frees the record of a handler that ends after its timeout when the store %s on complete',
    async (_how, complete) => {
      const api = await apiWith({ invoices: [invoice(1)] });
      const memory = memoryStore();
      const store: IdempotencyStore = {
        ...memory,
        settle: (claim, how) => (how === 'complete' ? complete() : memory.settle(claim, how)),
      };
      const report = await createReconciler({ api, store, now, handlerTimeoutMs: 30 })
        .on('invoice', () => sleep(60))
        .run({ since: '1d' });
      expect(report.failed.map(({ error }) => error.code)).toEqual(['timeout']);
      const record = recordKeyOf('invoice:1', undefined);
      // Held while the handler runs; freed once its recording was tried and failed, long before
      // the end of its lease (2 minutes).
      expect(await stateAt(memory, record)).toEqual({ state: 'in_flight' });
      await vi.waitFor(
        async () => expect(await stateAt(memory, record)).toEqual({ state: 'free' }),
        {
          timeout: 6_000,
          interval: 50,
        },
      );
    },
  );

  it("leaves a finished handler's signal alone: neither its timeout nor the run's abort reaches it later", async () => {
    const api = await apiWith({ invoices: [invoice(1)] });
    const controller = new AbortController();
    let signal: AbortSignal | undefined;
    const report = await createReconciler({ api, store: memoryStore(), now, handlerTimeoutMs: 30 })
      .on('invoice', (_item, ctx) => void (signal = ctx.signal))
      .run({ since: '1d', signal: controller.signal });
    expect(report.recovered).toBe(1);
    await sleep(60);
    controller.abort(new Error('shutting down'));
    expect(signal?.aborted).toBe(false);
  });
});

describe('the window', () => {
  it('leaves entities younger than minAgeMs to their webhooks', async () => {
    const api = await apiWith({
      users: [user(1, ago(6 * HOUR)), user(2, ago(4 * HOUR)), user(3, ago(30 * 60_000))],
    });
    const ids: number[] = [];
    const reconciler = createReconciler({ api, store: memoryStore(), now }).on(
      'user',
      (item) => void ids.push(item.id),
    );
    const report = await reconciler.run({ since: '1d' });
    expect(ids).toEqual([1]);
    expect(report.window.to).toBe(WINDOW_END);
    const [query] = listQueries(mock!, PATHS.user);
    expect(query!.get('createdAtDateRange[from]')).toBe(ago(DAY));
    expect(query!.get('createdAtDateRange[to]')).toBe(WINDOW_END);

    const sooner = createReconciler({ api, store: memoryStore(), now, minAgeMs: HOUR });
    const found: number[] = [];
    await sooner.on('user', (item) => void found.push(item.id)).run({ since: '1d' });
    expect(found).toEqual([1, 2]);
  });

  it('ends at until when it is earlier than now less minAgeMs', async () => {
    const api = await apiWith({ users: [user(1, ago(20 * HOUR)), user(2, ago(10 * HOUR))] });
    const report = await createReconciler({ api, store: memoryStore(), now })
      .on('user', () => {})
      .run({ since: NOW - DAY, until: new Date(NOW - 12 * HOUR) });
    expect(report).toMatchObject({
      window: { from: ago(DAY), to: ago(12 * HOUR) },
      recovered: 1,
    });
  });

  it('lists paid invoices issued up to lookbackMs before since; other kinds from since', async () => {
    const api = await apiWith({
      invoices: [invoice(1, ago(4 * DAY)), invoice(2, ago(10 * DAY)), invoice(3, ago(HOUR * 10))],
      productAccesses: [access(1, ago(4 * DAY)), access(2, ago(10 * HOUR))],
    });
    const seen: string[] = [];
    const report = await createReconciler({ api, store: memoryStore(), now })
      .on('invoice', (_item, ctx) => void seen.push(ctx.entity))
      .on('access', (_item, ctx) => void seen.push(ctx.entity))
      .run({ since: '2d' });
    expect(seen).toEqual(['invoice:1', 'invoice:3', 'access:2']);
    expect(report.window.from).toBe(ago(2 * DAY));
    const [invoices] = listQueries(mock!, PATHS.invoice);
    expect(invoices!.get('createdAtDateRange[from]')).toBe(ago(9 * DAY));
    expect(invoices!.get('payment[actualStatuses]')).toBe('Completed');
    const [accesses] = listQueries(mock!, PATHS.access);
    expect(accesses!.get('createdAtDateRange[from]')).toBe(ago(2 * DAY));
    expect(accesses!.get('createdAtDateRange[to]')).toBe(WINDOW_END);

    mock!.addListItems({ certificates: [certificate(5, ago(3 * DAY))] });
    const narrow = createReconciler({ api, store: memoryStore(), now, lookbackMs: 0 });
    const found: string[] = [];
    await narrow
      .on('invoice', (item) => void found.push(String(item.invoiceId)))
      .run({
        since: '5d',
      });
    expect(found).toEqual(['1', '3']);
  });

  it('lists certificates by issue date and users by sign-up date, over the window', async () => {
    const api = await apiWith({
      certificates: [certificate(1, ago(3 * DAY)), certificate(2, ago(10 * HOUR))],
      users: [user(1, ago(3 * DAY)), user(2, ago(10 * HOUR))],
    });
    const report = await createReconciler({ api, store: memoryStore(), now })
      .on('certificate', () => {})
      .on('user', () => {})
      .run({ since: '2d' });
    expect(report).toMatchObject({ recovered: 2, checked: { certificate: 1, user: 1 } });
    const [certificates] = listQueries(mock!, PATHS.certificate);
    expect(certificates!.get('issuedAtDateRange[from]')).toBe(ago(2 * DAY));
    expect(certificates!.get('issuedAtDateRange[to]')).toBe(WINDOW_END);
    const [users] = listQueries(mock!, PATHS.user);
    expect(users!.get('createdAtDateRange[from]')).toBe(ago(2 * DAY));
    expect(users!.get('createdAtDateRange[to]')).toBe(WINDOW_END);
  });

  it('refuses a window reaching past the 35 days records are kept', async () => {
    const api = await apiWith({});
    const reconciler = createReconciler({ api, store: memoryStore(), now })
      .on('invoice', () => {})
      .on('user', () => {});
    // Invoices reach lookbackMs (7 days) further back.
    await expect(reconciler.run({ since: '29d' })).rejects.toSatisfy(
      (error) => error instanceof ConfigError && /kept 35 days/.test(error.message),
    );
    await expect(reconciler.run({ since: '29d' })).rejects.toMatchObject({ code: 'config' });
    await expect(reconciler.run({ since: '28d' })).resolves.toMatchObject({ recovered: 0 });
    await expect(reconciler.run({ since: '35d', kinds: ['user'] })).resolves.toMatchObject({
      recovered: 0,
    });
    await expect(reconciler.run({ since: '36d', kinds: ['user'] })).rejects.toSatisfy(
      (error) => error instanceof ConfigError && /kept 35 days/.test(error.message),
    );
  });

  it.each([
    ['90m', NOW - 90 * 60_000],
    ['48h', NOW - 48 * HOUR],
    ['7d', NOW - 7 * DAY],
    [new Date(NOW - DAY), NOW - DAY],
    [NOW - 2 * DAY, NOW - 2 * DAY],
  ])('starts at since %s', async (since, from) => {
    const api = await apiWith({});
    const report = await createReconciler({ api, store: memoryStore(), now, minAgeMs: 0 }).run({
      since,
      dryRun: true,
    });
    expect(report.window).toEqual({
      from: new Date(from).toISOString(),
      to: new Date(NOW).toISOString(),
    });
  });

  it.each(['2 days', '48', '-1h', '1w', '1.5h', '', 'h'])('refuses since %j', async (since) => {
    const api = await apiWith({});
    const run = createReconciler({ api, store: memoryStore(), now }).run({
      since,
      dryRun: true,
    });
    await expect(run).rejects.toBeInstanceOf(ConfigError);
    await expect(run).rejects.toThrow(/since must be a Date, ms since the epoch, or a duration/);
  });

  it('refuses an empty window: since at or after its end', async () => {
    const api = await apiWith({});
    const reconciler = createReconciler({ api, store: memoryStore(), now });
    await expect(reconciler.run({ since: '4h', dryRun: true })).rejects.toThrow(
      /the window is empty/,
    );
    await expect(
      reconciler.run({ since: NOW - DAY, until: NOW - 2 * DAY, dryRun: true }),
    ).rejects.toThrow(/the window is empty/);
    expect(mock!.requests).toHaveLength(0);
  });
});

describe('configuration', () => {
  const api = { invoices() {}, productAccesses() {}, certificates() {}, users() {} };
  const store = memoryStore();

  it.each<[string, Partial<ReconcilerOptions>, RegExp]>([
    ['a negative minAgeMs', { minAgeMs: -1 }, /minAgeMs must be a non-negative number of ms/],
    ['a negative lookbackMs', { lookbackMs: -5 }, /lookbackMs must be/],
    ['an infinite lookbackMs', { lookbackMs: Infinity }, /lookbackMs must be/],
    ['a handlerTimeoutMs of 0', { handlerTimeoutMs: 0 }, /handlerTimeoutMs must be a positive/],
    ['take 0', { take: 0 }, /take must be an integer from 1 to 1000/],
    ['take 1001', { take: 1001 }, /take must be an integer from 1 to 1000/],
    ['take 1.5', { take: 1.5 }, /take must be an integer from 1 to 1000/],
    ['a tenant that is no string', { tenant: 5 as unknown as string }, /tenant must be a string/],
    ['an empty tenant', { tenant: '' }, /cannot name a tenant/],
    ['no api', { api: undefined as unknown as ReconcilerOptions['api'] }, /api must be/],
  ])('refuses %s', (_name, options, message) => {
    const make = () =>
      createReconciler({ api: api as unknown as ReconcilerOptions['api'], store, ...options });
    expect(make).toThrow(ConfigError);
    expect(make).toThrow(message);
    try {
      make();
    } catch (error) {
      expect(error).toMatchObject({ code: 'config' });
    }
  });

  it('refuses neither a store nor a receiver', () => {
    const make = () => createReconciler({ api: api as unknown as ReconcilerOptions['api'] });
    expect(make).toThrow(ConfigError);
    expect(make).toThrow(/needs the store where the receiver records the entities/);
  });

  it('refuses an unknown kind and a second handler of one kind', () => {
    const reconciler = createReconciler({
      api: api as unknown as ReconcilerOptions['api'],
      store,
    }).on('invoice', () => {});
    // @ts-expect-error: 'payment' is no kind
    expect(() => reconciler.on('payment', () => {})).toThrow(/unknown kind "payment"/);
    expect(() => reconciler.on('invoice', () => {})).toThrow(/invoice has a handler already/);
  });

  it('names what it refuses: a kind, a handler, the options of a run, its kinds', async () => {
    const reconciler = createReconciler({
      api: api as unknown as ReconcilerOptions['api'],
      store,
      now,
    });
    const kinds = 'invoice, access, certificate, user';
    const refused = (make: () => unknown) => configRefusal(make).message;
    expect(refused(() => reconciler.on('payment' as 'invoice', () => {}))).toBe(
      `unknown kind "payment": a reconciler recovers ${kinds}`,
    );
    expect(refused(() => reconciler.on('invoice', 'grant' as unknown as () => void))).toBe(
      'the handler of invoice must be a function',
    );
    reconciler.on('invoice', () => {});
    const runRefused = async (options: unknown) => {
      const error = await failureOf(
        reconciler.run(options as Parameters<typeof reconciler.run>[0]),
      );
      expect(error).toBeInstanceOf(ConfigError);
      return error.message;
    };
    for (const options of [undefined, null, '48h']) {
      expect(await runRefused(options)).toBe("run takes an options object: { since: '48h' }");
    }
    expect(await runRefused({ since: '1d', kinds: 'invoice' })).toBe(
      `kinds must be an array of ${kinds}`,
    );
    expect(await runRefused({ since: '1d', kinds: ['invoice', 'payment'] })).toBe(
      `unknown kind "payment" in kinds: ${kinds}`,
    );
    expect(await runRefused({ since: '1d', kinds: ['user', 'invoice', 'certificate'] })).toBe(
      'no handler for certificate, user: register one with on(), or run with dryRun',
    );
  });

  it('refuses a run of a kind without a handler, and a run with none at all', async () => {
    const reconciler = createReconciler({
      api: api as unknown as ReconcilerOptions['api'],
      store,
      now,
    });
    await expect(reconciler.run({ since: '1d' })).rejects.toThrow(/nothing to reconcile/);
    reconciler.on('invoice', () => {});
    await expect(reconciler.run({ since: '1d', kinds: ['user'] })).rejects.toThrow(
      /no handler for user/,
    );
    await expect(
      // @ts-expect-error: 'payment' is no kind
      reconciler.run({ since: '1d', kinds: ['payment'], dryRun: true }),
    ).rejects.toThrow(/unknown kind "payment" in kinds/);
  });
});
