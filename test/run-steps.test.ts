/**
 * Stages: each step, synchronous or async, is awaited and takes what the step before gave; the
 * run stops at the first end, and a step that throws or rejects rejects the run with what it
 * threw, running no step after it.
 */

import { describe, expect, expectTypeOf, it } from 'vitest';
import { Stages } from '../src/receiving/pipeline.js';

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

  it('gives each step what the step before gave, in order, and the last step’s value', async () => {
    const log: Log = [];
    const run = start()
      .then(step('a', (n: number) => n + 1))
      .then(step('b', (n: number) => `b${n}`))
      .then(step('c', (text: string) => [text]));
    const given = run.run(1, log);
    expect(given).toBeInstanceOf(Promise);
    expect(await given).toEqual(['b2']);
    expect(log).toEqual(['a', 'b', 'c']);
  });

  it('awaits an async step before the next one starts', async () => {
    const log: Log = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const run = start()
      .then(
        step('a', async (n: number) => {
          await gate;
          log.push('a done');
          return n * 10;
        }),
      )
      .then(step('b', (n: number) => n + 1));
    const given = run.run(1, log);
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(['a']);
    release();
    expect(await given).toBe(11);
    expect(log).toEqual(['a', 'a done', 'b']);
  });

  it('stops at a synchronous step’s end, running no step after it', async () => {
    const log: Log = [];
    const run = start()
      .then(step('a', (n: number) => n + 1))
      .then(step('b', (n: number): number | Stop => new Stop(`at ${n}`)))
      .then(step('c', (n: number) => n * 10));
    const given = await run.run(1, log);
    expect(given).toBeInstanceOf(Stop);
    expect((given as Stop).why).toBe('at 2');
    expect(log).toEqual(['a', 'b']);
  });

  it('stops at an async step’s end, running no step after it', async () => {
    const log: Log = [];
    const run = start()
      .then(step('a', async (n: number) => n * 10))
      .then(step('b', (n: number) => n + 1))
      .then(step('c', async (n: number): Promise<number | Stop> => new Stop(`at ${n}`)))
      .then(step('d', (n: number) => n));
    const given = await run.run(1, log);
    expect((given as Stop).why).toBe('at 11');
    expect(log).toEqual(['a', 'b', 'c']);
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
    expect(await run.run(1, log)).toBe(20);
    expect(log).toEqual(['a', 'b']);
  });

  it('rejects with what a step threw synchronously, running no step after it', async () => {
    const boom = new Error('boom');
    const log: Log = [];
    const run = start()
      .then(step('a', (n: number) => n + 1))
      .then(
        step('b', (): number => {
          throw boom;
        }),
      )
      .then(step('c', (n: number) => n));
    // A step that throws never throws out of `run`: the caller awaits one promise.
    const given = run.run(1, log);
    expect(given).toBeInstanceOf(Promise);
    await expect(given).rejects.toBe(boom);
    expect(log).toEqual(['a', 'b']);
  });

  it('rejects with what a step rejected with, running no step after it', async () => {
    const boom = new Error('boom');
    const log: Log = [];
    const run = start()
      .then(step('a', async (n: number) => n + 1))
      .then(step('b', (): Promise<number> => Promise.reject(boom)))
      .then(step('c', (n: number) => n));
    await expect(run.run(1, log)).rejects.toBe(boom);
    expect(log).toEqual(['a', 'b']);
  });

  it('gives its input back when it has no step', async () => {
    expect(await start().run(7, [])).toBe(7);
  });

  it('leaves a run unchanged when a step is added to it', async () => {
    const first = start().then(step('a', (n: number) => n + 1));
    const longer = first.then(step('b', (n: number) => n * 100));
    expect(await first.run(1, [])).toBe(2);
    expect(await longer.run(1, [])).toBe(200);
  });

  it('types each step’s input as what the step before gives, without the end', () => {
    const run = start().then(async (n: number): Promise<string | Stop> => `${n}`);
    expectTypeOf(run.run).returns.toEqualTypeOf<Promise<string | Stop>>();
    // @ts-expect-error the step before gives a string, not a number
    run.then((n: number) => n + 1);
    run.then((text: string) => text.length);
  });
});
