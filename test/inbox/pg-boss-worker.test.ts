/**
 * The worker of a `pgBossInbox` (src/inbox/pg-boss-worker.ts) when pg-boss's fetch fails, on real
 * Postgres and the real pg-boss 10: the failure is logged, nothing is run for it, and the job is
 * taken at the next poll.
 */

import { randomUUID } from 'node:crypto';
import PgBoss from 'pg-boss';
import { describe, expect, it, vi } from 'vitest';
import { createReceiver, memoryStore } from '../../src/index.js';
import { pgBossInbox, type PgBossLike } from '../../src/postgres.js';
import { createTestDelivery, SECRET, storedOf } from '../helpers/deliveries.js';
import { useTestDatabase } from '../helpers/postgres.js';

const database = useTestDatabase('pgbw');
const { cleanups } = database;

describe('a pgBossInbox worker whose fetch fails', () => {
  it('logs the failure, runs nothing for it, and takes the job at the next poll', async () => {
    const schema = database.schema();
    const boss = new PgBoss({ connectionString: database.url, schema, schedule: false });
    boss.on('error', () => {});
    cleanups.push(() => boss.stop({ graceful: false, wait: true }));
    await boss.start();
    const fetch = boss.fetch.bind(boss);
    let failures = 1;
    boss.fetch = ((...args: Parameters<typeof fetch>) =>
      failures-- > 0
        ? Promise.reject(new Error('connection reset'))
        : fetch(...args)) as typeof fetch;

    const warnings: string[] = [];
    const logger = {
      debug: () => {},
      info: () => {},
      warn: (_fields: object, message: string) => void warnings.push(message),
      error: (_fields: object, message: string) => void warnings.push(message),
    };
    const inbox = pgBossInbox({
      boss: boss as unknown as PgBossLike,
      schema,
      queueName: `w-${randomUUID().slice(0, 8)}`,
      logger,
    });
    cleanups.push(() => inbox.close());
    const receiver = createReceiver({ secret: SECRET, store: memoryStore(), inbox, logger: false });
    const runs: string[] = [];
    receiver.on('UserSignedIn', (event) => void runs.push(event.idempotencyKey));
    const stored = storedOf(createTestDelivery());
    await inbox.enqueue(stored);

    const worker = inbox.work(receiver, { pollIntervalMs: 50 });
    cleanups.push(() => worker.close());
    await vi.waitFor(() => expect(runs).toEqual([stored.idempotencyKey]), { timeout: 10_000 });
    expect(warnings).toEqual(['inbox fetch failed']);
  }, 30_000);
});
