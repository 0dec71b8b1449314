/** The options of the pg-boss that pgBossInbox makes for a connectionString. */

import { describe, expect, it } from 'vitest';
import { bossOptions } from '../../src/inbox/pg-boss.js';

const settings = {
  schema: 'inbox_schema',
  keepCompletedMs: 7 * 24 * 3_600_000,
  keepFailedMs: 30 * 24 * 3_600_000,
  expireInMs: 15 * 60_000,
};

describe('bossOptions', () => {
  it('makes a pg-boss without cron, on the inbox schema, archiving after the inbox retention', () => {
    expect(bossOptions('postgres://db/inbox', settings)).toEqual({
      connectionString: 'postgres://db/inbox',
      schema: 'inbox_schema',
      schedule: false,
      maintenanceIntervalSeconds: 60,
      superviseIntervalSeconds: 60,
      archiveCompletedAfterSeconds: 7 * 24 * 3600,
      archiveFailedAfterSeconds: 30 * 24 * 3600,
    });
  });

  it.each([
    // expireInMs → how often expired runs are looked for: half of it, 1 s to 60 s, whole seconds.
    [1_000, 1],
    [2_500, 2],
    [10_000, 5],
    [119_000, 60],
    [120_000, 60],
    [121_000, 60],
    [15 * 60_000, 60],
  ])('looks for expired runs every half of expireInMs %i ms: %i s', (expireInMs, every) => {
    const options = bossOptions('postgres://db/inbox', { ...settings, expireInMs });
    expect(options['maintenanceIntervalSeconds']).toBe(every);
    expect(options['superviseIntervalSeconds']).toBe(every);
  });
});
