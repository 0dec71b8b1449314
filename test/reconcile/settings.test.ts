/**
 * createReconciler's options on their own: the defaults the docs promise (docs/reconcile.md), the
 * smallest and largest values each option takes, and each refusal with the message that names
 * the option, at creation rather than at the first run.
 */

import { describe, expect, it } from 'vitest';
import { createReceiver } from '../../src/index.js';
import { checkReconcilerOptions } from '../../src/reconcile/settings.js';
import type { ReconcilerOptions } from '../../src/reconcile/types.js';
import { memoryStore } from '../../src/stores/memory.js';
import { configRefusal } from '../helpers/failure-of.js';
import { DAY, MINUTE } from './helpers.js';

const api = {
  invoices() {},
  productAccesses() {},
  certificates() {},
  users() {},
} as unknown as ReconcilerOptions['api'];
const store = memoryStore();

/** The options with `api` and `store`, and `options` over them. */
function check(options: Partial<Record<keyof ReconcilerOptions, unknown>>) {
  return checkReconcilerOptions({ api, store, ...options } as ReconcilerOptions);
}

/** The message of the ConfigError `make` throws. */
const refusal = (make: () => unknown): string => configRefusal(make).message;

describe('defaults', () => {
  it("leaves out entities younger than the platform's retry span and a quarter hour, lists invoices 7 days further back, 1000 a page", () => {
    const settings = checkReconcilerOptions({ api, store });
    expect(settings).toEqual({
      api,
      store,
      tenant: undefined,
      // The platform's last retry comes 11 + 33 + 77 + 165 minutes after the first attempt.
      minAgeMs: (11 + 33 + 77 + 165) * MINUTE + 15 * MINUTE,
      lookbackMs: 7 * DAY,
      handlerTimeoutMs: MINUTE,
      inFlightWaitMs: 30_000,
      leaseMs: 2 * MINUTE,
      take: 1000,
      now: Date.now,
    });
  });

  it('holds a recovery at least 2 minutes, and twice a longer handler timeout', () => {
    expect(check({ handlerTimeoutMs: 30_000 }).leaseMs).toBe(2 * MINUTE);
    expect(check({ handlerTimeoutMs: 90_000 }).leaseMs).toBe(3 * MINUTE);
  });

  it('keeps what it is given', () => {
    const now = () => 7;
    expect(
      check({ tenant: 'school-a', minAgeMs: 0, lookbackMs: 0, handlerTimeoutMs: 1, take: 1, now }),
    ).toMatchObject({
      tenant: 'school-a',
      minAgeMs: 0,
      lookbackMs: 0,
      handlerTimeoutMs: 1,
      take: 1,
      now,
    });
  });
});

describe('the store', () => {
  it("takes the receiver's store, and the one given over it", () => {
    const receiver = createReceiver({ secret: 'whsec_settings_test', store });
    expect(checkReconcilerOptions({ api, receiver }).store).toBe(store);
    const other = memoryStore();
    expect(checkReconcilerOptions({ api, receiver, store: other }).store).toBe(other);
  });

  it('refuses neither a store nor a receiver (a null store is none)', () => {
    const message =
      'createReconciler needs the store where the receiver records the entities it handled: ' +
      'pass store (the receiver\u2019s) or receiver';
    expect(refusal(() => checkReconcilerOptions({ api } as ReconcilerOptions))).toBe(message);
    expect(refusal(() => check({ store: null }))).toBe(message);
  });

  it('refuses a receiver whose store is null', () => {
    expect(refusal(() => check({ store: undefined, receiver: { store: null } }))).toBe(
      'store must be an idempotency store (claim, settle, peek)',
    );
  });

  it('refuses a receiver that does not record entities, even with a store', () => {
    const receiver = createReceiver({
      secret: 'whsec_settings_test',
      store,
      recordEntities: false,
    });
    const message =
      'the receiver does not record the entities its webhooks handle (recordEntities: false), so ' +
      'a reconciler would recover every one of them again: let it record them';
    expect(refusal(() => checkReconcilerOptions({ api, receiver }))).toBe(message);
    expect(refusal(() => checkReconcilerOptions({ api, receiver, store }))).toBe(message);
  });

  it.each([null, 'receiver', 5])('refuses the receiver %j', (receiver) => {
    expect(refusal(() => check({ store: undefined, receiver }))).toBe(
      'receiver must be a receiver made by createReceiver',
    );
  });

  it('refuses a string for a store', () => {
    expect(refusal(() => check({ store: 'redis://127.0.0.1' }))).toBe(
      'store must be an idempotency store (claim, settle, peek)',
    );
  });

  it.each<[string, unknown, string]>([
    ['no claim', { settle() {}, peek() {} }, 'claim()'],
    ['no settle', { claim() {}, peek() {} }, 'settle()'],
    ['no peek', { claim() {}, settle() {} }, 'peek()'],
    [
      'the methods of an earlier contract',
      { claim() {}, complete() {}, release() {} },
      'settle(), peek()',
    ],
  ])('refuses a store with %s, naming what it lacks', (_name, given, missing) => {
    expect(refusal(() => check({ store: given }))).toMatch(
      new RegExp(
        `^store lacks ${missing.replace(/[()]/g, '\\$&')}: an idempotency store has claim, settle, peek`,
      ),
    );
  });
});

describe('refusals', () => {
  it.each<[string, unknown]>([
    ['undefined', undefined],
    ['null', null],
    ['a string', 'options'],
  ])('refuses %s for options', (_name, options) => {
    expect(refusal(() => checkReconcilerOptions(options as ReconcilerOptions))).toBe(
      'createReconciler takes an options object: { api, store or receiver }',
    );
  });

  it.each<[string, unknown, string]>([
    ['no api', undefined, 'invoices, productAccesses, certificates, users'],
    ['null', null, 'invoices, productAccesses, certificates, users'],
    ['a function with the methods', Object.assign(() => {}, api), ''],
    ['one without users', { ...api, users: undefined }, 'users'],
    [
      'one without invoices and certificates',
      { ...api, invoices: 1, certificates: {} },
      'invoices, certificates',
    ],
  ])('refuses %s for api, naming what it lacks', (_name, given, missing) => {
    expect(refusal(() => check({ api: given }))).toBe(
      `api must be the school's API client (createSchoolApi from schoolhooks/api), with ${missing}`,
    );
  });

  it.each<[string, unknown]>([
    ['minAgeMs', -1],
    ['minAgeMs', Infinity],
    ['minAgeMs', '5h'],
    ['lookbackMs', -1],
    ['lookbackMs', NaN],
    ['lookbackMs', null],
  ])('refuses %s %j', (name, value) => {
    expect(refusal(() => check({ [name]: value }))).toBe(
      `${name} must be a non-negative number of ms`,
    );
  });

  it.each<unknown>([0, 0.5 - 0.5, -1, Infinity, '1m'])('refuses handlerTimeoutMs %j', (value) => {
    expect(refusal(() => check({ handlerTimeoutMs: value }))).toBe(
      'handlerTimeoutMs must be a positive number of ms',
    );
  });

  it('takes any page size from 1 to 1000 items, the most the platform lists at once', () => {
    expect(check({ take: 1000 }).take).toBe(1000);
    for (const take of [0, 1001, 1.5, '10', NaN]) {
      expect(refusal(() => check({ take }))).toBe('take must be an integer from 1 to 1000');
    }
  });

  it('refuses a clock that is no function', () => {
    expect(refusal(() => check({ now: 5 }))).toBe('now must be a function returning ms');
  });

  it.each<[string, unknown, string]>([
    ['a number', 5, 'tenant must be a string: the tenant the receiver names the school by'],
    ['null', null, 'tenant must be a string: the tenant the receiver names the school by'],
    ['an empty one', '', 'tenant "" cannot name a tenant'],
    ['one with U+0000', 'a\u0000b', 'tenant "a\\u0000b" cannot name a tenant'],
    ['a lone surrogate', '\ud800', 'tenant "\\ud800" cannot name a tenant'],
    ['one too long', 'a'.repeat(257), `tenant "${'a'.repeat(100)}…" cannot name a tenant`],
  ])('refuses %s for tenant', (_name, tenant, start) => {
    const message = refusal(() => check({ tenant }));
    expect(message.startsWith(start)).toBe(true);
    if (typeof tenant === 'string') {
      expect(message).toBe(`${start} (empty, too long, or holding U+0000 or a lone surrogate)`);
    }
  });

  it('takes the longest tenant a receiver takes', () => {
    expect(check({ tenant: 'a'.repeat(256) }).tenant).toBe('a'.repeat(256));
  });
});
