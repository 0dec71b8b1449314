/**
 * A completion that Redis did not receive (it was killed mid-delivery) is not lost: the store
 * sends the settle again once Redis is back (the key, the entity's records and its entity, all
 * in one script), so the platform's resend is a duplicate, not a 409 or a second run, and the
 * entity is not held for the rest of the lease. Redis is persistent here (AOF, fsync always), as
 * production Redis must be (docs/stores.md#when-redis-fails). Some cases make it refuse writes
 * instead (`maxmemory` of 1 byte): a completion then fails while the connection stays up, and its
 * retries can be made to fail again on purpose.
 */

import { randomUUID } from 'node:crypto';
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { StoreUnavailableError } from '../../src/errors.js';
import { createReceiver } from '../../src/receiving/receiver.js';
import { redisStore } from '../../src/stores/redis.js';
import type { Claim, IdempotencyStore } from '../../src/stores/types.js';
import { sleep, startRedisServer, type RedisServerProcess } from '../helpers/redis.js';
import { failureOf } from '../helpers/failure-of.js';
import { signedRequest, SECRET } from '../helpers/signed.js';
import { heldOf, requestFor } from './contract.js';

const PREFIX = `completion-${randomUUID()}:`;
const TIMEOUT_MS = 300;
const IN_FLIGHT = { state: 'in_flight', held: 'key' };

type Asking = Parameters<typeof requestFor>[1];

/** A claim of `key` for 30 s (or `asking.leaseMs`), completed `fp` for 60 s. */
function request(key: string, asking: Asking = {}) {
  return requestFor(key, { leaseMs: 30_000, ttlMs: 60_000, ...asking });
}

/** `key` claimed in `store`: its claim. */
async function claimed(store: IdempotencyStore, key: string, asking: Asking = {}) {
  return heldOf(await store.claim(request(key, asking)));
}

let server: RedisServerProcess;
const clients: Redis[] = [];

/** A client of `url` (the test's server by default) that retries fast and is closed at the end. */
function connect(
  url = server.url,
  options: RedisOptions = { retryStrategy: (attempt) => Math.min(attempt * 20, 100) },
): Redis {
  const client = new Redis(url, options);
  client.on('error', () => {});
  clients.push(client);
  return client;
}

beforeAll(async () => {
  server = await startRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
}, 30_000);

afterAll(async () => {
  for (const client of clients) client.disconnect();
  await server?.close();
});

async function readyAgain(client: Redis): Promise<void> {
  while (client.status !== 'ready') await sleep(10);
}

describe('redisStore when Redis dies between the handlers and the completion', () => {
  it('completes the key once Redis is back, so a resend here is a duplicate', async () => {
    const client = connect();
    await readyAgain(client);
    const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: TIMEOUT_MS });
    const key = `resend-${randomUUID()}`;
    const claim = await claimed(store, key);
    // A later, shorter lease: the completion is kept for the longest lease, not the last one.
    await store.claim(request(`short-${randomUUID()}`, { leaseMs: 1 }));
    await server.kill();
    await unavailable(store.settle(claim, 'complete'));
    await server.start();
    await readyAgain(client);
    // The resend reaches this process at once: the unfinished completion goes first.
    expect(await store.claim(request(key))).toEqual({ state: 'done', fingerprint: 'fp' });
  });

  it('completes it as soon as the client is ready, for a resend to another process', async () => {
    const client = connect();
    await readyAgain(client);
    const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: TIMEOUT_MS });
    const key = `other-${randomUUID()}`;
    const claim = await claimed(store, key);
    await server.kill();
    await unavailable(store.settle(claim, 'complete'));
    await server.start();
    // Another receiver process: its own client and store, no memory of the completion.
    const other = redisStore({ client: connect(), prefix: PREFIX, commandTimeoutMs: 1000 });
    expect(await claimSoon(other, key)).toEqual({ state: 'done', fingerprint: 'fp' });
  });

  it("completes the entity's records and frees the entity with the key, so a newer state of it runs at once", async () => {
    const client = connect();
    await readyAgain(client);
    const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: TIMEOUT_MS });
    const [key, r, e] = [`whole-${randomUUID()}`, `~["record",null,"${randomUUID()}"]`, entity()];
    const claim = await claimed(store, key, {
      records: [r],
      recordsAs: { fingerprint: 'webhook', ttlMs: 60_000 },
      version: { entity: e, versionMs: 2_000 },
    });
    await server.kill();
    await unavailable(store.settle(claim, 'complete'));
    await server.start();
    // Another process, with another delivery of the entity: the entity is not held for the rest
    // of the lease (30 s), the version 2 000 stands, and the record is done.
    const other = redisStore({ client: connect(), prefix: PREFIX, commandTimeoutMs: 1000 });
    const newer = heldOf(await claimSoon(other, `newer-${randomUUID()}`, e, 3_000));
    expect(newer.superseded).toBe(false);
    await other.settle(newer, 'release');
    expect(heldOf(await claimSoon(other, `older-${randomUUID()}`, e, 1_500)).superseded).toBe(true);
    expect(await other.peek([key, r])).toEqual([
      { state: 'done', fingerprint: 'fp' },
      { state: 'done', fingerprint: 'webhook' },
    ]);
  });

  it('answers the platform resend 200 duplicate and runs the handler once', async () => {
    const client = connect();
    await readyAgain(client);
    const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: TIMEOUT_MS });
    let runs = 0;
    const receiver = createReceiver({ secret: SECRET, store });
    receiver.onError(() => {});
    receiver.on('UserSignedIn', async () => {
      runs++;
      if (runs === 1) await server.kill();
    });
    const delivery = signedRequest({ event: 'UserSignedIn', data: {} });
    // The handler ran; the completion could not reach Redis: still acknowledged.
    expect((await receiver.handle(delivery)).outcome).toBe('processed');
    await server.start();
    await readyAgain(client);
    const resend = await receiver.handle(delivery);
    expect(resend).toMatchObject({ status: 200, outcome: 'duplicate' });
    expect(runs).toBe(1);
  });

  it('sends every unfinished completion again, and leaves no listener on the client after', async () => {
    const client = connect();
    await readyAgain(client);
    const listeners = client.listenerCount('ready');
    const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: TIMEOUT_MS });
    const keys = [`first-${randomUUID()}`, `second-${randomUUID()}`];
    const claims = [];
    for (const [i, key] of keys.entries()) {
      claims.push(await claimed(store, key, { fingerprint: `fp${i}` }));
    }
    await server.kill();
    for (const claim of claims) await unavailable(store.settle(claim, 'complete'));
    await server.start();
    const other = redisStore({ client: connect(), prefix: PREFIX, commandTimeoutMs: 1000 });
    for (const [i, key] of keys.entries()) {
      expect(await claimSoon(other, key)).toEqual({ state: 'done', fingerprint: `fp${i}` });
    }
    // Both finished: the store's 'ready' listener is gone from the caller's client.
    await vi.waitFor(() => expect(client.listenerCount('ready')).toBe(listeners));
  });

  it('never completes a key whose lease ran out while Redis was down', async () => {
    const client = connect();
    await readyAgain(client);
    const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: TIMEOUT_MS });
    const key = `expired-${randomUUID()}`;
    const claim = await claimed(store, key, { leaseMs: 200 });
    await server.kill();
    await unavailable(store.settle(claim, 'complete'));
    await sleep(400);
    await server.start();
    await readyAgain(client);
    // The lease ran out while Redis was down: the key is free, and stays so.
    expect((await store.claim(request(key))).state).toBe('claimed');
  });
});

describe('redisStore when Redis takes a claim and its answer never comes', () => {
  it('takes the lease back once the connection is back, so neither the key nor the entity is held for leaseMs', async () => {
    const proxy = await startProxy(server.port);
    try {
      const client = connect(proxy.url);
      await readyAgain(client);
      const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: TIMEOUT_MS });
      const other = redisStore({ client: connect(), prefix: PREFIX, commandTimeoutMs: 1000 });
      const [key, e] = [`unanswered-${randomUUID()}`, entity()];
      await other.settle(
        heldOf(await other.claim(request(`applied-${randomUUID()}`, at(e, 1_000)))),
        'complete',
      );
      // Redis runs the claim; its answer is lost (as when Redis dies right after its fsync).
      proxy.dropReplies = true;
      await unavailable(store.claim(request(key, { leaseMs: 60_000, ...at(e, 2_000) })));
      proxy.dropRequests = true;
      // Another process sees the lease nobody will complete.
      expect(await other.claim(request(key, { leaseMs: 60_000 }))).toEqual(IN_FLIGHT);
      // The connection drops and comes back: the store releases its lease at once.
      proxy.dropReplies = false;
      proxy.dropRequests = false;
      proxy.cut();
      expect((await claimSoon(other, key)).state).toBe('claimed');
      // The entity too, with the version it had before that claim: 1 500 is not superseded.
      const between = heldOf(await claimSoon(other, `between-${randomUUID()}`, e, 1_500));
      expect(between.superseded).toBe(false);
    } finally {
      await proxy.close();
    }
  });

  it('still takes it back after a resend that failed while the connection was down', async () => {
    const proxy = await startProxy(server.port);
    try {
      const client = connect(proxy.url);
      await readyAgain(client);
      // The kept release is sent again commandTimeoutMs after the claim failed if the client is
      // still ready then: the connection is cut long before.
      const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: 1000 });
      const key = `resend-down-${randomUUID()}`;
      // Redis knows the claim script, so the claim below runs there at once (no NOSCRIPT).
      await store.claim(request(`warm-${randomUUID()}`, { leaseMs: 1000 }));
      proxy.dropReplies = true;
      await unavailable(store.claim(request(key, { leaseMs: 60_000 })));
      proxy.dropRequests = true;
      // The connection drops and stays down; the platform's resend reaches this process then.
      proxy.refuse = true;
      proxy.cut();
      proxy.dropReplies = false;
      proxy.dropRequests = false;
      while (client.status === 'ready') await sleep(5);
      await unavailable(store.claim(request(key, { leaseMs: 60_000 })));
      const other = redisStore({ client: connect(), prefix: PREFIX, commandTimeoutMs: 1000 });
      expect(await other.claim(request(key, { leaseMs: 60_000 }))).toEqual(IN_FLIGHT);
      // Back: the lease Redis took is released, not the one of the resend, which it never saw.
      proxy.refuse = false;
      expect((await claimSoon(other, key)).state).toBe('claimed');
    } finally {
      await proxy.close();
    }
  });
});

describe('redisStore when Redis takes a claim and answers after the call gave up', () => {
  it('hands the lease back as soon as the late answer comes, not a timeout later', async () => {
    const proxy = await startProxy(server.port);
    try {
      const client = connect(proxy.url, {});
      await readyAgain(client);
      // The kept release is otherwise sent again commandTimeoutMs after the claim failed (at
      // about 2 000 ms); the late answer comes at about 1 300 ms.
      const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: 1000 });
      const other = redisStore({ client: connect(), prefix: PREFIX, commandTimeoutMs: 1000 });
      const key = `late-${randomUUID()}`;
      proxy.replyDelayMs = 1300;
      const startedAt = Date.now();
      await unavailable(store.claim(request(key, { leaseMs: 60_000 })));
      expect(await other.claim(request(key, { leaseMs: 60_000 }))).toEqual(IN_FLIGHT);
      await sleep(1600 - (Date.now() - startedAt));
      expect(await other.claim(request(key, { leaseMs: 60_000 }))).toMatchObject({
        state: 'claimed',
      });
      expect(Date.now() - startedAt).toBeLessThan(1900);
    } finally {
      await proxy.close();
    }
  });
});

describe('redisStore when Redis refuses writes (maxmemory reached) while a completion is kept', () => {
  /**
   * A store on a fresh client, and a claimed key whose completion Redis refused (out of memory),
   * so the store keeps it; `whileRefusing` runs before Redis has memory again.
   */
  async function refusedCompletion(
    name: string,
    whileRefusing: (
      store: ReturnType<typeof redisStore>,
      key: string,
    ) => Promise<void> = async () => {},
  ) {
    const client = connect();
    await readyAgain(client);
    // Long enough that the kept completion's own timed retry (commandTimeoutMs after it failed)
    // comes neither before the resends of a test nor before Redis has memory again.
    const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: 2000 });
    const key = `${name}-${randomUUID()}`;
    const claim = await claimed(store, key);
    await refusingWrites(async () => {
      // The handlers ran; Redis refuses the completion's write: it is kept.
      const completion = await unavailable(store.settle(claim, 'complete'));
      expect(completion.message).toMatch(/^Redis complete failed: OOM /);
      await whileRefusing(store, key);
    });
    return { client, store, key };
  }

  it('answers a resend in flight while the completion is refused again, keeping it; finishes it before the next resend', async () => {
    const { store, key } = await refusedCompletion('full', async (refusing, refused) => {
      // The platform's resend: the kept completion is tried first and refused again; the claim
      // finds the key held by the delivery's own lease (it writes nothing, so no OOM).
      expect(await refusing.claim(request(refused))).toEqual(IN_FLIGHT);
    });
    // Memory again: the next resend finishes the completion first, so it is a duplicate, not
    // in_flight for the rest of the lease (and processed again after it).
    expect(await store.claim(request(key))).toEqual({ state: 'done', fingerprint: 'fp' });
  });

  it('keeps the completion through a resend whose claim fails too, not the release of that claim', async () => {
    const { store, key } = await refusedCompletion('busy', async (refusing, refused) => {
      // Redis is busy: the kept completion is tried first and refused again, then the claim
      // itself is refused after it was sent. Redis may have taken that claim, for all the store
      // knows, but the completion kept for the key must not give way to its release.
      await whileBusy(async () => {
        const resend = await unavailable(refusing.claim(request(refused)));
        expect(resend.message).toMatch(/^Redis claim failed: BUSY /);
      });
    });
    // The next resend finishes the completion first: a duplicate, not in_flight for the rest
    // of the lease (and processed again after it).
    expect(await store.claim(request(key))).toEqual({ state: 'done', fingerprint: 'fp' });
  });

  it('sends the completion again commandTimeoutMs later on its own, since no ready comes', async () => {
    const { client, key } = await refusedCompletion('connected');
    // The connection never dropped, so no 'ready' will send it.
    expect(client.status).toBe('ready');
    // A resend that reaches another process finds the key done.
    const other = redisStore({ client: connect(), prefix: PREFIX, commandTimeoutMs: 1000 });
    expect(await claimSoon(other, key)).toEqual({ state: 'done', fingerprint: 'fp' });
  });
});

describe('redisStore when one kept call goes through and another is refused again', () => {
  it('still sends the refused one on the next ready, and only then lets go of the client', async () => {
    const proxy = await startProxy(server.port);
    const admin = connect();
    try {
      const client = connect(proxy.url);
      await readyAgain(client);
      const listeners = client.listenerCount('ready');
      const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: TIMEOUT_MS });
      const failedKey = `failed-${randomUUID()}`;
      const doneKey = `done-${randomUUID()}`;
      const failedClaim = await claimed(store, failedKey);
      const doneClaim = await claimed(store, doneKey);
      // The connection drops and stays down: a release and a completion fail, and are kept.
      proxy.refuse = true;
      proxy.cut();
      while (client.status === 'ready') await sleep(5);
      await unavailable(store.settle(failedClaim, 'release'));
      await unavailable(store.settle(doneClaim, 'complete'));
      // It comes back to a Redis out of memory: the release goes through (DEL needs none), the
      // completion is refused again.
      await outOfMemory(admin, true);
      await admin.config('RESETSTAT');
      proxy.refuse = false;
      await vi.waitFor(
        async () => {
          expect(await admin.exists(`${PREFIX}{${failedKey}}`)).toBe(0);
          expect(await errorCount(admin, 'OOM')).toBeGreaterThan(0);
        },
        { timeout: 5000, interval: 20 },
      );
      // Both answers have reached the store (the PING's comes after them on this connection).
      await client.ping();
      await sleep(0);
      await outOfMemory(admin, false);
      // The next ready sends the completion again: another process then sees it done.
      proxy.cut();
      const other = redisStore({ client: connect(), prefix: PREFIX, commandTimeoutMs: 1000 });
      expect(await claimSoon(other, doneKey)).toEqual({ state: 'done', fingerprint: 'fp' });
      await vi.waitFor(() => expect(client.listenerCount('ready')).toBe(listeners));
    } finally {
      await outOfMemory(admin, false);
      await proxy.close();
    }
  });
});

describe('redisStore with two calls kept for one key', () => {
  it('does not drop the newer when the retry of the older one ends', async () => {
    const client = connect();
    await readyAgain(client);
    const admin = connect();
    const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: 2000 });
    // Redis knows the two scripts (claim, settle): each call below is one command, sent at
    // once, in order.
    const warm = `warm-${randomUUID()}`;
    await store.settle(await claimed(store, warm), 'complete');
    const key = `twice-${randomUUID()}`;
    // A BLPOP on the store's own connection holds back whatever the store sends after it.
    const gate = `${PREFIX}gate-${randomUUID()}`;
    const held = (): Promise<unknown> => client.blpop(gate, 10).catch(() => null);
    try {
      // Redis is out of memory: a delivery's claim is refused, and the release of its lease is
      // kept. A second delivery of the same key, sent just after it, is held back until Redis
      // has memory again, and takes the key.
      await outOfMemory(admin, true);
      const first = store.claim(request(key));
      const firstGate = held();
      const second = store.claim(request(key));
      expect((await unavailable(first)).message).toMatch(/^Redis claim failed: OOM /);
      await outOfMemory(admin, false);
      await admin.lpush(gate, 'open');
      await firstGate;
      const claim = heldOf(await second);
      // Out of memory again: the second delivery's completion is refused, and kept in place of
      // the release. The release is meanwhile being sent again (a resend's claim sends it
      // first), held back until the completion was kept.
      await outOfMemory(admin, true);
      const completion = store.settle(claim, 'complete');
      const secondGate = held();
      const resend = store.claim(request(key));
      expect((await unavailable(completion)).message).toMatch(/^Redis complete failed: OOM /);
      await outOfMemory(admin, false);
      await admin.lpush(gate, 'open');
      await secondGate;
      // The release is done (it freed nothing: the key holds the second lease)...
      expect(await resend).toEqual(IN_FLIGHT);
      // ...and the completion kept after it is still there: the next resend sends it first.
      expect(await store.claim(request(key))).toEqual({ state: 'done', fingerprint: 'fp' });
    } finally {
      await outOfMemory(admin, false);
      admin.disconnect();
    }
  });
});

/** Turns the test server's memory limit to 1 byte (no eviction: every write refused) or off. */
async function outOfMemory(admin: Redis, full: boolean): Promise<void> {
  await admin.config('SET', 'maxmemory', full ? '1' : '0');
}

/** How many errors of this kind Redis answered since its stats were reset. */
async function errorCount(admin: Redis, kind: string): Promise<number> {
  const stats = await admin.info('errorstats');
  const match = new RegExp(`^errorstat_${kind}:count=(\\d+)`, 'm').exec(stats);
  return match ? Number(match[1]) : 0;
}

/**
 * Runs `work` while the test server is out of memory (`maxmemory` 1 byte, no eviction): every
 * command that would add data is refused with OOM; reads and DEL still run.
 */
async function refusingWrites(work: () => Promise<void>): Promise<void> {
  const admin = connect();
  await outOfMemory(admin, true);
  try {
    await work();
  } finally {
    await outOfMemory(admin, false);
    admin.disconnect();
  }
}

/**
 * Runs `work` while the test server runs a script that never ends: past the busy threshold (set
 * to 20 ms here) every command of another client is answered BUSY, writing nothing. The script
 * is killed after.
 */
async function whileBusy(work: () => Promise<void>): Promise<void> {
  const admin = connect();
  await admin.config('SET', 'lua-time-limit', '20');
  const looping = connect()
    .eval('while true do end', 0)
    .catch(() => {});
  try {
    await vi.waitFor(
      async () => expect((await failureOf(admin.ping())).message).toMatch(/^BUSY /),
      {
        timeout: 5000,
        interval: 10,
      },
    );
    await work();
  } finally {
    await admin.script('KILL');
    await looping;
    await admin.config('SET', 'lua-time-limit', '5000');
    admin.disconnect();
  }
}

/** The `StoreUnavailableError`, with its stable code, that `work` rejects with. */
async function unavailable(work: Promise<unknown>): Promise<StoreUnavailableError> {
  const error = await failureOf(work);
  if (!(error instanceof StoreUnavailableError) || error.code !== 'store_unavailable') {
    throw new Error(`expected a StoreUnavailableError, got ${String(error)}`);
  }
  return error;
}

/** A TCP proxy in front of Redis that can drop what goes either way, and cut every connection. */
interface Proxy {
  readonly url: string;
  dropRequests: boolean;
  dropReplies: boolean;
  /** How long each reply is held before it is passed on. */
  replyDelayMs: number;
  /** Close every new connection at once (Redis unreachable through the proxy). */
  refuse: boolean;
  cut(): void;
  close(): Promise<void>;
}

async function startProxy(port: number): Promise<Proxy> {
  const sockets = new Set<Socket>();
  const proxy: Proxy = {
    url: '',
    dropRequests: false,
    dropReplies: false,
    replyDelayMs: 0,
    refuse: false,
    cut: () => {
      for (const socket of sockets) socket.destroy();
    },
    close: async () => {
      proxy.cut();
      await new Promise((resolve) => listener.close(resolve));
    },
  };
  const listener = createServer((downstream) => {
    if (proxy.refuse) {
      downstream.destroy();
      return;
    }
    const upstream = createConnection(port, '127.0.0.1');
    for (const socket of [downstream, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        sockets.delete(socket);
        downstream.destroy();
        upstream.destroy();
      });
    }
    downstream.on('data', (chunk) => proxy.dropRequests || upstream.write(chunk));
    upstream.on('data', (chunk) => {
      if (proxy.dropReplies) return;
      if (proxy.replyDelayMs === 0) downstream.write(chunk);
      else setTimeout(() => downstream.write(chunk), proxy.replyDelayMs);
    });
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port: listening } = listener.address() as AddressInfo;
  return Object.assign(proxy, { url: `redis://127.0.0.1:${listening}` });
}

/**
 * Claims `key` (or, with `e`, a delivery `key` of entity `e` at `versionMs`) until the answer is
 * not in_flight (the other process's retry lands within ms).
 */
async function claimSoon(
  store: IdempotencyStore,
  key: string,
  e?: string,
  versionMs = 0,
): Promise<Claim> {
  const deadline = Date.now() + 5000;
  const asking = e === undefined ? {} : at(e, versionMs);
  for (;;) {
    try {
      const result = await store.claim(request(key, asking));
      if (result.state !== 'in_flight' || Date.now() > deadline) return result;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await sleep(20);
  }
}

/** What a claim asks for to take entity `e` at `versionMs`. */
function at(e: string, versionMs: number): Asking {
  return { version: { entity: e, versionMs } };
}

/** An entity as the receiver names one (src/keys/delivery-key.ts' entityKeyOf). */
function entity(): string {
  return `~["entity",null,"invoice:${randomUUID()}"]`;
}
