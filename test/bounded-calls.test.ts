import { describe, expect, it } from 'vitest';
import { BoundedCalls } from '../src/utils/bounded-calls.js';

const errors = {
  timedOut: (name: string) => new Error(`${name} timed out`),
  failed: (name: string, error: unknown) => new Error(`${name} failed: ${String(error)}`),
};

function later<T>(ms: number, value: T): Promise<T> {
  return new Promise((resolve) => setTimeout(() => resolve(value), ms));
}

describe('BoundedCalls', () => {
  it('resolves with the result of a call that ends within its budget', async () => {
    const calls = new BoundedCalls(1000, errors);
    await expect(calls.run('quick', () => later(5, 'ok'))).resolves.toBe('ok');
    expect(calls.size).toBe(0);
  });

  it('rejects with timedOut at the deadline, aborts the call, and hands a late result to onLate', async () => {
    const calls = new BoundedCalls(50, errors);
    const lateResults: string[] = [];
    let seen: { aborted: boolean } | undefined;
    const startedAt = performance.now();
    const running = calls.run(
      'slow',
      (call) => {
        seen = call;
        return later(200, 'too late');
      },
      (result) => lateResults.push(result),
    );
    await expect(running).rejects.toBeInstanceOf(Error);
    await expect(running).rejects.toMatchObject({ message: 'slow timed out' });
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(45);
    expect(seen?.aborted).toBe(true);
    await later(250, undefined);
    expect(lateResults).toEqual(['too late']);
  });

  it('drops a late result quietly when no onLate was given', async () => {
    const calls = new BoundedCalls(20, errors);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const running = calls.run('slow', () => later(60, 'too late'));
      await expect(running).rejects.toBeInstanceOf(Error);
      await expect(running).rejects.toMatchObject({ message: 'slow timed out' });
      // The result arrives after the deadline; give a rejection time to be reported.
      await later(120, undefined);
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('maps a failure within the budget through failed', async () => {
    const calls = new BoundedCalls(1000, errors);
    const running = calls.run('broken', () => Promise.reject('boom'));
    await expect(running).rejects.toBeInstanceOf(Error);
    await expect(running).rejects.toMatchObject({ message: 'broken failed: boom' });
  });

  it('gives the call a signal that aborts at the deadline', async () => {
    const calls = new BoundedCalls(30, errors);
    const aborted = await new Promise<boolean>((resolve) => {
      calls
        .run('waiting', (call) => {
          call.signal.addEventListener('abort', () => resolve(true));
          return later(100, undefined);
        })
        .catch(() => {});
    });
    expect(aborted).toBe(true);
  });

  it("gives each call its deadline: the budget from now on this process's clock", async () => {
    const calls = new BoundedCalls(1500, errors);
    const before = Date.now();
    const deadline = await calls.run('read', (call) => Promise.resolve(call.deadline));
    const after = Date.now();
    expect(deadline).toBeGreaterThanOrEqual(before + 1500);
    expect(deadline).toBeLessThanOrEqual(after + 1500);
  });
});
