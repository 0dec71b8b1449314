/**
 * A completion that Redis did not receive (it was killed mid-delivery) is not lost: the store
 * sends it again once Redis is back, so the platform's resend is a duplicate, not a 409 or a
 * second run. Redis is persistent here (AOF, fsync always), as production Redis must be.
 * Some cases make it refuse writes instead (`maxmemory` of 1 byte): a completion then fails
 * while the connection stays up, and its retries can be made to fail again on purpose.
 */

import { randomUUID } from 'node:crypto';
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { StoreUnavailableError } from '../../src/errors.js';
import { createReceiver } from '../../src/receiver.js';
import { redisStore } from '../../src/stores/redis.js';
import type { ClaimResult, IdempotencyStore } from '../../src/stores/types.js';
import { sleep, startRedisServer, type RedisServerProcess } from '../helpers/redis.js';
import { signedRequest, SECRET } from '../helpers/signed.js';

const PREFIX = `completion-${randomUUID()}:`;
const TIMEOUT_MS = 300;

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
    const claim = tokenOf(await store.claim(key, 30_000));
    // A later, shorter lease: the completion is kept for the longest lease, not the last one.
    await store.claim(`short-${randomUUID()}`, 1);
    await server.kill();
    await expect(store.complete(key, claim, 60_000, 'fp')).rejects.toThrow(StoreUnavailableError);
    await server.start();
    await readyAgain(client);
    // The resend reaches this process at once: the unfinished completion goes first.
    expect(await store.claim(key, 30_000)).toEqual({ state: 'done', fingerprint: 'fp' });
  });

  it('completes it as soon as the client is ready, for a resend to another process', async () => {
    const client = connect();
    await readyAgain(client);
    const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: TIMEOUT_MS });
    const key = `other-${randomUUID()}`;
    const claim = tokenOf(await store.claim(key, 30_000));
    await server.kill();
    await expect(store.complete(key, claim, 60_000, 'fp')).rejects.toThrow(StoreUnavailableError);
    await server.start();
    // Another receiver process: its own client and store, no memory of the completion.
    const other = redisStore({ client: connect(), prefix: PREFIX, commandTimeoutMs: 1000 });
    expect(await claimSoon(other, key)).toEqual({ state: 'done', fingerprint: 'fp' });
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
    const request = signedRequest({ event: 'UserSignedIn', data: {} });
    // The handler ran; the completion could not reach Redis: still acknowledged.
    expect((await receiver.handle(request)).outcome).toBe('processed');
    await server.start();
    await readyAgain(client);
    const resend = await receiver.handle(request);
    expect(resend).toMatchObject({ status: 200, outcome: 'duplicate' });
    expect(runs).toBe(1);
  });

  it('sends every unfinished completion again, and leaves no listener on the client after', async () => {
    const client = connect();
    await readyAgain(client);
    const listeners = client.listenerCount('ready');
    const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: TIMEOUT_MS });
    const keys = [`first-${randomUUID()}`, `second-${randomUUID()}`];
    const tokens = [];
    for (const key of keys) tokens.push(tokenOf(await store.claim(key, 30_000)));
    await server.kill();
    for (const [i, key] of keys.entries()) {
      await expect(store.complete(key, tokens[i]!, 60_000, `fp${i}`)).rejects.toThrow(
        StoreUnavailableError,
      );
    }
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
    const claim = tokenOf(await store.claim(key, 200));
    await server.kill();
    await expect(store.complete(key, claim, 60_000, 'fp')).rejects.toThrow(StoreUnavailableError);
    await sleep(400);
    await server.start();
    await readyAgain(client);
    // The lease ran out while Redis was down: the key is free, and stays so.
    expect((await store.claim(key, 30_000)).state).toBe('claimed');
  });
});

describe('redisStore when Redis takes a claim and its answer never comes', () => {
  it('takes the lease back once the connection is back, so the key is not held for leaseMs', async () => {
    const proxy = await startProxy(server.port);
    try {
      const client = connect(proxy.url);
      await readyAgain(client);
      const store = redisStore({ client, prefix: PREFIX, commandTimeoutMs: TIMEOUT_MS });
      const key = `unanswered-${randomUUID()}`;
      // Redis runs the claim; its answer is lost (as when Redis dies right after its fsync).
      proxy.dropReplies = true;
      await expect(store.claim(key, 60_000)).rejects.toThrow(StoreUnavailableError);
      proxy.dropRequests = true;
      // Another process sees the lease nobody will complete.
      const other = redisStore({ client: connect(), prefix: PREFIX, commandTimeoutMs: 1000 });
      expect(await other.claim(key, 60_000)).toEqual({ state: 'in_flight' });
      // The connection drops and comes back: the store releases its lease at once.
      proxy.dropReplies = false;
      proxy.dropRequests = false;
      proxy.cut();
      expect((await claimSoon(other, key)).state).toBe('claimed');
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
      await store.claim(`warm-${randomUUID()}`, 1000);
      proxy.dropReplies = true;
      await expect(store.claim(key, 60_000)).rejects.toThrow(StoreUnavailableError);
      proxy.dropRequests = true;
      // The connection drops and stays down; the platform's resend reaches this process then.
      proxy.refuse = true;
      proxy.cut();
      proxy.dropReplies = false;
      proxy.dropRequests = false;
      while (client.status === 'ready') await sleep(5);
      await expect(store.claim(key, 60_000)).rejects.toThrow(StoreUnavailableError);
      const other = redisStore({ client: connect(), prefix: PREFIX, commandTimeoutMs: 1000 });
      expect(await other.claim(key, 60_000)).toEqual({ state: 'in_flight' });
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
      await expect(store.claim(key, 60_000)).rejects.toThrow(StoreUnavailableError);
      expect(await other.claim(key, 60_000)).toEqual({ state: 'in_flight' });
      await sleep(1600 - (Date.now() - startedAt));
      expect(await other.claim(key, 60_000)).toMatchObject({ state: 'claimed' });
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
    const claim = tokenOf(await store.claim(key, 30_000));
    await refusingWrites(async () => {
      // The handlers ran; Redis refuses the completion's write: it is kept.
      const completion = await failureOf(store.complete(key, claim, 60_000, 'fp'));
      expect(completion.message).toMatch(/^Redis complete failed: OOM /);
      await whileRefusing(store, key);
    });
    return { client, store, key };
  }

  it('keeps the completion through a resend that fails too, and finishes it before the next resend', async () => {
    const { store, key } = await refusedCompletion('full', async (refusing, refused) => {
      // The platform's resend: the kept completion is tried first and refused again, then the
      // claim itself is refused. Neither loses the completion.
      const resend = await failureOf(refusing.claim(refused, 30_000));
      expect(resend.message).toMatch(/^Redis claim failed: OOM /);
    });
    // Memory again: the next resend finishes the completion first, so it is a duplicate, not
    // in_flight for the rest of the lease (and processed again after it).
    expect(await store.claim(key, 30_000)).toEqual({ state: 'done', fingerprint: 'fp' });
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
      const failedToken = tokenOf(await store.claim(failedKey, 30_000));
      const doneToken = tokenOf(await store.claim(doneKey, 30_000));
      // The connection drops and stays down: a release and a completion fail, and are kept.
      proxy.refuse = true;
      proxy.cut();
      while (client.status === 'ready') await sleep(5);
      await expect(store.release(failedKey, failedToken)).rejects.toThrow(StoreUnavailableError);
      await expect(store.complete(doneKey, doneToken, 60_000, 'fp')).rejects.toThrow(
        StoreUnavailableError,
      );
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
    // Redis knows the three scripts: each call below is one command, sent at once, in order.
    const warm = [`warm-${randomUUID()}`, `warm-${randomUUID()}`];
    await store.complete(warm[0]!, tokenOf(await store.claim(warm[0]!, 30_000)), 60_000, 'fp');
    await store.release(warm[1]!, tokenOf(await store.claim(warm[1]!, 30_000)));
    const key = `twice-${randomUUID()}`;
    // A BLPOP on the store's own connection holds back whatever the store sends after it.
    const gate = `${PREFIX}gate-${randomUUID()}`;
    const held = (): Promise<unknown> => client.blpop(gate, 10).catch(() => null);
    try {
      // Redis is out of memory: a delivery's claim is refused, and the release of its lease is
      // kept. A second delivery of the same key, sent just after it, is held back until Redis
      // has memory again, and takes the key.
      await outOfMemory(admin, true);
      const first = store.claim(key, 30_000);
      const firstGate = held();
      const second = store.claim(key, 30_000);
      expect((await failureOf(first)).message).toMatch(/^Redis claim failed: OOM /);
      await outOfMemory(admin, false);
      await admin.lpush(gate, 'open');
      await firstGate;
      const token = tokenOf(await second);
      // Out of memory again: the second delivery's completion is refused, and kept in place of
      // the release. The release is meanwhile being sent again (a resend's claim sends it
      // first), held back until the completion was kept.
      await outOfMemory(admin, true);
      const completion = store.complete(key, token, 60_000, 'fp');
      const secondGate = held();
      const resend = store.claim(key, 30_000);
      expect((await failureOf(completion)).message).toMatch(/^Redis complete failed: OOM /);
      await outOfMemory(admin, false);
      await admin.lpush(gate, 'open');
      await secondGate;
      // The release is done (it freed nothing: the key holds the second lease)...
      expect(await resend).toEqual({ state: 'in_flight' });
      // ...and the completion kept after it is still there: the next resend sends it first.
      expect(await store.claim(key, 30_000)).toEqual({ state: 'done', fingerprint: 'fp' });
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

/** The error `work` rejects with (an `Error`: a rejection with anything else fails the test). */
async function failureOf(work: Promise<unknown>): Promise<Error> {
  try {
    await work;
  } catch (error) {
    if (error instanceof StoreUnavailableError) return error;
    throw new Error(`expected a StoreUnavailableError, got ${String(error)}`);
  }
  throw new Error('expected a rejection');
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

/** Claims until the answer is not in_flight (the other process's retry lands within ms). */
async function claimSoon(store: IdempotencyStore, key: string): Promise<ClaimResult> {
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      const result = await store.claim(key, 30_000);
      if (result.state !== 'in_flight' || Date.now() > deadline) return result;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await sleep(20);
  }
}

function tokenOf(result: ClaimResult): string {
  if (result.state !== 'claimed') throw new Error(`expected a claim, got ${result.state}`);
  return result.token;
}
