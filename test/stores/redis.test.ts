import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConfigError, StoreUnavailableError } from '../../src/errors.js';
import { redisStore, type RedisStoreOptions } from '../../src/stores/redis.js';
import { useTestRedis, type TestRedis } from '../helpers/redis.js';
import { describeStoreContract, type StoreUnderTest } from './contract.js';

// One prefix per run, so parallel runs against a shared Redis never meet.
const PREFIX = `schoolhooks-test:${randomUUID()}:`;

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

describe('redisStore', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('lays keys out as prefix, namespace and the idempotency key as a hash tag', async () => {
    const key = `layout-${randomUUID()}`;
    await redisStore({ client, prefix: PREFIX }).claim(key, 10_000);
    await redisStore({ client, prefix: PREFIX, namespace: 'crm' }).claim(key, 10_000);
    await redisStore({ client, prefix: PREFIX }).claim(`${key}{a}%`, 10_000);
    expect(await client.exists(`${PREFIX}{${key}}`)).toBe(1);
    expect(await client.exists(`${PREFIX}crm:{${key}}`)).toBe(1);
    expect(await client.exists(`${PREFIX}{${key}%7Ba%7D%25}`)).toBe(1);
    expect(await client.pttl(`${PREFIX}{${key}}`)).toBeGreaterThan(9_000);
  });

  it('uses the default prefix schoolhooks:', async () => {
    const key = `default-prefix-${randomUUID()}`;
    const store = redisStore({ client });
    const claim = await store.claim(key, 10_000);
    expect(await client.exists(`schoolhooks:{${key}}`)).toBe(1);
    if (claim.state === 'claimed') await store.release(key, claim.token);
    expect(await client.exists(`schoolhooks:{${key}}`)).toBe(0);
  });

  it('keeps two namespaces on one Redis apart', async () => {
    const crm = redisStore({ client, prefix: PREFIX, namespace: 'crm' });
    const mail = redisStore({ client, prefix: PREFIX, namespace: 'mail' });
    const plain = redisStore({ client, prefix: PREFIX });
    const key = `ns-${randomUUID()}`;
    const claim = await crm.claim(key, 10_000);
    expect((await mail.claim(key, 10_000)).state).toBe('claimed');
    if (claim.state === 'claimed') await crm.complete(key, claim.token, 60_000, 'fp');
    expect(await crm.claim(key, 10_000)).toEqual({ state: 'done', fingerprint: 'fp' });
    expect(await mail.claim(key, 10_000)).toEqual({ state: 'in_flight' });
    expect((await plain.claim(key, 10_000)).state).toBe('claimed');
  });

  it('sees the claims of another store (another process) on the same prefix', async () => {
    const other = new Redis(redis.url);
    try {
      const key = `shared-${randomUUID()}`;
      const claim = await redisStore({ client, prefix: PREFIX }).claim(key, 10_000);
      const elsewhere = redisStore({ client: other, prefix: PREFIX });
      expect(await elsewhere.claim(key, 10_000)).toEqual({ state: 'in_flight' });
      if (claim.state === 'claimed') {
        await redisStore({ client, prefix: PREFIX }).complete(key, claim.token, 60_000, 'fp');
      }
      expect(await elsewhere.claim(key, 10_000)).toEqual({ state: 'done', fingerprint: 'fp' });
    } finally {
      other.disconnect();
    }
  });

  it('starts a lazyConnect client instead of failing forever', async () => {
    const lazy = new Redis(redis.url, { lazyConnect: true });
    try {
      expect(lazy.status).toBe('wait');
      const store = redisStore({ client: lazy, prefix: PREFIX });
      expect((await store.claim(`lazy-${randomUUID()}`, 10_000)).state).toBe('claimed');
    } finally {
      lazy.disconnect();
    }
  });

  it('waits for a client that is still connecting, within commandTimeoutMs', async () => {
    const fresh = new Redis(redis.url);
    try {
      expect(fresh.status).toBe('connecting');
      const store = redisStore({ client: fresh, prefix: PREFIX });
      expect((await store.claim(`fresh-${randomUUID()}`, 10_000)).state).toBe('claimed');
    } finally {
      fresh.disconnect();
    }
  });

  it('waits for a client connecting again to complete or release, rather than failing', async () => {
    const own = new Redis(redis.url);
    try {
      const store = redisStore({ client: own, prefix: PREFIX });
      const keys = [`again-done-${randomUUID()}`, `again-free-${randomUUID()}`] as const;
      const tokens: string[] = [];
      for (const key of keys) {
        const claim = await store.claim(key, 10_000);
        if (claim.state !== 'claimed') throw new Error(`expected a claim, got ${claim.state}`);
        tokens.push(claim.token);
      }
      // The application closes its connection and opens it again while the deliveries end.
      own.disconnect();
      await vi.waitFor(() => expect(own.status).toBe('end'));
      own.connect().catch(() => {});
      expect(own.status).toBe('connecting');
      await Promise.all([
        store.complete(keys[0], tokens[0]!, 60_000, 'fp'),
        store.release(keys[1], tokens[1]!),
      ]);
      expect(await client.get(`${PREFIX}{${keys[0]}}`)).toBe('D:fp');
      expect(await client.exists(`${PREFIX}{${keys[1]}}`)).toBe(0);
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
      expect((await store.claim(`skew-${randomUUID()}`, 10_000)).state).toBe('claimed');
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
    expect((await store.claim(`slow-${randomUUID()}`, 10_000)).state).toBe('claimed');
    clock.setShift(0);
    const before = clock.calls();
    expect((await store.claim(`after-slow-${randomUUID()}`, 10_000)).state).toBe('claimed');
    // Sent once: not refused as late after a wrong estimate, and sent again.
    expect(clock.calls() - before).toBe(1);
  });

  it('learns Redis’s clock from a quick answer that was not late', async () => {
    const clock = skewedClock();
    const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: 1000 });
    // 5 s ahead: claims are in time, and each quick answer says the clock is 5 s ahead.
    clock.setShift(5_000);
    expect((await store.claim(`ahead-${randomUUID()}`, 10_000)).state).toBe('claimed');
    // The clock is set right: the estimate learnt above is now 5 s off, so Redis refuses the
    // next claim as late, the store corrects the estimate from that answer and sends it again.
    clock.setShift(0);
    const before = clock.calls();
    expect((await store.claim(`set-right-${randomUUID()}`, 10_000)).state).toBe('claimed');
    expect(clock.calls() - before).toBe(2);
    // Corrected: the next one goes through at once.
    expect((await store.claim(`corrected-${randomUUID()}`, 10_000)).state).toBe('claimed');
    expect(clock.calls() - before).toBe(3);
  });

  it('refuses a prefix or namespace with braces, and a commandTimeoutMs that is not positive', () => {
    expect(() => redisStore({ client, prefix: 'a{b}:' })).toThrow(ConfigError);
    expect(() => redisStore({ client, namespace: '{x}' })).toThrow(ConfigError);
    expect(() => redisStore({ client, commandTimeoutMs: 0 })).toThrow(ConfigError);
    expect(() => redisStore({ client, commandTimeoutMs: Number.NaN })).toThrow(ConfigError);
  });

  it('refuses an infinite commandTimeoutMs, and takes any prefix or namespace without braces', () => {
    expect(() => redisStore({ client, commandTimeoutMs: Number.POSITIVE_INFINITY })).toThrow(
      'redisStore: commandTimeoutMs must be a positive number',
    );
    expect(() => redisStore({ client, prefix: 'a}' })).toThrow(
      'redisStore: prefix and namespace must not contain "{" or "}"',
    );
    expect(() => redisStore({ client, namespace: 'x}' })).toThrow(ConfigError);
    expect(() => redisStore({ client, prefix: 'a:b%', namespace: 'c:d' })).not.toThrow();
  });

  it('refuses a lease or ttl that is not a positive number of ms, and rounds a fraction up', async () => {
    const store = redisStore({ client, prefix: PREFIX });
    const key = `ms-${randomUUID()}`;
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      const claiming = store.claim(key, bad);
      await expect(claiming, String(bad)).rejects.toBeInstanceOf(ConfigError);
      await expect(claiming, String(bad)).rejects.toMatchObject({
        code: 'config',
        message: 'redisStore: leaseMs must be a positive number of milliseconds',
      });
    }
    const claim = await store.claim(key, 0.2);
    expect(claim.state).toBe('claimed');
    await new Promise((resolve) => setTimeout(resolve, 5));
    // PX 1: gone after a millisecond, so the key is free again.
    expect((await store.claim(key, 10_000)).state).toBe('claimed');
    const token = (await store.claim(`${key}-2`, 10_000)) as { token: string };
    const completing = store.complete(`${key}-2`, token.token, 0, 'fp');
    await expect(completing).rejects.toBeInstanceOf(ConfigError);
    await expect(completing).rejects.toMatchObject({
      code: 'config',
      message: 'redisStore: ttlMs must be a positive number of milliseconds',
    });
  });

  it('refuses to guess when the key holds a value it did not write', async () => {
    const store = redisStore({ client, prefix: PREFIX });
    const key = `foreign-${randomUUID()}`;
    await client.set(`${PREFIX}{${key}}`, 'something else', 'PX', 10_000);
    const claiming = store.claim(key, 10_000);
    await expect(claiming).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(claiming).rejects.toMatchObject({
      code: 'store_unavailable',
      message: 'Redis claim failed: the key holds a value this store did not write',
    });
  });

  it('refuses a claim reply it does not understand', async () => {
    const store = redisStore({ client, prefix: PREFIX });
    const replies: unknown[] = [
      null,
      'OK',
      ['claimed'],
      ['maybe', '1700000000', '0'],
      ['claimed', 1_700_000_000, '0'],
      ['claimed', '1700000000', 0],
      ['held', '1700000000', '0', 42],
    ];
    for (const reply of replies) {
      const spy = vi.spyOn(client, 'evalsha') as unknown as {
        mockResolvedValueOnce(value: unknown): void;
        mockRestore(): void;
      };
      spy.mockResolvedValueOnce(reply);
      const claiming = store.claim(`odd-${randomUUID()}`, 10_000);
      await expect(claiming, JSON.stringify(reply)).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(claiming, JSON.stringify(reply)).rejects.toMatchObject({
        code: 'store_unavailable',
        message: 'Redis claim failed: unexpected reply from the claim script',
      });
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
    const claiming = store.claim(key, 10_000);
    await expect(claiming).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(claiming).rejects.toMatchObject({
      code: 'store_unavailable',
      message: 'Redis claim failed: BUSY Redis is busy running a script',
    });
    spy.mockRestore();
    // No EVAL went after it: the key is still free.
    expect(await client.exists(`${PREFIX}{${key}}`)).toBe(0);
    expect((await store.claim(key, 10_000)).state).toBe('claimed');
  });

  it('refuses a held key whose value is gone or unknown, rather than calling it in flight', async () => {
    // Neither is a reply the script sends (it runs atomically, so a held key has a value): no
    // value is no lease, so the claim is refused, not answered in flight.
    for (const reply of [
      ['held', '1700000000', '0'],
      ['held', '1700000000', '0', null],
    ]) {
      const spy = vi.spyOn(client, 'evalsha') as unknown as {
        mockResolvedValueOnce(value: unknown): void;
        mockRestore(): void;
      };
      spy.mockResolvedValueOnce(reply);
      const claiming = redisStore({ client, prefix: PREFIX }).claim(`gone-${randomUUID()}`, 10_000);
      await expect(claiming).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(claiming).rejects.toMatchObject({
        code: 'store_unavailable',
        message: 'Redis claim failed: the key holds a value this store did not write',
      });
      spy.mockRestore();
    }
  });

  it('keeps the fingerprint of a done key whole, even one that looks like a lease', async () => {
    const store = redisStore({ client, prefix: PREFIX });
    const key = `fp-${randomUUID()}`;
    const claim = (await store.claim(key, 10_000)) as { token: string };
    await store.complete(key, claim.token, 60_000, 'L:D:fp');
    expect(await store.claim(key, 10_000)).toEqual({ state: 'done', fingerprint: 'L:D:fp' });
    expect(await client.get(`${PREFIX}{${key}}`)).toBe('D:L:D:fp');
    expect(await client.pttl(`${PREFIX}{${key}}`)).toBeGreaterThan(59_000);
  });

  it('releases only the key it holds, and leaves a done key done', async () => {
    const store = redisStore({ client, prefix: PREFIX });
    const key = `release-${randomUUID()}`;
    const claim = (await store.claim(key, 10_000)) as { token: string };
    expect(await client.get(`${PREFIX}{${key}}`)).toBe(`L:${claim.token}`);
    await store.release(key, claim.token);
    expect(await client.exists(`${PREFIX}{${key}}`)).toBe(0);
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
