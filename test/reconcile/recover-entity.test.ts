/**
 * One entity's recovery on its own, loaded afresh in each test (`vi.resetModules()` and
 * `import()`, so a mutation tool sees its module-level answers): what becomes of an entity a
 * webhook handled, one recovered, one another claim holds, one whose handler fails, and a
 * handler's claim transaction, which a handler that ended in time never has abandoned. The same
 * paths run over real HTTP and real stores in reconciler.test.ts and reconciler-stores.test.ts.
 */

import { describe, expect, it, vi } from 'vitest';
import { RECORDED_BY_WEBHOOK, recordKeyOf, RECOVERED_BY_RUN } from '../../src/keys/delivery-key.js';
import type { ListedEntity } from '../../src/reconcile/listings.js';
import type { RecoveryConfig } from '../../src/reconcile/recover-entity.js';
import { memoryStore } from '../../src/stores/memory.js';
import type { ClaimRequest, IdempotencyStore } from '../../src/stores/types.js';
import { heldOf, requestFor } from '../stores/contract.js';

async function freshRecovery() {
  vi.resetModules();
  return import('../../src/reconcile/recover-entity.js');
}

const record = recordKeyOf('user:7', undefined);
const listed = {
  item: { id: 7 },
  id: '7',
  entity: 'user:7',
  records: [record],
} as unknown as ListedEntity<'user'>;

function configOf(
  store: IdempotencyStore,
  overrides: Partial<RecoveryConfig> = {},
): RecoveryConfig {
  return {
    store,
    tenant: undefined,
    leaseMs: 60_000,
    handlerTimeoutMs: 1_000,
    signal: undefined,
    ...overrides,
  };
}

describe('recoverEntity, loaded afresh', () => {
  it('leaves alone an entity a webhook recorded', async () => {
    const { recoverEntity } = await freshRecovery();
    const store = memoryStore();
    const webhook = requestFor(record, { fingerprint: RECORDED_BY_WEBHOOK });
    await store.settle(heldOf(await store.claim(webhook)), 'complete');
    const handler = vi.fn();
    expect(await recoverEntity('user', listed, handler, configOf(store))).toEqual({
      state: 'handled',
    });
    expect(handler).not.toHaveBeenCalled();
  });

  it('runs the handler of an entity nobody handled, and records it recovered by a run', async () => {
    const { recoverEntity } = await freshRecovery();
    const store = memoryStore();
    const handler = vi.fn();
    expect(await recoverEntity('user', listed, handler, configOf(store))).toEqual({
      state: 'recovered',
    });
    expect(handler).toHaveBeenCalledOnce();
    expect(await store.peek([record])).toEqual([{ state: 'done', fingerprint: RECOVERED_BY_RUN }]);
  });

  it('answers in flight while another claim holds its record, running nothing', async () => {
    const { recoverEntity } = await freshRecovery();
    const store = memoryStore();
    heldOf(await store.claim(requestFor(record)));
    const handler = vi.fn();
    expect(await recoverEntity('user', listed, handler, configOf(store))).toEqual({
      state: 'in_flight',
    });
    expect(handler).not.toHaveBeenCalled();
  });

  it('leaves alone an access a webhook without access recorded under its enrollment', async () => {
    const { recoverEntity } = await freshRecovery();
    const store = memoryStore();
    const enrollment = recordKeyOf('enrollment:7000:31', undefined);
    const webhook = requestFor(enrollment, { fingerprint: RECORDED_BY_WEBHOOK });
    await store.settle(heldOf(await store.claim(webhook)), 'complete');
    const accessRecord = recordKeyOf('access:9', undefined);
    const access = {
      item: { accessId: 9 },
      id: '9',
      entity: 'access:9',
      records: [accessRecord, enrollment],
    } as unknown as ListedEntity<'access'>;
    const handler = vi.fn();
    expect(await recoverEntity('access', access, handler, configOf(store))).toEqual({
      state: 'handled',
    });
    expect(handler).not.toHaveBeenCalled();
    // Nothing was taken: the access's own record is free again.
    expect(await store.peek([accessRecord])).toEqual([{ state: 'free' }]);
  });

  it('completes both records of an access it recovers, so neither webhook runs it again', async () => {
    const { recoverEntity } = await freshRecovery();
    const store = memoryStore();
    const records = [
      recordKeyOf('access:9', undefined),
      recordKeyOf('enrollment:7000:31', undefined),
    ];
    const access = {
      item: { accessId: 9 },
      id: '9',
      entity: 'access:9',
      records,
    } as unknown as ListedEntity<'access'>;
    expect(await recoverEntity('access', access, () => {}, configOf(store))).toEqual({
      state: 'recovered',
    });
    expect(await store.peek(records)).toEqual([
      { state: 'done', fingerprint: RECOVERED_BY_RUN },
      { state: 'done', fingerprint: RECOVERED_BY_RUN },
    ]);
  });

  it('answers a failed handler as failed, freeing the record', async () => {
    const { recoverEntity } = await freshRecovery();
    const store = memoryStore();
    const recovery = await recoverEntity(
      'user',
      listed,
      () => {
        throw new Error('crm hiccup');
      },
      configOf(store),
    );
    expect(recovery).toMatchObject({ state: 'failed', error: { code: 'handler_failed' } });
    expect(recovery.state === 'failed' && recovery.error.message).toBe(
      'user 7: the user handler failed: crm hiccup',
    );
    expect(await store.peek([record])).toEqual([{ state: 'free' }]);
  });

  it("commits a handler's transaction that ended in time, once, and never abandons it", async () => {
    const { recoverEntity } = await freshRecovery();
    const abandon = vi.fn();
    const settle = vi.fn(() => Promise.resolve());
    const claims: ClaimRequest[] = [];
    const store: IdempotencyStore = {
      claim: (request) => {
        claims.push(request);
        return Promise.resolve({
          state: 'claimed',
          request,
          token: 't1',
          records: [],
          superseded: false,
          transaction: { client: {} as never, abandon },
        });
      },
      settle,
      peek: () => Promise.resolve([]),
    };
    expect(await recoverEntity('user', listed, () => {}, configOf(store))).toEqual({
      state: 'recovered',
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(settle.mock.calls.map((call) => (call as unknown[])[1])).toEqual(['complete']);
    // The record, recorded as a run's recovery, kept as long as the records of handled entities.
    expect(claims).toEqual([
      {
        key: record,
        leaseMs: 60_000,
        completion: { fingerprint: RECOVERED_BY_RUN, ttlMs: 35 * 86_400_000 },
        records: undefined,
      },
    ]);
    expect(abandon).not.toHaveBeenCalled();
  });
});
