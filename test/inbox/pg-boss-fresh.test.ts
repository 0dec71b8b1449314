/**
 * pgBossInbox's module-level rules, loaded afresh in each test (`vi.resetModules()` and
 * `import()`), on real Postgres and the real pg-boss 10: which of pg-boss's states each inbox
 * state lists, the columns a listed job is read from, the retention of a job put back to wait,
 * what counts as a job id (a UUID) rather than a key, the schema and queue names taken.
 *
 * The same behaviours are tested through the inbox contract in pg-boss.test.ts; here the module
 * is evaluated inside the test, so a mutation tool that changes a module-level constant (the
 * states table, a regular expression, the SELECT's columns) sees it (docs/maintainers/mutation-testing.md).
 */

import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { createTestDelivery, SECRET, storedOf } from '../helpers/deliveries.js';
import { failureOf } from '../helpers/failure-of.js';
import { useTestDatabase } from '../helpers/postgres.js';

const database = useTestDatabase('pgbf');
const { cleanups } = database;

/** The inbox module and the receiver, loaded afresh. */
async function freshModules() {
  vi.resetModules();
  const inboxModule = await import('../../src/inbox/pg-boss.js');
  const core = await import('../../src/index.js');
  return { ...inboxModule, ...core };
}

/** A pg-boss schema of this test's own, dropped after it. */
const newSchema = (): string => database.schema();

function eventually<T>(check: () => Promise<T> | T, timeout = 10_000): Promise<T> {
  return vi.waitFor(check, { timeout, interval: 25 });
}

describe('pgBossInbox, loaded afresh', () => {
  it('lists each job under the state it is in, with what its run said', async () => {
    const { pgBossInbox, createReceiver, memoryStore } = await freshModules();
    const inbox = pgBossInbox({
      connectionString: database.url,
      schema: newSchema(),
      queueName: `fresh.q-${randomUUID().slice(0, 8)}`,
      attempts: 2,
      backoffMs: 30,
    });
    cleanups.push(() => inbox.close());
    const receiver = createReceiver({ secret: SECRET, store: memoryStore(), inbox, logger: false });
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    cleanups.push(async () => release());
    receiver.on('UserSignedIn', async (event) => {
      const { id } = (event.data as { user: { id: number } }).user;
      if (id === 2) throw new Error('CRM is down');
      if (id === 3) await held;
    });
    const [ok, failing, slow] = [1, 2, 3].map((id) =>
      storedOf(createTestDelivery('UserSignedIn', { user: { id } })),
    );
    for (const stored of [ok, failing, slow]) await inbox.enqueue(stored!);
    const keysOf = (jobs: { idempotencyKey: string }[]) =>
      jobs.map((job) => job.idempotencyKey).sort();
    expect(keysOf(await inbox.jobs({ state: 'waiting' }))).toEqual(
      [ok, failing, slow].map((stored) => stored!.idempotencyKey).sort(),
    );

    const worker = inbox.work(receiver, { pollIntervalMs: 20, concurrency: 3 });
    cleanups.push(() => worker.close());
    await eventually(async () => {
      expect(keysOf(await inbox.jobs({ state: 'completed' }))).toEqual([ok!.idempotencyKey]);
      expect(keysOf(await inbox.jobs({ state: 'failed' }))).toEqual([failing!.idempotencyKey]);
      expect(keysOf(await inbox.jobs({ state: 'active' }))).toEqual([slow!.idempotencyKey]);
    });
    const [listed] = await inbox.jobs({ state: 'completed' });
    const done = await inbox.getJob(listed!.id);
    expect(done).toMatchObject({
      event: 'UserSignedIn',
      state: 'completed',
      outcome: 'processed',
      receivedAt: ok!.receivedAt,
    });
    expect(Date.parse(done!.finishedAt!)).not.toBeNaN();
    const dead = await inbox.getJob(failing!.idempotencyKey);
    expect(dead).toMatchObject({ state: 'failed', attemptsMade: 2 });
    expect(dead!.reason).toMatch(/CRM is down/);
    // Only a completed job has an outcome.
    expect(Object.keys(dead!)).not.toContain('outcome');
    expect(Object.keys((await inbox.getJob(slow!.idempotencyKey))!)).not.toContain('outcome');
    expect(await inbox.jobs()).toHaveLength(3);

    // A job is named by its id, in either case, or by its key; text around an id is a key.
    expect(await inbox.getJob(done!.id.toUpperCase())).toMatchObject({ id: done!.id });
    expect(await inbox.getJob(ok!.idempotencyKey)).toMatchObject({ id: done!.id });
    expect(await inbox.getJob(`x${done!.id}`)).toBeUndefined();
    expect(await inbox.getJob(`${done!.id}x`)).toBeUndefined();
    expect(await inbox.getJob(done!.id.replace(/-/g, ''))).toBeUndefined();
    release();
  }, 30_000);

  it('puts a failed run back to wait, delayed, until its retry', async () => {
    const { pgBossInbox, createReceiver, memoryStore } = await freshModules();
    const [schema, queueName] = [newSchema(), `fresh-r-${randomUUID().slice(0, 8)}`];
    const inbox = pgBossInbox({
      connectionString: database.url,
      schema,
      queueName,
      attempts: 2,
      backoffMs: 60_000,
    });
    cleanups.push(() => inbox.close());
    const receiver = createReceiver({ secret: SECRET, store: memoryStore(), inbox, logger: false });
    let runs = 0;
    receiver.on('UserSignedIn', () => {
      runs++;
      throw new Error('CRM is down');
    });
    const stored = storedOf(createTestDelivery());
    await inbox.enqueue(stored);
    const worker = inbox.work(receiver, { pollIntervalMs: 20 });
    cleanups.push(() => worker.close());
    await eventually(async () =>
      expect(await inbox.jobs({ state: 'delayed' })).toMatchObject([
        { idempotencyKey: stored.idempotencyKey, state: 'delayed', attemptsMade: 1 },
      ]),
    );
    expect(runs).toBe(1);
    expect(await inbox.jobs({ state: 'failed' })).toEqual([]);
    // Its retry comes due (the clock moved on, with the worker stopped): it waits for a worker.
    await worker.close();
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    await admin
      .query(
        `UPDATE "${schema}".job SET start_after = now() - interval '1 second' WHERE name = $1`,
        [queueName],
      )
      .finally(() => admin.end());
    expect(await inbox.jobs({ state: 'delayed' })).toEqual([]);
    expect(await inbox.jobs({ state: 'waiting' })).toMatchObject([
      { idempotencyKey: stored.idempotencyKey, state: 'waiting', attemptsMade: 1 },
    ]);
  }, 30_000);

  it("names a tenant's job by its key under that tenant, never by its id under another", async () => {
    const { pgBossInbox } = await freshModules();
    const inbox = pgBossInbox({
      connectionString: database.url,
      schema: newSchema(),
      queueName: `fresh-t-${randomUUID().slice(0, 8)}`,
    });
    cleanups.push(() => inbox.close());
    const stored = { ...storedOf(createTestDelivery()), tenant: 'school-a' };
    await inbox.enqueue(stored);
    const job = await inbox.getJob(stored.idempotencyKey, { tenant: 'school-a' });
    expect(job).toMatchObject({ idempotencyKey: stored.idempotencyKey, tenant: 'school-a' });
    // Its id names it on its own; under a tenant, a name is a key, and no key is that id.
    expect(await inbox.getJob(job!.id)).toMatchObject({ id: job!.id, tenant: 'school-a' });
    expect(await inbox.getJob(job!.id, { tenant: 'school-b' })).toBeUndefined();
    expect(await inbox.getJob(stored.idempotencyKey)).toBeUndefined();
    expect(await inbox.jobs()).toMatchObject([{ tenant: 'school-a' }]);
  }, 30_000);

  it('takes only schema and queue names Postgres and pg-boss take', async () => {
    const { pgBossInbox, ConfigError } = await freshModules();
    const PgBoss = (await import('pg-boss')).default;
    const boss = new PgBoss({ connectionString: database.url, schema: newSchema() });
    boss.on('error', () => {});
    cleanups.push(() => boss.stop({ graceful: false, wait: true }));
    await boss.start();
    /** What starting an inbox on the running pg-boss, told `schema`, comes to. */
    const start = async (schema: string) => {
      const inbox = pgBossInbox({ boss, schema, queueName: 'q' });
      try {
        return await inbox.start().then(
          () => 'started',
          (error: unknown) => (error instanceof ConfigError ? error.message : String(error)),
        );
      } finally {
        await inbox.close();
      }
    };
    const badSchema = 'pgBossInbox: schema must be a name of letters, digits and "_"';
    for (const schema of ['1abc', 'a-b', `a${'b'.repeat(63)}`, 'ab;', ' ab', 'ab ', '']) {
      expect(await start(schema)).toBe(badSchema);
    }
    // A name of 63 characters is a name: it is refused for holding no pg-boss tables, not for it.
    const longest = `_${'Z9'.repeat(31)}`;
    expect(await start(longest)).toBe(
      `pgBossInbox: no pg-boss job table in the schema "${longest}": pass the schema your boss was made with`,
    );
    for (const queueName of ['a b', 'q!', `x${'y'.repeat(100)}`, ' q', 'q ']) {
      const error = await failureOf(
        Promise.resolve().then(() =>
          pgBossInbox({ connectionString: database.url, schema: 'pgboss', queueName }),
        ),
      );
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.message).toMatch(/queueName/);
    }
  }, 30_000);
});
