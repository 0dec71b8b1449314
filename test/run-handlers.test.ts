/**
 * runHandlers on its own: which outcomes come back at once and which as a promise, every failure
 * counted (a throw, a rejection, even with `undefined`), the shared context, and the deadline.
 */

import { describe, expect, it } from 'vitest';
import { DeadlineQueue } from '../src/utils/deadlines.js';
import type { WebhookEvent } from '../src/platform/events/index.js';
import {
  isTimedOut,
  runHandlers,
  type AnyHandler,
  type HandlerContext,
  type HandlersResult,
  type HandlersTimedOut,
} from '../src/receiving/run-handlers.js';

const event = {
  event: 'test.ping',
  idempotencyKey: 'key-run-handlers',
  timestamp: '2026-01-01T00:00:00.000Z',
  data: {},
} as unknown as WebhookEvent<string>;

/** A queue whose deadline no test here reaches. */
const far = () => new DeadlineQueue(60_000);

const boom = new Error('boom');
const ok: AnyHandler = () => undefined;
const throws: AnyHandler = () => {
  throw boom;
};
const resolves: AnyHandler = () => Promise.resolve('done');

function isPromise(value: unknown): value is Promise<unknown> {
  return value instanceof Promise;
}

describe('runHandlers, no handler returns a promise', () => {
  it('answers success at once, with no promise, for none or for handlers that all return', () => {
    expect(runHandlers([], event, far())).toEqual({ ok: true });
    const values: AnyHandler[] = [ok, () => 42, () => ({ then: 'not a function' })];
    expect(runHandlers(values, event, far())).toEqual({ ok: true });
    // null, a function, an empty string: values a handler may return that are no promise.
    const others: AnyHandler[] = [() => null, () => () => undefined, () => ''];
    expect(runHandlers(others, event, far())).toEqual({ ok: true });
  });

  it('waits for a thenable a handler returns, even one that is a function', async () => {
    let settle!: () => void;
    const thenable = Object.assign(() => undefined, {
      then: (resolve: () => void) => {
        settle = resolve;
      },
    });
    const running = runHandlers([() => thenable], event, far());
    expect(isPromise(running)).toBe(true);
    // Promise.resolve calls `then` a microtask later.
    await new Promise((resolve) => setTimeout(resolve, 0));
    settle();
    expect(await running).toEqual({ ok: true });
  });

  it('answers a failure at once with exactly what the one failing handler threw', () => {
    const settled = runHandlers([ok, throws, ok], event, far());
    expect(settled).toEqual({ ok: false, error: boom });
    expect((settled as { error: unknown }).error).toBe(boom);
  });

  it('counts a handler that throws undefined as failed', () => {
    const settled = runHandlers(
      [
        () => {
          throw undefined;
        },
      ],
      event,
      far(),
    );
    expect(settled).toEqual({ ok: false, error: undefined });
  });

  it('gathers several synchronous failures into one AggregateError, in order', () => {
    const second = new Error('second');
    const settled = runHandlers(
      [
        throws,
        ok,
        () => {
          throw second;
        },
      ],
      event,
      far(),
    ) as { ok: false; error: AggregateError };
    expect(settled.ok).toBe(false);
    expect(settled.error).toBeInstanceOf(AggregateError);
    expect(settled.error.message).toBe('2 handlers failed');
    expect(settled.error.errors).toEqual([boom, second]);
  });

  it('runs every handler even after one threw, and none that a handler registers meanwhile', () => {
    const ran: string[] = [];
    const handlers: AnyHandler[] = [];
    handlers.push(
      () => {
        ran.push('first');
        handlers.push(() => ran.push('late'));
        throw boom;
      },
      () => {
        ran.push('second');
      },
    );
    runHandlers(handlers, event, far());
    expect(ran).toEqual(['first', 'second']);
  });
});

describe('runHandlers, a handler returns a promise', () => {
  it('resolves to success when it resolves', async () => {
    const ran = runHandlers([resolves], event, far());
    expect(isPromise(ran)).toBe(true);
    expect(await ran).toEqual({ ok: true });
  });

  it('takes any thenable for a promise', async () => {
    let resolveIt!: () => void;
    const thenable = {
      then(onFulfilled: () => void) {
        resolveIt = onFulfilled;
      },
    };
    const ran = runHandlers([() => thenable], event, far());
    expect(isPromise(ran)).toBe(true);
    let settled: unknown;
    void (ran as Promise<unknown>).then((value) => (settled = value));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(settled).toBeUndefined();
    resolveIt();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(settled).toEqual({ ok: true });
  });

  it('resolves to the rejection of one handler, even a rejection with undefined', async () => {
    expect(await runHandlers([() => Promise.reject(boom)], event, far())).toEqual({
      ok: false,
      error: boom,
    });
    expect(await runHandlers([() => Promise.reject(undefined)], event, far())).toEqual({
      ok: false,
      error: undefined,
    });
  });

  it('waits for every handler, and gives the one failure as it is', async () => {
    let late = false;
    const settled = await runHandlers(
      [
        resolves,
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 10));
          late = true;
          throw boom;
        },
        ok,
      ],
      event,
      far(),
    );
    expect(late).toBe(true);
    expect(settled).toEqual({ ok: false, error: boom });
  });

  it('resolves to success when several resolve', async () => {
    expect(await runHandlers([resolves, ok, resolves], event, far())).toEqual({ ok: true });
  });

  it('counts a synchronous throw next to a promise, waiting for the promise too', async () => {
    let done = false;
    const slow: AnyHandler = async () => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      done = true;
    };
    expect(await runHandlers([slow, throws], event, far())).toEqual({ ok: false, error: boom });
    expect(done).toBe(true);
    const both = (await runHandlers(
      [throws, () => Promise.reject(new Error('later'))],
      event,
      far(),
    )) as { ok: false; error: AggregateError };
    expect(both.error).toBeInstanceOf(AggregateError);
    expect(both.error.errors.map((e: Error) => e.message)).toEqual(['boom', 'later']);
  });

  it('takes the deadline out of the queue once the handlers ended, whether or not they failed', async () => {
    const queue = far();
    await runHandlers([resolves], event, queue);
    expect(queue.size).toBe(0);
    await runHandlers([() => Promise.reject(boom)], event, queue);
    expect(queue.size).toBe(0);
    await runHandlers([resolves, resolves], event, queue);
    expect(queue.size).toBe(0);
  });
});

describe('runHandlers, the context', () => {
  it('gives every handler one context: the key, the attempt (1 unless given), the transaction', () => {
    const seen: HandlerContext[] = [];
    const record: AnyHandler = (_event, context) => {
      seen.push(context);
    };
    runHandlers([record, record], event, far());
    expect(seen[0]).toBe(seen[1]);
    expect(seen[0]!.idempotencyKey).toBe('key-run-handlers');
    expect(seen[0]!.attempt).toBe(1);
    expect(seen[0]!.transaction).toBeUndefined();
    expect(seen[0]!.signal.aborted).toBe(false);

    const transaction = { query: () => undefined } as unknown as HandlerContext['transaction'];
    runHandlers([record], event, far(), 3, 'school-a', transaction);
    expect(seen[2]!.attempt).toBe(3);
    expect(seen[2]!.tenant).toBe('school-a');
    expect(seen[0]!.tenant).toBeUndefined();
    expect(seen[2]!.transaction).toBe(transaction);
  });
});

describe('runHandlers, handlerTimeoutMs', () => {
  it('settles with `stillRunning` once the deadline passes, aborts the signal, and tells how they end', async () => {
    const queue = new DeadlineQueue(30);
    let signal!: AbortSignal;
    let finish!: () => void;
    const slow: AnyHandler = (_event, context) => {
      signal = context.signal;
      return new Promise<void>((resolve) => (finish = resolve));
    };
    const started = performance.now();
    const first = (await runHandlers([slow], event, queue)) as HandlersTimedOut;
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    expect(isTimedOut(first)).toBe(true);
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe('handler timeout');
    expect(queue.size).toBe(0);

    let later: HandlersResult | undefined;
    void first.stillRunning.then((settled) => (later = settled));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(later).toBeUndefined();
    finish();
    expect(await first.stillRunning).toEqual({ ok: true });
  });

  it('tells a failure that comes after the deadline through `stillRunning`', async () => {
    const queue = new DeadlineQueue(20);
    const fails: ((error: unknown) => void)[] = [];
    const slow: AnyHandler = () => new Promise<void>((_resolve, reject) => fails.push(reject));
    const finished: AnyHandler = () => Promise.resolve();
    const first = (await runHandlers([slow, finished], event, queue)) as HandlersTimedOut;
    expect(isTimedOut(first)).toBe(true);
    fails.pop()!(boom);
    expect(await first.stillRunning).toEqual({ ok: false, error: boom });

    const single = (await runHandlers([slow], event, queue)) as HandlersTimedOut;
    fails.pop()!(boom);
    expect(await single.stillRunning).toEqual({ ok: false, error: boom });
  });

  it('gives a handler that first reads its signal after the deadline an aborted one, the same for every handler', async () => {
    const queue = new DeadlineQueue(20);
    const contexts: HandlerContext[] = [];
    let finish!: () => void;
    const late: AnyHandler = (_event, context) => {
      contexts.push(context);
      return new Promise<void>((resolve) => (finish = resolve));
    };
    const first = (await runHandlers([late, late], event, queue)) as HandlersTimedOut;
    expect(isTimedOut(first)).toBe(true);
    const [one, two] = contexts;
    expect(one!.signal.aborted).toBe(true);
    expect((one!.signal.reason as Error).message).toBe('handler timeout');
    expect(two!.signal).toBe(one!.signal);
    finish();
  });

  it('does not abort the signal of handlers that ended within the deadline', async () => {
    const queue = new DeadlineQueue(20);
    let signal!: AbortSignal;
    await runHandlers(
      [
        (_event, context) => {
          signal = context.signal;
          return Promise.resolve();
        },
      ],
      event,
      queue,
    );
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(signal.aborted).toBe(false);
  });
});
