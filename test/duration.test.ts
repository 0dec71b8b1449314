/**
 * The one reader of a typed duration (src/utils/duration.ts): what `since`, `every`, `--since` and
 * `--down-for` accept, and what they refuse rather than guess.
 */

import { describe, expect, it } from 'vitest';
import { durationOf } from '../src/utils/duration.js';

describe('durationOf', () => {
  it('reads days, hours, minutes and seconds, alone or together, and whole milliseconds', () => {
    expect(durationOf('48h')).toBe(48 * 3_600_000);
    expect(durationOf('90m')).toBe(90 * 60_000);
    expect(durationOf('7d')).toBe(7 * 86_400_000);
    expect(durationOf('30s')).toBe(30_000);
    expect(durationOf('4h 46m')).toBe(4 * 3_600_000 + 46 * 60_000);
    expect(durationOf('1d12h')).toBe(36 * 3_600_000);
    expect(durationOf('1500ms')).toBe(1500);
    expect(durationOf('0m')).toBe(0);
  });

  it('refuses what it would have to guess', () => {
    for (const text of [
      '',
      ' 5m',
      '5m ',
      '1.5h',
      'h',
      '5',
      '5 m',
      '46m 4h',
      '1h1h',
      '-5m',
      '5M',
      '5ms1s',
    ]) {
      expect([text, durationOf(text)]).toEqual([text, undefined]);
    }
  });
});
