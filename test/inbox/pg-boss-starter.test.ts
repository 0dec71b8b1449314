/**
 * The pg-boss a `pgBossInbox` starts (src/inbox/pg-boss-starter.ts), on real Postgres and the
 * real pg-boss 10: a failed start of the inbox's own pg-boss is tried again with a new one, a
 * stop waits until that pg-boss has let go of its connections, a pg-boss the inbox was given
 * is never stopped by it and keeps no listener of it, and a schema whose version pg-boss cannot
 * tell is refused by name.
 */

import { randomUUID } from 'node:crypto';
import PgBoss from 'pg-boss';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import type { PgBossLike } from '../../src/inbox/pg-boss.js';
import { BossStarter } from '../../src/inbox/pg-boss-starter.js';
import { failureOf } from '../helpers/failure-of.js';
import { useTestDatabase } from '../helpers/postgres.js';

const database = useTestDatabase('pgbs');
const { cleanups } = database;

/** A pg-boss schema of this test's own, dropped after it. */
const newSchema = (): string => database.schema();

/** A real pg-boss that keeps what it was asked to stop with and when it said it stopped. */
function recordedBoss(connectionString: string, schema: string) {
  const boss = new PgBoss({ connectionString, schema, schedule: false });
  const stops: unknown[] = [];
  let stopped = false;
  boss.on('stopped', () => {
    stopped = true;
  });
  const stop = boss.stop.bind(boss);
  boss.stop = (options) => {
    stops.push(options);
    return stop(options);
  };
  cleanups.push(() => stop({ graceful: false, wait: true }));
  return {
    boss,
    like: boss as unknown as PgBossLike,
    stops,
    get stopped() {
      return stopped;
    },
  };
}

function starterOf(given: PgBossLike | undefined, make: () => Promise<PgBossLike>, schema: string) {
  return new BossStarter({
    given,
    schema,
    queueName: `q-${randomUUID().slice(0, 8)}`,
    logger: undefined,
    make,
  });
}

describe("a pgBossInbox's own pg-boss", () => {
  it('is made again after a start that failed, and the failed one is stopped without waiting', async () => {
    const schema = newSchema();
    // The first pg-boss points at a port nothing listens on: its start fails.
    const made = [
      recordedBoss('postgres://postgres@127.0.0.1:1/test', schema),
      recordedBoss(database.url, schema),
    ];
    let calls = 0;
    const starter = starterOf(undefined, () => Promise.resolve(made[calls++]!.like), schema);
    cleanups.push(() => starter.stop());

    const failure = await failureOf(starter.started());
    expect(failure).not.toBeInstanceOf(ConfigError);
    // A pg-boss that never started has nothing to finish: it is let go at once, never awaited.
    expect(made[0]!.stops).toEqual([{ graceful: false, wait: false }]);

    const { boss } = await starter.started();
    expect(calls).toBe(2);
    expect(boss).toBe(made[1]!.like);
  }, 30_000);

  it('is stopped by stop(), which resolves once pg-boss has closed its connections', async () => {
    const schema = newSchema();
    const own = recordedBoss(database.url, schema);
    const starter = starterOf(undefined, () => Promise.resolve(own.like), schema);
    await starter.started();

    await starter.stop();
    // pg-boss says 'stopped' after closing its pool: a stop that did not wait would return first.
    expect(own.stopped).toBe(true);
    expect(own.stops).toHaveLength(1);
    expect(own.boss.listenerCount('error')).toBe(0);
  }, 30_000);
});

describe('a pg-boss the inbox was given', () => {
  it('is never stopped by it, and keeps no error listener of it after stop()', async () => {
    const schema = newSchema();
    const given = recordedBoss(database.url, schema);
    await given.boss.start();
    const before = given.boss.listenerCount('error');
    const starter = starterOf(
      given.like,
      () => Promise.reject(new Error('a given pg-boss is never made')),
      schema,
    );

    await starter.started();
    expect(given.boss.listenerCount('error')).toBe(before + 1);
    await starter.stop();

    expect(given.stops).toEqual([]);
    expect(given.stopped).toBe(false);
    expect(given.boss.listenerCount('error')).toBe(before);
  }, 30_000);

  it('is refused by name when its schema holds no version pg-boss can read', async () => {
    const schema = newSchema();
    const given = recordedBoss(database.url, schema);
    await given.boss.start();
    // pg-boss answers null for a version table without a row.
    await given.boss.getDb().executeSql(`DELETE FROM "${schema}".version`, []);
    expect(await given.boss.schemaVersion()).toBeNull();
    const starter = starterOf(given.like, () => Promise.reject(new Error('unused')), schema);
    cleanups.push(() => starter.stop());

    const failure = await failureOf(starter.started());
    expect(failure).toBeInstanceOf(ConfigError);
    expect(failure.message).toBe(`pgBossInbox: pg-boss is not installed in the schema "${schema}"`);
  }, 30_000);
});
