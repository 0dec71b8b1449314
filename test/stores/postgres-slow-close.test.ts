/**
 * postgresStore when a session ends slowly: a claim that is abandoned or released closes its
 * client, and Postgres frees the key's lock only when it has ended that session. On loopback that
 * is too quick to see, so these tests put a TCP proxy of their own between pg and Postgres that
 * holds the end of a session: the client's Terminate is forwarded only when the test lets it go,
 * and the client hears its socket close only when the test lets it (gates, not timers).
 * (Written for the survivors of the store's mutation run: docs/maintainers/mutation-testing.md.)
 */

import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresStore } from '../../src/stores/postgres.js';
import type { HeldClaim } from '../../src/stores/types.js';
import { usePostgresPool } from '../helpers/postgres.js';
import { sleep } from '../helpers/redis.js';
import { heldOf, requestFor } from './contract.js';

const postgres = usePostgresPool('sh_slow');

/** pg's Terminate message: 'X' and a length of 4. */
const TERMINATE = Buffer.from([0x58, 0, 0, 0, 4]);

/** A promise the test resolves when it decides. */
interface Gate {
  readonly passed: Promise<void>;
  open(): void;
}

function gate(): Gate {
  let open!: () => void;
  const passed = new Promise<void>((resolve) => (open = resolve));
  return { passed, open };
}

const OPEN: Gate = { passed: Promise.resolve(), open: () => {} };

/**
 * A loopback proxy to the test database that holds the end of each session. When a client sends
 * Terminate, the proxy takes the two gates set at that moment: it forwards the Terminate to
 * Postgres once `terminate` opens, and closes the client's side once Postgres has closed its side
 * and `clientClose` opens.
 */
interface SlowCloseProxy {
  readonly url: string;
  terminate: Gate;
  clientClose: Gate;
  close(): Promise<void>;
}

async function slowCloseProxy(targetUrl: string): Promise<SlowCloseProxy> {
  const target = new URL(targetUrl);
  const sockets = new Set<Socket>();
  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    }
    let ending = false;
    client.on('data', (chunk: Buffer) => {
      if (ending) return;
      const last = chunk.subarray(chunk.length - TERMINATE.length);
      if (!last.equals(TERMINATE)) {
        upstream.write(chunk);
        return;
      }
      ending = true;
      upstream.write(chunk.subarray(0, chunk.length - TERMINATE.length));
      const { terminate, clientClose } = proxy;
      const serverClosed = new Promise<void>((resolve) => upstream.once('close', () => resolve()));
      void terminate.passed
        .then(() => {
          upstream.end(TERMINATE);
          return serverClosed;
        })
        .then(() => clientClose.passed)
        .then(() => client.end());
    });
    client.on('end', () => {
      // A client that goes without a Terminate: nothing to hold.
      if (!ending) upstream.end();
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    upstream.on('close', () => {
      if (!ending) client.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as AddressInfo).port);
  const proxy: SlowCloseProxy = {
    url: url.toString(),
    terminate: OPEN,
    clientClose: OPEN,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  return proxy;
}

/** What each test opened, closed after it. */
const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

/** A proxy and a pool through it; everything held is let go after the test. */
async function throughProxy(): Promise<{ proxy: SlowCloseProxy; pool: pg.Pool }> {
  const proxy = await slowCloseProxy(postgres.url);
  const pool = new pg.Pool({ connectionString: proxy.url, max: 10 });
  pool.on('error', () => {});
  cleanups.push(async () => {
    await proxy.close();
    await Promise.race([pool.end(), sleep(1000)]);
  });
  return { proxy, pool };
}

/** A claim of the key 'k' for a minute (its lease never runs out in a test). */
const K = requestFor('k', { leaseMs: 60_000 });

/** The backend pid of a claim's session. */
function pidOf(result: HeldClaim): number {
  return (result.transaction!.client as unknown as { processID: number }).processID;
}

/** Waits until Postgres has ended the session of `pid`. */
async function sessionEnded(pid: number): Promise<void> {
  for (;;) {
    const { rows } = await postgres.pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [
      pid,
    ]);
    if (rows.length === 0) return;
    await sleep(20);
  }
}

/** `work`, given up to `ms` to settle on its own (a claim that answers without waiting does). */
async function settledWithin(work: unknown, ms: number): Promise<void> {
  await Promise.race([Promise.resolve(work).catch(() => {}), sleep(ms)]);
}

describe('postgresStore with sessions that end slowly', () => {
  it('waits for the session of an abandoned claim to end before claiming its key again', async () => {
    const { proxy, pool } = await throughProxy();
    const store = postgresStore({ pool, table: postgres.table(), connectTimeoutMs: 10_000 });
    const first = heldOf(await store.claim(K));
    const held = gate();
    proxy.terminate = held;
    first.transaction!.abandon();
    // The old session still holds the key's lock: answering now would be in_flight.
    const second = store.claim(K);
    await settledWithin(second, 1000);
    held.open();
    expect((await second).state).toBe('claimed');
    await store.settle(heldOf(await second), 'release');
  });

  it('claims the key after connectTimeoutMs / 2 when the abandoned client never hears its end', async () => {
    const { proxy, pool } = await throughProxy();
    const store = postgresStore({ pool, table: postgres.table(), connectTimeoutMs: 3000 });
    const first = heldOf(await store.claim(K));
    const pid = pidOf(first);
    // Postgres ends the session at once; the client's socket stays open (until the test ends).
    const never = gate();
    cleanups.push(async () => never.open());
    proxy.clientClose = never;
    first.transaction!.abandon();
    await sessionEnded(pid);
    // The wait for the end gives up after 1.5 s, within the claim's 3 s.
    const second = await store.claim(K);
    expect(second.state).toBe('claimed');
    await store.settle(heldOf(second), 'release');
  });

  it('keeps waiting for the newer abandoned session of a key when an older one ends', async () => {
    const { proxy, pool } = await throughProxy();
    // A pool whose connections the test lets through: a claim that has looked for an abandoned
    // session of its key (none yet) waits here while the first claim is abandoned.
    let connecting: Gate = OPEN;
    const gated = {
      query: pool.query.bind(pool),
      connect: async () => {
        await connecting.passed;
        return pool.connect();
      },
    } as unknown as pg.Pool;
    const store = postgresStore({ pool: gated, table: postgres.table(), connectTimeoutMs: 20_000 });
    const first = heldOf(await store.claim(K));
    const firstPid = pidOf(first);
    const firstClient = first.transaction!.client as unknown as pg.PoolClient;
    // The first session ends on the server at once, but its client hears it only later.
    const firstHeard = gate();
    cleanups.push(async () => firstHeard.open());
    proxy.clientClose = firstHeard;
    connecting = gate();
    const second = store.claim(K);
    first.transaction!.abandon();
    await sessionEnded(firstPid);
    // The second claim gets the key; its session, once abandoned, is held open on the server.
    proxy.clientClose = OPEN;
    const secondHeld = gate();
    cleanups.push(async () => secondHeld.open());
    proxy.terminate = secondHeld;
    connecting.open();
    const secondClaim = heldOf(await second);
    secondClaim.transaction!.abandon();
    // Now the first client hears its end: that must not forget the second session's wait.
    const firstEnded = new Promise<void>((resolve) => firstClient.once('end', () => resolve()));
    firstHeard.open();
    await firstEnded;
    await sleep(0);
    const third = store.claim(K);
    await settledWithin(third, 1000);
    secondHeld.open();
    expect((await third).state).toBe('claimed');
    await store.settle(heldOf(await third), 'release');
  });

  it('rolls back a released claim before it resolves, not when its session ends', async () => {
    const { proxy, pool } = await throughProxy();
    const store = postgresStore({ pool, table: postgres.table(), connectTimeoutMs: 10_000 });
    const first = heldOf(await store.claim(K));
    const held = gate();
    cleanups.push(async () => held.open());
    proxy.terminate = held;
    await store.settle(first, 'release');
    // The released session has not ended (its Terminate is held), yet the key is free.
    const second = await store.claim(K);
    expect(second.state).toBe('claimed');
    await store.settle(heldOf(second), 'release');
  });
});
