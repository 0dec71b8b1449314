import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConfigError, StoreUnavailableError } from '../../src/errors.js';
import { redisStore, type RedisStoreOptions } from '../../src/stores/redis.js';
import type { IdempotencyStore } from '../../src/stores/types.js';
import { configRefusal, failureOf } from '../helpers/failure-of.js';
import { useTestRedis, type TestRedis } from '../helpers/redis.js';
import { describeStoreContract, heldOf, requestFor, type StoreUnderTest } from './contract.js';

// One prefix per run, so parallel runs against a shared Redis never meet.
const PREFIX = `schoolhooks-test:${randomUUID()}:`;
const IN_FLIGHT = { state: 'in_flight', held: 'key' };

let redis: TestRedis;
let client: Redis;

beforeAll(async () => {
  redis = await useTestRedis();
  client = new Redis(redis.url);
});

afterAll(async () => {
  if (client) {
    await deleteKeys(client, `${PREFIX}*`);
    client.disconnect();
  }
  await redis?.close();
});

function makeStore(options: Omit<RedisStoreOptions, 'client'>): () => Promise<StoreUnderTest> {
  return async () => ({ store: redisStore({ client, ...options }), cleanup: async () => {} });
}

describeStoreContract('redisStore', makeStore({ prefix: PREFIX }));
describeStoreContract(
  'redisStore with a namespace',
  makeStore({ prefix: PREFIX, namespace: 'n1' }),
);

/** `key` claimed in `store` (with what `asking` adds): its claim. */
async function claimed(
  store: IdempotencyStore,
  key: string,
  asking: Parameters<typeof requestFor>[1] = {},
) {
  return heldOf(await store.claim(requestFor(key, asking)));
}

/** The Redis key of `key` in the test's prefix (a key without `%`, `{` or `}`). */
function redisKey(key: string): string {
  return `${PREFIX}{${key}}`;
}

/** An entity as the receiver names one (src/keys/delivery-key.ts' entityKeyOf). */
function entity(): string {
  return `~["entity",null,"invoice:${randomUUID()}"]`;
}

/** A record as the receiver names one (src/keys/delivery-key.ts' recordKeyOf). */
function record(): string {
  return `~["record",null,"invoice:${randomUUID()}"]`;
}

/** The stable code of each error class a test expects. */
const CODES = new Map<unknown, string>([
  [ConfigError, 'config'],
  [StoreUnavailableError, 'store_unavailable'],
]);

/** The error `work` rejects with, required to be of `type` with its stable code. */
async function refusal<E extends ConfigError | StoreUnavailableError>(
  work: Promise<unknown>,
  type: new (...args: never[]) => E,
  note?: string,
): Promise<E> {
  const error = await failureOf(work);
  expect(error, note).toBeInstanceOf(type);
  expect((error as E).code, note).toBe(CODES.get(type));
  return error as E;
}

describe('redisStore', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('lays keys out as prefix, namespace and the idempotency key as a hash tag', async () => {
    const key = `layout-${randomUUID()}`;
    await redisStore({ client, prefix: PREFIX }).claim(requestFor(key));
    await redisStore({ client, prefix: PREFIX, namespace: 'crm' }).claim(requestFor(key));
    await redisStore({ client, prefix: PREFIX }).claim(requestFor(`${key}{a}%`));
    expect(await client.exists(`${PREFIX}{${key}}`)).toBe(1);
    expect(await client.exists(`${PREFIX}crm:{${key}}`)).toBe(1);
    expect(await client.exists(`${PREFIX}{${key}%7Ba%7D%25}`)).toBe(1);
    expect(await client.pttl(`${PREFIX}{${key}}`)).toBeGreaterThan(9_000);
  });

  it("lays a claim's records out as keys of their own, leased with the key and done with the records' completion", async () => {
    const store = redisStore({ client, prefix: PREFIX });
    const [key, first, second] = [`records-${randomUUID()}`, record(), record()];
    const holder = await claimed(store, key, {
      records: [first, second],
      recordsAs: { fingerprint: 'webhook', ttlMs: 120_000 },
    });
    for (const at of [key, first, second]) {
      expect(await client.get(redisKey(at)), at).toBe(`L:${holder.token}`);
      expect(await client.pttl(redisKey(at)), at).toBeGreaterThan(9_000);
    }
    await store.settle(holder, 'complete');
    expect(await client.get(redisKey(key))).toBe('D:fp');
    expect(await client.pttl(redisKey(key))).toBeLessThanOrEqual(60_000);
    for (const at of [first, second]) {
      expect(await client.get(redisKey(at)), at).toBe('D:webhook');
      expect(await client.pttl(redisKey(at)), at).toBeGreaterThan(60_000);
    }
  });

  it("keeps an entity's version and lease beside its hash tag; the lease holds the version before and its ttl, which a release puts back", async () => {
    const store = redisStore({ client, prefix: PREFIX });
    const e = entity();
    const [version, lease] = [`${redisKey(e)}:entity`, `${redisKey(e)}:entity-lease`];
    const at = (versionMs: number, ttlMs: number) =>
      claimed(store, `entity-layout-${randomUUID()}`, { version: { entity: e, versionMs, ttlMs } });

    // The first claim: its version is written at once, and its lease says there was none.
    const first = await at(1_000, 60_000);
    expect(await client.get(version)).toBe('1000');
    expect(await client.get(lease)).toBe(`L:${first.token}||-2`);
    expect(await client.pttl(lease)).toBeGreaterThan(9_000);
    expect(await client.pttl(lease)).toBeLessThanOrEqual(10_000);
    await store.settle(first, 'complete');
    expect(await client.exists(lease)).toBe(0);
    expect(await client.get(version)).toBe('1000');
    const appliedTtl = await client.pttl(version);
    expect(appliedTtl).toBeGreaterThan(50_000);

    // A newer one: its version is the newest at once (with its own ttl); the lease keeps 1 000
    // and the ttl it had left.
    const second = await at(2_000, 120_000);
    expect(await client.get(version)).toBe('2000');
    expect(await client.pttl(version)).toBeGreaterThan(110_000);
    const held = await client.get(lease);
    expect(held).toMatch(new RegExp(`^L:${second.token}\\|1000\\|\\d+$`));
    const keptTtl = Number(held?.split('|')[2]);
    expect(keptTtl).toBeLessThanOrEqual(appliedTtl);
    expect(keptTtl).toBeGreaterThan(appliedTtl - 5_000);

    // Released: 1 000 is back, with the ttl the lease kept, and the lease is gone.
    await store.settle(second, 'release');
    expect(await client.exists(lease)).toBe(0);
    expect(await client.get(version)).toBe('1000');
    expect(await client.pttl(version)).toBeLessThanOrEqual(keptTtl);
    expect(await client.pttl(version)).toBeGreaterThan(keptTtl - 5_000);
  });

  it('reads a lease of the layout before (no version in it) as holding the version the entity key has', async () => {
    // A lease an older version of the store took: `L:<token>`, the applied version at :entity.
    const store = redisStore({ client, prefix: PREFIX });
    const e = entity();
    await client.set(`${redisKey(e)}:entity`, '1000', 'PX', 60_000);
    await client.set(`${redisKey(e)}:entity-lease`, 'L:older-token', 'PX', 10_000);
    const at = (versionMs: number) =>
      store.claim(requestFor(`old-lease-${randomUUID()}`, { version: { entity: e, versionMs } }));
    expect(heldOf(await at(999)).superseded).toBe(true);
    expect(await at(1_000)).toEqual({ state: 'in_flight', held: 'entity' });
    expect(await at(2_000)).toEqual({ state: 'in_flight', held: 'entity' });
    // Nothing of it was changed by those claims.
    expect(await client.get(`${redisKey(e)}:entity-lease`)).toBe('L:older-token');
    expect(await client.get(`${redisKey(e)}:entity`)).toBe('1000');
  });

  it('uses the default prefix schoolhooks:', async () => {
    const key = `default-prefix-${randomUUID()}`;
    const store = redisStore({ client });
    const claim = await claimed(store, key);
    expect(await client.exists(`schoolhooks:{${key}}`)).toBe(1);
    await store.settle(claim, 'release');
    expect(await client.exists(`schoolhooks:{${key}}`)).toBe(0);
  });

  it('keeps two namespaces on one Redis apart', async () => {
    const crm = redisStore({ client, prefix: PREFIX, namespace: 'crm' });
    const mail = redisStore({ client, prefix: PREFIX, namespace: 'mail' });
    const plain = redisStore({ client, prefix: PREFIX });
    const key = `ns-${randomUUID()}`;
    const claim = await claimed(crm, key);
    expect((await mail.claim(requestFor(key))).state).toBe('claimed');
    await crm.settle(claim, 'complete');
    expect(await crm.claim(requestFor(key))).toEqual({ state: 'done', fingerprint: 'fp' });
    expect(await mail.claim(requestFor(key))).toEqual(IN_FLIGHT);
    expect((await plain.claim(requestFor(key))).state).toBe('claimed');
  });

  it('sees the claims of another store (another process) on the same prefix', async () => {
    const other = new Redis(redis.url);
    try {
      const key = `shared-${randomUUID()}`;
      const claim = await claimed(redisStore({ client, prefix: PREFIX }), key);
      const elsewhere = redisStore({ client: other, prefix: PREFIX });
      expect(await elsewhere.claim(requestFor(key))).toEqual(IN_FLIGHT);
      await redisStore({ client, prefix: PREFIX }).settle(claim, 'complete');
      expect(await elsewhere.claim(requestFor(key))).toEqual({ state: 'done', fingerprint: 'fp' });
    } finally {
      other.disconnect();
    }
  });

  it('starts a lazyConnect client instead of failing forever', async () => {
    const lazy = new Redis(redis.url, { lazyConnect: true });
    try {
      expect(lazy.status).toBe('wait');
      const store = redisStore({ client: lazy, prefix: PREFIX });
      expect((await store.claim(requestFor(`lazy-${randomUUID()}`))).state).toBe('claimed');
    } finally {
      lazy.disconnect();
    }
  });

  it('waits for a client that is still connecting, within commandTimeoutMs', async () => {
    const fresh = new Redis(redis.url);
    try {
      expect(fresh.status).toBe('connecting');
      const store = redisStore({ client: fresh, prefix: PREFIX });
      expect((await store.claim(requestFor(`fresh-${randomUUID()}`))).state).toBe('claimed');
    } finally {
      fresh.disconnect();
    }
  });

  it('waits for a client connecting again to settle, complete or release, rather than failing', async () => {
    const own = new Redis(redis.url);
    try {
      const store = redisStore({ client: own, prefix: PREFIX });
      const keys = [`again-done-${randomUUID()}`, `again-free-${randomUUID()}`] as const;
      const claims = [await claimed(store, keys[0]), await claimed(store, keys[1])];
      // The application closes its connection and opens it again while the deliveries end.
      own.disconnect();
      await vi.waitFor(() => expect(own.status).toBe('end'));
      own.connect().catch(() => {});
      expect(own.status).toBe('connecting');
      await Promise.all([
        store.settle(claims[0]!, 'complete'),
        store.settle(claims[1]!, 'release'),
      ]);
      expect(await client.get(redisKey(keys[0]))).toBe('D:fp');
      expect(await client.exists(redisKey(keys[1]))).toBe(0);
    } finally {
      own.disconnect();
    }
  });

  it.each([
    ['behind', -5_000],
    ['ahead of', 5_000],
  ])('claims while this process’s clock is 5 s %s Redis’s', async (_, skew) => {
    const realNow = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + skew);
    const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: 500 });
    for (let i = 0; i < 3; i++) {
      expect((await store.claim(requestFor(`skew-${randomUUID()}`))).state).toBe('claimed');
    }
  });

  /**
   * This process's clock, `shift` ms off the real one, and a count of the scripts the store sends;
   * `duringCall` runs as the next script is sent (after the store read the clock for it).
   */
  function skewedClock(): {
    setShift(ms: number): void;
    duringNextCall(action: () => void): void;
    calls(): number;
  } {
    let shift = 0;
    let next: (() => void) | undefined;
    let count = 0;
    const realNow = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + shift);
    const send = client.evalsha.bind(client) as (...args: unknown[]) => Promise<unknown>;
    const spy = vi.spyOn(client, 'evalsha') as unknown as {
      mockImplementation(fn: (...args: unknown[]) => Promise<unknown>): void;
    };
    spy.mockImplementation((...args) => {
      count++;
      const action = next;
      next = undefined;
      action?.();
      return send(...args);
    });
    return {
      setShift: (ms) => (shift = ms),
      duringNextCall: (action) => (next = action),
      calls: () => count,
    };
  }

  it('never learns Redis’s clock from a slow answer', async () => {
    const clock = skewedClock();
    const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: 1000 });
    // The clock jumps 10 s ahead while the claim is on its way: its round trip looks 10 s long,
    // so when Redis read its clock cannot be told, and the sample is dropped.
    clock.duringNextCall(() => clock.setShift(10_000));
    expect((await store.claim(requestFor(`slow-${randomUUID()}`))).state).toBe('claimed');
    clock.setShift(0);
    const before = clock.calls();
    expect((await store.claim(requestFor(`after-slow-${randomUUID()}`))).state).toBe('claimed');
    // Sent once: not refused as late after a wrong estimate, and sent again.
    expect(clock.calls() - before).toBe(1);
  });

  it('learns Redis’s clock from a quick answer that was not late', async () => {
    const clock = skewedClock();
    const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: 1000 });
    // 5 s ahead: claims are in time, and each quick answer says the clock is 5 s ahead.
    clock.setShift(5_000);
    expect((await store.claim(requestFor(`ahead-${randomUUID()}`))).state).toBe('claimed');
    // The clock is set right: the estimate learnt above is now 5 s off, so Redis refuses the
    // next claim as late, the store corrects the estimate from that answer and sends it again.
    clock.setShift(0);
    const before = clock.calls();
    expect((await store.claim(requestFor(`set-right-${randomUUID()}`))).state).toBe('claimed');
    expect(clock.calls() - before).toBe(2);
    // Corrected: the next one goes through at once.
    expect((await store.claim(requestFor(`corrected-${randomUUID()}`))).state).toBe('claimed');
    expect(clock.calls() - before).toBe(3);
  });

  it('refuses a prefix or namespace with braces, and a commandTimeoutMs that is not positive', () => {
    const braces = 'redisStore: prefix and namespace must not contain "{" or "}"';
    const timeout = 'redisStore: commandTimeoutMs must be a positive number';
    expect(configRefusal(() => redisStore({ client, prefix: 'a{b}:' })).message).toBe(braces);
    expect(configRefusal(() => redisStore({ client, namespace: '{x}' })).message).toBe(braces);
    expect(configRefusal(() => redisStore({ client, commandTimeoutMs: 0 })).message).toBe(timeout);
    expect(configRefusal(() => redisStore({ client, commandTimeoutMs: -1 })).message).toBe(timeout);
    expect(configRefusal(() => redisStore({ client, commandTimeoutMs: Number.NaN })).message).toBe(
      timeout,
    );
  });

  it('refuses an infinite commandTimeoutMs, and takes any prefix or namespace without braces', () => {
    expect(
      configRefusal(() => redisStore({ client, commandTimeoutMs: Number.POSITIVE_INFINITY }))
        .message,
    ).toBe('redisStore: commandTimeoutMs must be a positive number');
    expect(configRefusal(() => redisStore({ client, prefix: 'a}' })).message).toBe(
      'redisStore: prefix and namespace must not contain "{" or "}"',
    );
    expect(configRefusal(() => redisStore({ client, namespace: 'x}' })).code).toBe('config');
    expect(() => redisStore({ client, prefix: 'a:b%', namespace: 'c:d' })).not.toThrow();
  });

  it('refuses a lease or a version ttl that is not a positive number of ms, or a version that is not finite, taking nothing; rounds a fraction up', async () => {
    const store = redisStore({ client, prefix: PREFIX });
    const [key, e] = [`ms-${randomUUID()}`, entity()];
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      const lease = await refusal(
        store.claim(requestFor(key, { leaseMs: bad })),
        ConfigError,
        String(bad),
      );
      expect(lease.message).toBe('redisStore: leaseMs must be a positive number of milliseconds');
      const ttl = await refusal(
        store.claim(requestFor(key, { version: { entity: e, versionMs: 1, ttlMs: bad } })),
        ConfigError,
        String(bad),
      );
      expect(ttl.message).toBe(
        'redisStore: version ttlMs must be a positive number of milliseconds',
      );
    }
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      const version = await refusal(
        store.claim(requestFor(key, { version: { entity: e, versionMs: bad } })),
        ConfigError,
        String(bad),
      );
      expect(version.message).toBe('redisStore: versionMs must be a finite number of milliseconds');
    }
    expect(await client.exists(redisKey(key), `${redisKey(e)}:entity-lease`)).toBe(0);
    const claim = await claimed(store, key, { leaseMs: 0.2 });
    expect(claim.state).toBe('claimed');
    await new Promise((resolve) => setTimeout(resolve, 5));
    // PX 1: gone after a millisecond, so the key is free again.
    expect((await store.claim(requestFor(key))).state).toBe('claimed');
  });

  it('refuses a completion ttl that is not a positive number of ms at claim time, taking nothing it could not settle', async () => {
    // A claim whose completion could never be sent would hold the key, its records and its
    // entity (at its version) for the whole lease: neither its completion nor its release could
    // end them.
    const store = redisStore({ client, prefix: PREFIX });
    const [key, r, e] = [`ttl-${randomUUID()}`, record(), entity()];
    const version = { entity: e, versionMs: 1_000 };
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      const own = await refusal(
        store.claim(requestFor(key, { ttlMs: bad, records: [r], version })),
        ConfigError,
        String(bad),
      );
      expect(own.message).toBe('redisStore: ttlMs must be a positive number of milliseconds');
      const records = await refusal(
        store.claim(
          requestFor(key, { records: [r], recordsAs: { fingerprint: 'webhook', ttlMs: bad } }),
        ),
        ConfigError,
        String(bad),
      );
      expect(records.message).toBe(
        'redisStore: records ttlMs must be a positive number of milliseconds',
      );
    }
    const untouched = [redisKey(key), redisKey(r), `${redisKey(e)}:entity`];
    expect(await client.exists(...untouched, `${redisKey(e)}:entity-lease`)).toBe(0);
    // A fraction is rounded up: PX 1, so the key is soon free again.
    const fraction = await claimed(store, key, { ttlMs: 0.5, records: [r], version });
    await store.settle(fraction, 'complete');
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await client.exists(redisKey(key))).toBe(0);
  });

  it('refuses to guess when the key, a record or the entity holds a value it did not write', async () => {
    const store = redisStore({ client, prefix: PREFIX });
    const foreign = 'something else';
    const message = 'Redis claim failed: the key holds a value this store did not write';
    const [key, r, e] = [`foreign-${randomUUID()}`, record(), entity()];
    await client.set(redisKey(key), foreign, 'PX', 10_000);
    const ownKey = await refusal(store.claim(requestFor(key)), StoreUnavailableError);
    expect(ownKey.message).toBe(message);

    await client.set(redisKey(r), foreign, 'PX', 10_000);
    const free = `foreign-free-${randomUUID()}`;
    const ofRecord = await refusal(
      store.claim(requestFor(free, { records: [r] })),
      StoreUnavailableError,
    );
    expect(ofRecord.message).toBe(message);

    await client.set(`${redisKey(e)}:entity-lease`, foreign, 'PX', 10_000);
    const ofEntity = await refusal(
      store.claim(requestFor(free, { version: { entity: e, versionMs: 1 } })),
      StoreUnavailableError,
    );
    expect(ofEntity.message).toBe(message);
    // Nothing was taken, and nothing of another's was changed.
    expect(await client.exists(redisKey(free))).toBe(0);
    expect(await client.mget(redisKey(key), redisKey(r), `${redisKey(e)}:entity-lease`)).toEqual([
      foreign,
      foreign,
      foreign,
    ]);
    // A peek refuses to call it in flight or done as well.
    const peeked = await refusal(store.peek([free, key]), StoreUnavailableError);
    expect(peeked.message).toBe(message);
  });

  it('refuses a claim reply it does not understand', async () => {
    const store = redisStore({ client, prefix: PREFIX });
    const replies: unknown[] = [
      null,
      'OK',
      ['claimed'],
      ['maybe', '1700000000', '0'],
      ['claimed', 1_700_000_000, '0', 0],
      ['claimed', '1700000000', 0, 0],
      // No word on the version, or one that is neither 0 nor 1.
      ['claimed', '1700000000', '0'],
      ['claimed', '1700000000', '0', 2],
      ['claimed', '1700000000', '0', '0'],
      // A record's value before that is not a string.
      ['claimed', '1700000000', '0', 0, 7],
      ['claimed', '1700000000', '0', 0, null],
      ['late', 1_700_000_000, '0'],
      ['held', '1700000000', '0', 'key', 42],
      ['held', '1700000000', '0', 'lease', 'L:x'],
    ];
    for (const reply of replies) {
      const spy = vi.spyOn(client, 'evalsha') as unknown as {
        mockResolvedValueOnce(value: unknown): void;
        mockRestore(): void;
      };
      spy.mockResolvedValueOnce(reply);
      const claiming = store.claim(requestFor(`odd-${randomUUID()}`));
      const error = await refusal(claiming, StoreUnavailableError, JSON.stringify(reply));
      expect(error.message, JSON.stringify(reply)).toBe(
        'Redis claim failed: unexpected reply from the claim script',
      );
      spy.mockRestore();
    }
  });

  it('sends the script itself only when Redis does not know it, never after another error', async () => {
    const store = redisStore({ client, prefix: PREFIX });
    const key = `busy-${randomUUID()}`;
    const spy = vi.spyOn(client, 'evalsha') as unknown as {
      mockRejectedValueOnce(error: unknown): void;
      mockRestore(): void;
    };
    spy.mockRejectedValueOnce(new Error('BUSY Redis is busy running a script'));
    const error = await refusal(store.claim(requestFor(key)), StoreUnavailableError);
    expect(error.message).toBe('Redis claim failed: BUSY Redis is busy running a script');
    spy.mockRestore();
    // No EVAL went after it: the key is still free.
    expect(await client.exists(redisKey(key))).toBe(0);
    expect((await store.claim(requestFor(key))).state).toBe('claimed');
  });

  it('refuses a held key, record or entity whose value is gone or unknown, rather than calling it in flight', async () => {
    // None is a reply the script sends (it runs atomically, so what it found held has a value):
    // no value is no lease, so the claim is refused, not answered in flight.
    const cases: [unknown[], string][] = [
      [['held', '1700000000', '0', 'key'], 'unexpected reply from the claim script'],
      [['held', '1700000000', '0', 'key', null], 'unexpected reply from the claim script'],
      [['held', '1700000000', '0', 'record', null], 'unexpected reply from the claim script'],
      [['held', '1700000000', '0', 'entity'], 'unexpected reply from the claim script'],
      [['held', '1700000000', '0', 'key', 'x'], 'the key holds a value this store did not write'],
      [
        ['held', '1700000000', '0', 'record', 'x'],
        'the key holds a value this store did not write',
      ],
      [['held', '1700000000', '0', 'entity', ''], 'the key holds a value this store did not write'],
    ];
    for (const [reply, why] of cases) {
      const spy = vi.spyOn(client, 'evalsha') as unknown as {
        mockResolvedValueOnce(value: unknown): void;
        mockRestore(): void;
      };
      spy.mockResolvedValueOnce(reply);
      const claiming = redisStore({ client, prefix: PREFIX }).claim(
        requestFor(`gone-${randomUUID()}`),
      );
      const error = await refusal(claiming, StoreUnavailableError, JSON.stringify(reply));
      expect(error.message, JSON.stringify(reply)).toBe(`Redis claim failed: ${why}`);
      spy.mockRestore();
    }
  });

  it('keeps the fingerprint of a done key, and of its records, whole, even one that looks like a lease', async () => {
    const store = redisStore({ client, prefix: PREFIX });
    const [key, r] = [`fp-${randomUUID()}`, record()];
    const claim = await claimed(store, key, {
      fingerprint: 'L:D:fp',
      records: [r],
      recordsAs: { fingerprint: 'L:|1|2', ttlMs: 60_000 },
    });
    await store.settle(claim, 'complete');
    expect(await store.claim(requestFor(key))).toEqual({ state: 'done', fingerprint: 'L:D:fp' });
    expect(await client.get(redisKey(key))).toBe('D:L:D:fp');
    expect(await client.pttl(redisKey(key))).toBeGreaterThan(59_000);
    expect(await store.peek([r])).toEqual([{ state: 'done', fingerprint: 'L:|1|2' }]);
    expect(
      heldOf(await store.claim(requestFor(`fp-${randomUUID()}`, { records: [r] }))).records,
    ).toEqual([{ state: 'done', fingerprint: 'L:|1|2' }]);
  });

  it('releases only the key it holds, and leaves a done key done', async () => {
    const store = redisStore({ client, prefix: PREFIX });
    const key = `release-${randomUUID()}`;
    const claim = await claimed(store, key);
    expect(await client.get(redisKey(key))).toBe(`L:${claim.token}`);
    await store.settle(claim, 'release');
    expect(await client.exists(redisKey(key))).toBe(0);
    const done = `release-done-${randomUUID()}`;
    const completed = await claimed(store, done);
    await store.settle(completed, 'complete');
    await store.settle(completed, 'release');
    expect(await client.get(redisKey(done))).toBe('D:fp');
  });

  it('imports nothing but types from ioredis', async () => {
    const source = await readFile(new URL('../../src/stores/redis.ts', import.meta.url), 'utf8');
    const imports = source.match(/^import .* from 'ioredis';$/gm) ?? [];
    expect(imports).toEqual(["import type { Cluster, Redis } from 'ioredis';"]);
  });
});

async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}
