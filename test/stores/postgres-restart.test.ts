/**
 * A receiver on `postgresStore`, in a child process, over a pg `Pool` made without an `'error'`
 * listener: Postgres ending its idle connections (`pg_terminate_backend`, then a full restart of
 * a throwaway cluster) must not end the process. Its `onError` is told, and it answers signed
 * deliveries again as soon as Postgres does (503 while Postgres is down: the platform retries).
 */

import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleScript, type BundledScript } from '../helpers/bundle.js';
import {
  startPostgresCluster,
  uniqueTable,
  type PostgresClusterProcess,
} from '../helpers/postgres.js';
import {
  deliver,
  expectStoreComesBack,
  STORE_UNAVAILABLE,
  startReceiverProcess,
  toldMoreThan,
  type ReceiverProcess,
} from '../helpers/receiver-process.js';

const FIXTURE = fileURLToPath(
  new URL('./fixtures/store-restart-receiver-process.ts', import.meta.url),
);
const APPLICATION_NAME = `sh_restart_${randomUUID().slice(0, 8)}`;

let cluster: PostgresClusterProcess;
let script: BundledScript;
let receiver: ReceiverProcess;

beforeAll(async () => {
  // A cluster of this test's own: it is stopped and started, which the shared server never is.
  [cluster, script] = await Promise.all([startPostgresCluster(), bundleScript(FIXTURE)]);
  receiver = await startReceiverProcess(script.file, {
    STORE: 'postgres',
    URL: cluster.url,
    APPLICATION_NAME,
    TABLE: uniqueTable('sh_restart'),
  });
}, 60_000);

afterAll(async () => {
  await receiver?.stop();
  await script?.remove();
  await cluster?.close();
});

/** Ends this receiver's sessions, as an administrator (or a failover) does; how many it ended. */
async function terminateReceiverSessions(): Promise<number> {
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ ended: boolean }>(
      'SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = $1',
      [APPLICATION_NAME],
    );
    return rows.filter((row) => row.ended).length;
  } finally {
    await admin.end();
  }
}

/** Several deliveries at once, so the pool holds several idle connections afterwards. */
async function deliverSeveral(): Promise<(number | 'network')[]> {
  return Promise.all([deliver(receiver), deliver(receiver), deliver(receiver)]);
}

describe('postgresStore when Postgres ends its connections', () => {
  it('lives through pg_terminate_backend of its idle connections, and onError is told', async () => {
    expect(await deliverSeveral()).toEqual([200, 200, 200]);
    const before = receiver.told.length;
    const ended = await terminateReceiverSessions();
    expect(ended).toBeGreaterThan(0);
    // Nothing is sent meanwhile: what onError is told now is the pool's own 'error' events, one
    // per idle connection ended (every one was idle).
    const told = await toldMoreThan(receiver, before + ended - 1, 5000);
    expect(receiver.exit).toBeUndefined();
    expect(receiver.told.slice(before)).toHaveLength(ended);
    expect(told[0]).toMatchObject(STORE_UNAVAILABLE);
    for (const error of receiver.told.slice(before)) expect(error).toMatchObject(STORE_UNAVAILABLE);
    expect(await deliverSeveral()).toEqual([200, 200, 200]);
    expect(receiver.exit).toBeUndefined();
  }, 30_000);

  it('lives through a full restart of Postgres: 503 while it is down, 200 once it is back', async () => {
    expect(await deliverSeveral()).toEqual([200, 200, 200]);
    await expectStoreComesBack(receiver, {
      stop: () => cluster.stop(),
      start: () => cluster.start(),
    });
  }, 60_000);
});
