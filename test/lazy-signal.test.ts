/** LazySignal: the signal is made on first read, and is aborted whenever it is read. */

import { describe, expect, it } from 'vitest';
import { LazySignal } from '../src/utils/lazy-signal.js';

describe('LazySignal', () => {
  it('aborts a signal already read, once, with the first reason', () => {
    const target = new LazySignal();
    const { signal } = target;
    const reasons: unknown[] = [];
    signal.addEventListener('abort', () => reasons.push(signal.reason));
    expect(LazySignal.aborted(target)).toBe(false);
    LazySignal.abort(target, 'first');
    LazySignal.abort(target, 'second');
    expect(reasons).toEqual(['first']);
    expect(LazySignal.aborted(target)).toBe(true);
  });

  it('gives an aborted signal when first read after the abort', () => {
    const target = new LazySignal();
    const reason = new Error('handler timeout');
    LazySignal.abort(target, reason);
    expect(target.signal.aborted).toBe(true);
    expect(target.signal.reason).toBe(reason);
    // The same signal on every read.
    expect(target.signal).toBe(target.signal);
  });

  it('without a reason, aborts with an AbortError like AbortController does', () => {
    const target = new LazySignal();
    LazySignal.abort(target);
    expect((target.signal.reason as Error).name).toBe('AbortError');
  });
});
