/**
 * Stages and nowOrLater: synchronous until a step gives a promise, then waiting for it only; each
 * step takes what the step before gave (now or later), and the run stops at the first end.
 */

import { describe, expect, it } from 'vitest';
import { isPromiseLike, nowOrLater, Stages } from '../src/receiving/run-steps.js';

describe('isPromiseLike', () => {
  it('is true for a promise and for any object or function with a then method', () => {
    expect(isPromiseLike(Promise.resolve())).toBe(true);
    expect(isPromiseLike({ then: () => undefined })).toBe(true);
    expect(isPromiseLike(Object.assign(() => undefined, { then: () => undefined }))).toBe(true);
  });

  it('is false for values, null, and a then that is not a function', () => {
    for (const value of [undefined, null, 0, 'then', true, {}, { then: 1 }, () => undefined]) {
      expect(isPromiseLike(value), String(value)).toBe(false);
    }
  });
});

describe('Stages', () => {
  /** What ends a run in these tests. */
  class Stop {
    constructor(readonly why: string) {}
  }
  const isStop = (value: unknown): value is Stop => value instanceof Stop;
  /** The steps that ran, by name: the facts every step reads. */
  type Log = string[];
  const start = () => Stages.start<number, Log, Stop>(isStop);
  /** A step that records its name, then gives what `result` makes of its input. */
  const step =
    <In, Out>(name: string, result: (input: In) => Out) =>
    (input: In, log: Log): Out => {
      log.push(name);
      return result(input);
    };

  it('gives each step what the step before gave, at once when no step gives a promise', () => {
    const log: Log = [];
    const run = start()
      .then(step('a', (n: number) => n + 1))
      .then(step('b', (n: number) => `b${n}`))
      .then(step('c', (text: string) => [text]));
    const given = run.run(1, log);
    expect(given).toEqual(['b2']);
    expect(log).toEqual(['a', 'b', 'c']);
  });

  it('stops at the first end, running no step after it', () => {
    const log: Log = [];
    const run = start()
      .then(step('a', (n: number) => n + 1))
      .then(step('b', (n: number): number | Stop => new Stop(`at ${n}`)))
      .then(step('c', (n: number) => n * 10));
    const given = run.run(1, log);
    expect(given).toBeInstanceOf(Stop);
    expect((given as Stop).why).toBe('at 2');
    expect(log).toEqual(['a', 'b']);
  });

  it('waits for a step that gives a promise, then goes on from the next step', async () => {
    const log: Log = [];
    const run = start()
      .then(step('a', (n: number) => n + 1))
      .then(step('b', (n: number) => Promise.resolve(n * 10)))
      .then(step('c', (n: number) => n + 1))
      .then(step('d', (n: number): Promise<number | Stop> => Promise.resolve(new Stop(`at ${n}`))))
      .then(step('e', (n: number) => n));
    const given = run.run(1, log);
    expect(isPromiseLike(given)).toBe(true);
    expect(log).toEqual(['a', 'b']);
    expect(((await given) as Stop).why).toBe('at 21');
    expect(log).toEqual(['a', 'b', 'c', 'd']);
  });

  it('waits for a thenable that is not a native promise, as a client library may give', async () => {
    const thenable = <T>(value: T): PromiseLike<T> => {
      const settled = Promise.resolve(value);
      return { then: settled.then.bind(settled) } as PromiseLike<T>;
    };
    const log: Log = [];
    const run = start()
      .then(step('a', (n: number) => thenable(n + 1)))
      .then(step('b', (n: number) => n * 10));
    const given = run.run(1, log);
    expect(log).toEqual(['a']);
    expect(await given).toBe(20);
    expect(log).toEqual(['a', 'b']);
  });

  it('gives the last step’s value after a promise when no step ended the run', async () => {
    const log: Log = [];
    const run = start()
      .then(step('a', (n: number) => Promise.resolve(n + 1)))
      .then(step('b', (n: number) => n * 3));
    expect(await run.run(1, log)).toBe(6);
    expect(log).toEqual(['a', 'b']);
  });

  it('leaves a run unchanged when a step is added to it', () => {
    const first = start().then(step('a', (n: number) => n + 1));
    const longer = first.then(step('b', (n: number) => n * 100));
    expect(first.run(1, [])).toBe(2);
    expect(longer.run(1, [])).toBe(200);
  });
});

describe('nowOrLater', () => {
  it('calls next at once on a value, and after a promise on a promise', async () => {
    expect(
      nowOrLater(
        () => 2,
        (n) => n * 3,
      ),
    ).toBe(6);
    const later = nowOrLater(
      () => Promise.resolve(2),
      (n) => n * 3,
    );
    expect(isPromiseLike(later)).toBe(true);
    expect(await later).toBe(6);
  });

  it('gives a failure, thrown or rejected, to `failed`', async () => {
    const boom = new Error('boom');
    expect(
      nowOrLater(
        () => {
          throw boom;
        },
        () => 'next',
        (cause) => cause,
      ),
    ).toBe(boom);
    expect(
      await nowOrLater(
        () => Promise.reject(boom),
        () => 'next',
        (cause) => cause,
      ),
    ).toBe(boom);
  });

  it('lets a failure through without `failed`', async () => {
    const boom = new Error('boom');
    expect(() =>
      nowOrLater(
        () => {
          throw boom;
        },
        () => 'next',
      ),
    ).toThrow(boom);
    await expect(
      nowOrLater(
        () => Promise.reject(boom),
        () => 'next',
      ),
    ).rejects.toBe(boom);
  });
});
