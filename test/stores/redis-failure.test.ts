import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../src/errors.js';
import { redisStore } from '../../src/stores/redis.js';
import { CLAIM, SETTLE } from '../../src/stores/redis-scripts.js';
import type { HeldClaim, IdempotencyStore } from '../../src/stores/types.js';
import { failureOf } from '../helpers/failure-of.js';
import {
  sleep,
  startRedisCluster,
  startRedisServer,
  type RedisClusterProcess,
  type RedisServerProcess,
} from '../helpers/redis.js';
import { describeStoreContract, heldOf, requestFor } from './contract.js';

const TIMEOUT_MS = 300;
// "Within about commandTimeoutMs": the timeout plus scheduling slack.
const BOUND_MS = TIMEOUT_MS + 500;
const PREFIX = 'failure:';

let server: RedisServerProcess;
let client: Redis;
let store: IdempotencyStore;
let cluster: RedisClusterProcess;
let clusterClient: Cluster;

beforeAll(async () => {
  // One after the other: the cluster then sees the server's port taken (its bus port is port +
  // 10000), and afterAll stops whichever started even if the other failed.
  server = await startRedisServer();
  cluster = await startRedisCluster();
  // ioredis defaults (offline queue on, unfulfilled commands re-sent after a reconnect, 20
  // retries per request), only with a quicker reconnect so the suite stays short.
  client = new Redis(server.url, { retryStrategy: (attempt) => Math.min(attempt * 50, 500) });
  client.on('error', () => {});
  store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: TIMEOUT_MS });
  clusterClient = new Cluster([...cluster.nodes]);
  clusterClient.on('error', () => {});
  await Promise.all([client.ping(), clusterClient.ping()]);
}, 30_000);

afterAll(async () => {
  client?.disconnect();
  clusterClient?.disconnect();
  await Promise.all([server?.close(), cluster?.stop()]);
});

describe('redisStore when Redis fails', () => {
  it('fails within about commandTimeoutMs while Redis is down, and never runs those claims later', async () => {
    await server.stop();
    const keys: string[] = [];
    const elapsed: Record<string, number[]> = {};
    const endAt = Date.now() + 1500;
    // Straight after the stop (the socket may still look "ready"), then while ioredis reconnects.
    while (Date.now() < endAt) {
      const key = `down-${randomUUID()}`;
      keys.push(key);
      const status = client.status;
      const { error, elapsedMs } = await timed(store.claim(wholeRequest(key)));
      expectUnavailable(error);
      expect(elapsedMs).toBeLessThan(BOUND_MS);
      (elapsed[status] ??= []).push(elapsedMs);
      await sleep(50);
    }
    // While the client is not ready (reconnecting, or connecting to a server that refuses), a
    // claim fails at once rather than waiting in ioredis's offline queue.
    const notReady = Object.entries(elapsed).flatMap(([status, ms]) =>
      status === 'ready' ? [] : ms,
    );
    expect(notReady.length).toBeGreaterThan(3);
    expect(Math.max(...notReady)).toBeLessThan(100);
    const [key = ''] = keys;
    // A claim of the key, its record and its entity, as a delivery that claimed before the stop
    // would hold: its settle fails as fast.
    const held = claimOf(wholeRequest(key));
    for (const name of ['complete', 'release'] as const) {
      const { error, elapsedMs } = await timed(store.settle(held, name));
      expectUnavailable(error);
      expect((error as Error).message).toMatch(new RegExp(`^Redis ${name} failed: `));
      expect(elapsedMs).toBeLessThan(BOUND_MS);
    }
    // A claim of another key while those wait to be sent again fails as any other does.
    const other = await timed(store.claim(requestFor(`other-${randomUUID()}`)));
    expectUnavailable(other.error);
    // So does a peek.
    const peek = await timed(store.peek([key]));
    expectUnavailable(peek.error);
    expect((peek.error as Error).message).toMatch(/^Redis peek failed: /);

    await server.start();
    await untilReady(client);
    // The fresh server has run nothing but what the client sent since it came back: no SET.
    expect(await commandCalls(client, 'set')).toBe(0);
    expect(await client.exists(...keys.map(redisKey))).toBe(0);
    expect(
      await client.exists(...keys.flatMap((k) => [redisKey(recordOf(k)), entityLease(k)])),
    ).toBe(0);
    // The same store instance works again; no state of its own was broken.
    expect(heldOf(await store.claim(wholeRequest(key))).records).toEqual([{ state: 'held' }]);
  });

  it('lets nothing of a claim that timed out on a frozen Redis land when it wakes up', async () => {
    // Redis knows the script, so the late claim really runs there and the script refuses it.
    await store.claim(requestFor(`warm-${randomUUID()}`, { leaseMs: 1000 }));
    await client.config('RESETSTAT');
    const key = `frozen-${randomUUID()}`;
    server.pause();
    try {
      // The connection stays "ready": the claim is written to the socket and waits there.
      const { error, elapsedMs } = await timed(store.claim(wholeRequest(key)));
      expectUnavailable(error);
      expect((error as Error).message).toBe(`Redis did not answer claim within ${TIMEOUT_MS} ms`);
      expect(elapsedMs).toBeLessThan(BOUND_MS);
      expect(client.status).toBe('ready');
    } finally {
      server.resume();
    }
    // Same connection, so Redis runs this PING after the claim script it had buffered.
    await client.ping();
    expect(await commandCalls(client, 'evalsha')).toBe(1);
    expect(await commandCalls(client, 'set')).toBe(0);
    expect(await client.exists(redisKey(key), redisKey(recordOf(key)), entityLease(key))).toBe(0);
  });

  it('lets nothing of a claim that ioredis re-sends after a reconnect land', async () => {
    const key = `resent-${randomUUID()}`;
    server.pause();
    const { error, elapsedMs } = await timed(store.claim(wholeRequest(key)));
    expectUnavailable(error);
    expect(elapsedMs).toBeLessThan(BOUND_MS);
    // The claim sits in ioredis's queue of sent-but-unanswered commands; killing the server
    // drops the connection, and ioredis re-sends that queue once it is ready again.
    await server.kill();
    await server.start();
    await untilReady(client);
    await client.ping();
    // It was re-sent, met NOSCRIPT on the fresh server, and its EVAL retry was never sent: the
    // claim script (the only one that reads TIME) never ran. (The store also sends a release
    // of that claim, which got no answer, once the client is ready: it finds nothing to free.)
    expect(await commandCalls(client, 'evalsha')).toBeGreaterThanOrEqual(1);
    expect(await commandCalls(client, 'time')).toBe(0);
    expect(await commandCalls(client, 'set')).toBe(0);
    expect(await client.exists(redisKey(key), redisKey(recordOf(key)), entityLease(key))).toBe(0);
    expect((await store.claim(wholeRequest(key))).state).toBe('claimed');
  });

  it('fails at once on a client that was closed', async () => {
    const closed = new Redis(server.url);
    await closed.ping();
    await closed.quit();
    await until(() => closed.status === 'end');
    const { error, elapsedMs } = await timed(
      redisStore({ client: closed, commandTimeoutMs: TIMEOUT_MS }).claim(requestFor('k')),
    );
    expectUnavailable(error);
    expect((error as Error).message).toMatch(/not ready \(status: end\)/);
    expect(elapsedMs).toBeLessThan(100);
  });

  it('puts no password of the client URL into its errors', async () => {
    const port = server.port;
    const secret = 'hunter2-very-secret';
    const authed = new Redis(`redis://user:${secret}@127.0.0.1:${port}`, {
      retryStrategy: () => null,
    });
    authed.on('error', () => {});
    const { error } = await timed(
      redisStore({ client: authed, commandTimeoutMs: TIMEOUT_MS }).claim(requestFor('k')),
    );
    authed.disconnect();
    expectUnavailable(error);
    const seen = JSON.stringify(error, Object.getOwnPropertyNames(error));
    const cause = (error as Error).cause;
    expect(seen + String(cause) + JSON.stringify(cause)).not.toContain(secret);
  });

  it('loads its scripts again after Redis forgets them (SCRIPT FLUSH)', async () => {
    const key = `noscript-${randomUUID()}`;
    await client.script('FLUSH');
    const claim = heldOf(await store.claim(wholeRequest(key)));
    await client.script('FLUSH');
    await store.settle(claim, 'complete');
    await client.script('FLUSH');
    expect(await store.claim(requestFor(key))).toEqual({ state: 'done', fingerprint: 'fp' });
    expect(await store.peek([recordOf(key)])).toEqual([{ state: 'done', fingerprint: 'fp' }]);
    expect(await client.exists(entityLease(key))).toBe(0);
  });

  it('refuses complete and release from a token whose lease expired and was taken over', async () => {
    const key = `stale-${randomUUID()}`;
    const first = heldOf(
      await store.claim(requestFor(key, { leaseMs: 100, ttlMs: 999_999, fingerprint: 'stale' })),
    );
    await sleep(200);
    const second = heldOf(await store.claim(requestFor(key, { leaseMs: 60_000 })));
    const before = await client.pttl(redisKey(key));
    await store.settle(first, 'complete');
    await store.settle(first, 'release');
    expect(await client.get(redisKey(key))).toBe(`L:${second.token}`);
    expect(await client.pttl(redisKey(key))).toBeLessThanOrEqual(before);
    await store.settle(second, 'complete');
    expect(await client.get(redisKey(key))).toBe('D:fp');
  });
});

describe('redisStore on a Redis Cluster', () => {
  it('puts each key in the slot of its idempotency key alone, and spreads keys over the nodes', async () => {
    const prefix = `cluster-${randomUUID()}:`;
    const clusterStore = redisStore({ client: clusterClient, prefix, namespace: 'ns' });
    const keys = [
      ...Array.from({ length: 60 }, (_, i) => `spread-${i}`),
      'a{b}c',
      '{',
      '}{x}',
      '%',
    ];
    for (const key of keys) {
      expect((await clusterStore.claim(requestFor(key))).state).toBe('claimed');
    }
    for (const key of keys) {
      const escaped = key.replace(/%/g, '%25').replace(/\{/g, '%7B').replace(/\}/g, '%7D');
      const stored = `${prefix}ns:{${escaped}}`;
      expect(await clusterClient.exists(stored)).toBe(1);
      expect(await clusterClient.cluster('KEYSLOT', stored)).toBe(
        await clusterClient.cluster('KEYSLOT', escaped),
      );
    }
    const sizes = await Promise.all(clusterClient.nodes('master').map((node) => node.dbsize()));
    expect(sizes).toHaveLength(3);
    for (const size of sizes) expect(size).toBeGreaterThan(0);
  });

  it('sends a claim whose key, record and entity fall in three slots as one script per slot, and its settle too', async () => {
    const prefix = `cluster-slots-${randomUUID()}:`;
    const clusterStore = redisStore({ client: clusterClient, prefix });
    const [key, r, e] = await threeSlots();
    const masters = clusterClient.nodes('master');
    // Every node knows both scripts, so each is one EVALSHA (no NOSCRIPT, no EVAL).
    await Promise.all(
      masters.flatMap((node) => [node.script('LOAD', CLAIM.lua), node.script('LOAD', SETTLE.lua)]),
    );
    await Promise.all(masters.map((node) => node.config('RESETSTAT')));
    const request = requestFor(key, { records: [r], version: { entity: e, versionMs: 1_000 } });
    const claim = heldOf(await clusterStore.claim(request));
    expect(claim.records).toEqual([{ state: 'held' }]);
    expect(await scriptsRun(masters)).toEqual({ evalsha: 3, eval: 0 });
    await clusterStore.settle(claim, 'complete');
    expect(await scriptsRun(masters)).toEqual({ evalsha: 6, eval: 0 });
    expect(await clusterStore.peek([key, r])).toEqual([
      { state: 'done', fingerprint: 'fp' },
      { state: 'done', fingerprint: 'fp' },
    ]);
    const older = requestFor(`older-${randomUUID()}`, { version: { entity: e, versionMs: 999 } });
    expect(heldOf(await clusterStore.claim(older)).superseded).toBe(true);
  });

  it('gives back what the other slots took when one holds a value it did not write', async () => {
    const prefix = `cluster-foreign-${randomUUID()}:`;
    const clusterStore = redisStore({ client: clusterClient, prefix });
    const [key, r, e] = await threeSlots();
    await clusterClient.set(`${prefix}{${r}}`, 'something else', 'PX', 60_000);
    const request = requestFor(key, {
      leaseMs: 60_000,
      records: [r],
      version: { entity: e, versionMs: 1_000 },
    });
    const error = await failureOf(clusterStore.claim(request));
    expectUnavailable(error);
    expect(error.message).toBe(
      'Redis claim failed: the key holds a value this store did not write',
    );
    // The key's slot and the entity's took their part: both are given back, not held for 60 s.
    expect(await clusterClient.exists(`${prefix}{${key}}`)).toBe(0);
    expect(await clusterClient.exists(`${prefix}{${e}}:entity-lease`)).toBe(0);
    expect(await clusterClient.exists(`${prefix}{${e}}:entity`)).toBe(0);
    expect(await clusterStore.peek([key])).toEqual([{ state: 'free' }]);
  });
});

/** Three keys of this run whose hash tags fall in three different slots of the cluster. */
async function threeSlots(): Promise<[string, string, string]> {
  const keys: string[] = [];
  const slots = new Set<number>();
  while (keys.length < 3) {
    const key = `apart-${randomUUID()}`;
    const slot = Number(await clusterClient.cluster('KEYSLOT', key));
    if (slots.has(slot)) continue;
    slots.add(slot);
    keys.push(key);
  }
  return [keys[0]!, keys[1]!, keys[2]!];
}

/** How many scripts the masters ran since their stats were reset. */
async function scriptsRun(masters: readonly Redis[]): Promise<{ evalsha: number; eval: number }> {
  const counts = await Promise.all(
    masters.map(async (node) => [
      await commandCalls(node, 'evalsha'),
      await commandCalls(node, 'eval'),
    ]),
  );
  return {
    evalsha: counts.reduce((sum, [evalsha]) => sum + evalsha!, 0),
    eval: counts.reduce((sum, [, evals]) => sum + evals!, 0),
  };
}

describeStoreContract('redisStore on a Redis Cluster', async () => ({
  store: redisStore({ client: clusterClient, prefix: `contract-${randomUUID()}:` }),
  cleanup: async () => {},
}));

function redisKey(key: string): string {
  return `${PREFIX}{${key}}`;
}

/** The record a test's delivery of `key` takes (one of its own). */
function recordOf(key: string): string {
  return `~["record",null,"${key}"]`;
}

/** The Redis key of the lease on the entity a test's delivery of `key` takes (one of its own). */
function entityLease(key: string): string {
  return `${redisKey(`~["entity",null,"${key}"]`)}:entity-lease`;
}

/** A delivery's whole claim of `key`: its record and its entity too, for 60 s. */
function wholeRequest(key: string) {
  return requestFor(key, {
    leaseMs: 60_000,
    records: [recordOf(key)],
    version: { entity: `~["entity",null,"${key}"]`, versionMs: 1_000 },
  });
}

/** A claim of `request` as the store would have answered it (for a settle the store refuses). */
function claimOf(request: ReturnType<typeof requestFor>): HeldClaim {
  return {
    state: 'claimed',
    request,
    token: 'token',
    records: (request.records ?? []).map(() => ({ state: 'held' })),
    superseded: false,
  };
}

/** `error` is a `StoreUnavailableError`, with its stable code. */
function expectUnavailable(error: unknown): void {
  expect(error).toBeInstanceOf(StoreUnavailableError);
  expect((error as StoreUnavailableError).code).toBe('store_unavailable');
}

async function timed(promise: Promise<unknown>): Promise<{ error: unknown; elapsedMs: number }> {
  const started = performance.now();
  try {
    await promise;
    return { error: undefined, elapsedMs: performance.now() - started };
  } catch (error) {
    return { error, elapsedMs: performance.now() - started };
  }
}

async function untilReady(redis: Redis): Promise<void> {
  await until(() => redis.status === 'ready');
}

async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met within 10 s');
    await sleep(20);
  }
}

/** How many times Redis ran `command` (directly or from a script) since its stats were reset. */
async function commandCalls(redis: Redis, command: string): Promise<number> {
  const stats = await redis.info('commandstats');
  const match = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats);
  return match ? Number(match[1]) : 0;
}
