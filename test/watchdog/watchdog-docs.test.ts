/**
 * docs/watchdog.md's example report is what the watchdog says: the report a state like the one it
 * describes gives, and the platform's rules it follows (docs/platform.md): a failed delivery's
 * last attempt 11 + 33 + 77 + 165 minutes after its first, an endpoint disabled 14 days after its
 * last success.
 */

import { describe, expect, it } from 'vitest';
import { healthOf, type Health } from '../../src/watchdog/health.js';
import { codeBlocks } from '../helpers/markdown.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** The page's example `Health` report: its one `json` block. */
function example(): Health {
  const blocks = codeBlocks('docs/watchdog.md').filter((block) => block.lang === 'json');
  expect(blocks).toHaveLength(1);
  return JSON.parse(blocks[0]!.body) as Health;
}

describe("docs/watchdog.md's example report", () => {
  it('follows the platform’s rules', () => {
    const report = example();
    const [delivery] = report.atRisk;
    expect(Date.parse(delivery!.givesUpAt) - Date.parse(delivery!.firstAttemptAt)).toBe(
      (11 + 33 + 77 + 165) * MINUTE,
    );
    expect(Date.parse(report.disablesAt!) - Date.parse(report.lastSuccessAt!)).toBe(14 * DAY);
  });

  it('is what the watchdog reports for the state it describes', () => {
    const report = example();
    const [delivery] = report.atRisk;
    const lastAttemptAt = Date.parse(report.lastAttemptAt!);
    const health = healthOf(
      {
        lastSuccessAt: Date.parse(report.lastSuccessAt!),
        lastAttemptAt,
        failingSince: Date.parse(report.failingSince!),
        failing: [
          {
            key: delivery!.idempotencyKey,
            event: delivery!.event,
            firstAttemptAt: Date.parse(delivery!.firstAttemptAt),
            attemptsSeen: delivery!.attemptsSeen,
            lastAttemptAt,
          },
        ],
      },
      { now: lastAttemptAt + MINUTE, failingAfterMs: 30 * MINUTE },
    );
    expect(health).toEqual(report);
  });
});
