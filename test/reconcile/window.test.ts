/**
 * A reconcile run's window on its own: where it starts and ends, how far back the paid invoices
 * reach, and each refusal with the message that tells the seller what to change. The rules: an
 * entity younger than `minAgeMs` is left to its webhooks, and a window may not reach back past the
 * 35 days a store keeps the records of handled entities (docs/reconcile.md).
 */

import { describe, expect, it } from 'vitest';
import { sinceMs, untilMs, windowOf, type WindowSettings } from '../../src/reconcile/window.js';
import { configRefusal as refusal } from '../helpers/failure-of.js';
import { DAY, HOUR, MINUTE, NOW } from './helpers.js';

/** The defaults of createReconciler: entities younger than 5 hours left out, invoices 7 days more. */
const settings: WindowSettings = {
  now: NOW,
  minAgeMs: 5 * HOUR,
  lookbackMs: 7 * DAY,
  listsInvoices: true,
};

describe('sinceMs', () => {
  it.each<[unknown, number]>([
    [new Date(NOW - DAY), NOW - DAY],
    [NOW - 2 * DAY, NOW - 2 * DAY],
    [0, 0],
    ['90m', NOW - 90 * MINUTE],
    ['48h', NOW - 48 * HOUR],
    ['1d 12h', NOW - 36 * HOUR],
    // A duration is read without the spaces around it (the CLI and config files keep them).
    ['  7d ', NOW - 7 * DAY],
  ])('reads %j', (since, expected) => {
    expect(sinceMs(since, NOW)).toBe(expected);
  });

  it.each<[unknown, string]>([
    ['2 days', '"2 days"'],
    ['', '""'],
    ['x'.repeat(60), JSON.stringify('x'.repeat(40))],
    [null, 'null'],
    [undefined, 'undefined'],
    [{}, 'object'],
    [true, 'boolean'],
  ])('refuses %j, naming what it got', (since, shown) => {
    expect(refusal(() => sinceMs(since, NOW)).message).toBe(
      "since must be a Date, ms since the epoch, or a duration before now such as '90m', '48h' " +
        `or '7d'; got ${shown}`,
    );
  });

  it.each([NaN, Infinity, -Infinity])('refuses the number %s', (since) => {
    expect(refusal(() => sinceMs(since, NOW)).message).toBe('since must be a valid date');
  });

  it('refuses an invalid Date', () => {
    expect(refusal(() => sinceMs(new Date('no date'), NOW)).message).toBe(
      'since must be a valid date',
    );
  });
});

describe('untilMs', () => {
  it('is undefined when left out, and reads a Date or ms since the epoch', () => {
    expect(untilMs(undefined)).toBeUndefined();
    expect(untilMs(new Date(NOW - HOUR))).toBe(NOW - HOUR);
    expect(untilMs(NOW - 2 * HOUR)).toBe(NOW - 2 * HOUR);
  });

  it.each<[unknown, string]>([
    ['1h', '"1h"'],
    [null, 'null'],
    [{}, 'object'],
  ])('refuses %j: a duration is no end', (until, shown) => {
    expect(refusal(() => untilMs(until)).message).toBe(
      `until must be a Date or ms since the epoch; got ${shown}`,
    );
  });

  it.each([NaN, Infinity])('refuses the number %s', (until) => {
    expect(refusal(() => untilMs(until)).message).toBe('until must be a valid date');
  });

  it('refuses an invalid Date', () => {
    expect(refusal(() => untilMs(new Date(Number.NaN))).message).toBe('until must be a valid date');
  });
});

describe('windowOf', () => {
  it('ends minAgeMs before now, and lists invoices lookbackMs before since', () => {
    expect(windowOf('2d', undefined, settings)).toEqual({
      from: NOW - 2 * DAY,
      to: NOW - 5 * HOUR,
      invoicesFrom: NOW - 9 * DAY,
    });
  });

  it('ends at until when that is earlier, and never later than now less minAgeMs', () => {
    expect(windowOf('2d', NOW - DAY, settings).to).toBe(NOW - DAY);
    expect(windowOf('2d', NOW + DAY, settings).to).toBe(NOW - 5 * HOUR);
    expect(windowOf('2d', NOW - 5 * HOUR + 1, settings).to).toBe(NOW - 5 * HOUR);
    expect(windowOf('2d', undefined, { ...settings, minAgeMs: 0 }).to).toBe(NOW);
  });

  it('refuses an empty window, one millisecond long at the least', () => {
    const end = NOW - 5 * HOUR;
    expect(windowOf(end - 1, undefined, settings)).toMatchObject({ from: end - 1, to: end });
    expect(refusal(() => windowOf(end, undefined, settings)).message).toBe(
      'the window is empty: since (2026-11-20T07:00:00.000Z) is not before its end ' +
        '(2026-11-20T07:00:00.000Z: until or now, less minAgeMs 18000000 ms, which leaves ' +
        'younger entities to their webhooks)',
    );
    expect(refusal(() => windowOf(NOW - DAY, NOW - 2 * DAY, settings)).message).toMatch(
      /^the window is empty: since \(2026-11-19T12:00:00\.000Z\) is not before its end \(2026-11-18T12:00:00\.000Z/,
    );
  });

  it('reaches back 35 days at the most, counting lookbackMs when it lists invoices', () => {
    // 28 days and the 7 of lookbackMs: 35 days, the most a store remembers.
    expect(windowOf(NOW - 28 * DAY, undefined, settings).invoicesFrom).toBe(NOW - 35 * DAY);
    expect(refusal(() => windowOf(NOW - 28 * DAY - 1, undefined, settings)).message).toBe(
      'the window reaches back to 2026-10-16T11:59:59.999Z (since less lookbackMs 604800000 ms, ' +
        'for invoices), past what the store remembers: records of handled entities are kept 35 ' +
        'days, so an older entity a webhook handled would be recovered again; choose a later since',
    );
    // Without invoices, the window itself may reach 35 days.
    const others = { ...settings, listsInvoices: false };
    expect(windowOf(NOW - 35 * DAY, undefined, others)).toMatchObject({
      from: NOW - 35 * DAY,
      invoicesFrom: NOW - 42 * DAY,
    });
    expect(refusal(() => windowOf(NOW - 35 * DAY - 1, undefined, others)).message).toBe(
      'the window reaches back to 2026-10-16T11:59:59.999Z, past what the store remembers: ' +
        'records of handled entities are kept 35 days, so an older entity a webhook handled ' +
        'would be recovered again; choose a later since',
    );
  });
});
