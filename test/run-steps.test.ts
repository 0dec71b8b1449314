/**
 * runSteps and andThen: synchronous until a step gives a promise, then waiting for it only; the
 * run goes on after a step that gave `undefined` (now or later) and stops at the first ending.
 */

import { describe, expect, it } from 'vitest';
import { andThen, isPromiseLike, runSteps, type Step } from '../src/run-steps.js';

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

describe('runSteps', () => {
  /** A step that records its name, then gives `result`. */
  const step =
    (name: string, result?: () => unknown): Step<string[], string> =>
    (log) => {
      log.push(name);
      return result?.() as string | undefined;
    };

  it('runs synchronous steps in order and gives the first ending at once', () => {
    const log: string[] = [];
    const ended = runSteps([step('a'), step('b', () => 'end b'), step('c', () => 'end c')], log);
    expect(ended).toBe('end b');
    expect(log).toEqual(['a', 'b']);
  });

  it('waits for a step that gives a promise, then goes on from the next step', async () => {
    const log: string[] = [];
    const ended = runSteps(
      [
        step('a'),
        step('b', () => Promise.resolve(undefined)),
        step('c'),
        step('d', () => Promise.resolve('end d')),
        step('e', () => 'end e'),
      ],
      log,
    );
    expect(isPromiseLike(ended)).toBe(true);
    expect(log).toEqual(['a', 'b']);
    expect(await ended).toBe('end d');
    expect(log).toEqual(['a', 'b', 'c', 'd']);
  });

  it('waits for a thenable that is not a native promise, as a client library may give', async () => {
    const thenable = (value: string | undefined) => {
      const settled = Promise.resolve(value);
      return { then: settled.then.bind(settled) } as PromiseLike<string | undefined>;
    };
    const log: string[] = [];
    const ended = runSteps(
      [step('a', () => thenable(undefined)), step('b', () => thenable('end b')), step('c')],
      log,
    );
    expect(log).toEqual(['a']);
    expect(await ended).toBe('end b');
    expect(log).toEqual(['a', 'b']);
  });

  it('ends with what a promise resolves to, running no step after it', async () => {
    const log: string[] = [];
    expect(await runSteps([step('a', () => Promise.resolve('end a')), step('b')], log)).toBe(
      'end a',
    );
    expect(log).toEqual(['a']);
  });

  it('starts at `from`', () => {
    const log: string[] = [];
    expect(runSteps([step('a', () => 'end a'), step('b', () => 'end b')], log, 1)).toBe('end b');
    expect(log).toEqual(['b']);
  });

  it('throws when no step ended the run', async () => {
    expect(() => runSteps([step('a')], [])).toThrow('a run ended without an ending');
    const ended = runSteps([step('a', () => Promise.resolve(undefined))], []);
    await expect(ended).rejects.toBeInstanceOf(Error);
    await expect(ended).rejects.toMatchObject({
      name: 'Error',
      message: 'a run ended without an ending',
    });
  });
});

describe('andThen', () => {
  it('calls next at once on a value, and after a promise on a promise', async () => {
    expect(
      andThen(
        () => 2,
        (n) => n * 3,
      ),
    ).toBe(6);
    const later = andThen(
      () => Promise.resolve(2),
      (n) => n * 3,
    );
    expect(isPromiseLike(later)).toBe(true);
    expect(await later).toBe(6);
  });

  it('gives a failure, thrown or rejected, to `failed`', async () => {
    const boom = new Error('boom');
    expect(
      andThen(
        () => {
          throw boom;
        },
        () => 'next',
        (cause) => cause,
      ),
    ).toBe(boom);
    expect(
      await andThen(
        () => Promise.reject(boom),
        () => 'next',
        (cause) => cause,
      ),
    ).toBe(boom);
  });

  it('lets a failure through without `failed`', async () => {
    const boom = new Error('boom');
    expect(() =>
      andThen(
        () => {
          throw boom;
        },
        () => 'next',
      ),
    ).toThrow(boom);
    await expect(
      andThen(
        () => Promise.reject(boom),
        () => 'next',
      ),
    ).rejects.toBe(boom);
  });
});
