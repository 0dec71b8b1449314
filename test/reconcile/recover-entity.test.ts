/**
 * One entity's recovery on its own, loaded afresh in each test (`vi.resetModules()` and
 * `import()`, so a mutation tool sees its module-level answers): what becomes of an entity a
 * webhook handled, one recovered, one a dry run finds missing, one whose handler fails, and a
 * handler's claim transaction, which a handler that ended in time never has abandoned. The same
 * paths run over real HTTP and real stores in reconciler.test.ts and reconciler-stores.test.ts.
 */

import { describe, expect, it, vi } from 'vitest';
import { recordKeyOf } from '../../src/delivery-key.js';
import { RECORDED_BY_WEBHOOK, RECOVERED_BY_RUN } from '../../src/entity-records.js';
import type { ListedEntity } from '../../src/reconcile/listings.js';
import type { RecoveryConfig } from '../../src/reconcile/recover-entity.js';
import { memoryStore } from '../../src/stores/memory.js';
import type { IdempotencyStore } from '../../src/stores/types.js';

async function freshRecovery() {
  vi.resetModules();
  return import('../../src/reconcile/recover-entity.js');
}

const listed = {
  item: { id: 7 },
  id: '7',
  entity: 'user:7',
} as unknown as ListedEntity<'user'>;
const record = recordKeyOf('user:7', undefined);

function configOf(
  store: IdempotencyStore,
  overrides: Partial<RecoveryConfig> = {},
): RecoveryConfig {
  return {
    store,
    tenant: undefined,
    leaseMs: 60_000,
    handlerTimeoutMs: 1_000,
    dryRun: false,
    signal: undefined,
    ...overrides,
  };
}

describe('recoverEntity, loaded afresh', () => {
  it('leaves alone an entity a webhook recorded', async () => {
    const { recoverEntity } = await freshRecovery();
    const store = memoryStore();
    const claimed = await store.claim(record, 1_000);
    if (claimed.state !== 'claimed') throw new Error('expected a claim');
    store.complete(record, claimed.token, 60_000, RECORDED_BY_WEBHOOK);
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
    expect(store.claim(record, 1_000)).toEqual({ state: 'done', fingerprint: RECOVERED_BY_RUN });
  });

  it('finds it missing in a dry run, running no handler and recording nothing', async () => {
    const { recoverEntity } = await freshRecovery();
    const store = memoryStore();
    const handler = vi.fn();
    expect(await recoverEntity('user', listed, handler, configOf(store, { dryRun: true }))).toEqual(
      { state: 'missing' },
    );
    expect(await recoverEntity('user', listed, undefined, configOf(store))).toEqual({
      state: 'missing',
    });
    expect(handler).not.toHaveBeenCalled();
    expect(store.claim(record, 1_000)).toMatchObject({ state: 'claimed' });
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
    expect(store.claim(record, 1_000)).toMatchObject({ state: 'claimed' });
  });

  it("commits a handler's transaction that ended in time, once, and never abandons it", async () => {
    const { recoverEntity } = await freshRecovery();
    const abandon = vi.fn();
    const complete = vi.fn();
    const store: IdempotencyStore = {
      claim: () => ({
        state: 'claimed',
        token: 't1',
        transaction: { client: {} as never, abandon },
      }),
      complete,
      release: vi.fn(),
    };
    expect(await recoverEntity('user', listed, () => {}, configOf(store))).toEqual({
      state: 'recovered',
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(complete.mock.calls).toEqual([[record, 't1', 35 * 86_400_000, RECOVERED_BY_RUN]]);
    expect(abandon).not.toHaveBeenCalled();
  });
});
