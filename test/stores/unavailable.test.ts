/**
 * storeUnavailable (src/stores/unavailable.ts): the one way a store's failure becomes a
 * `StoreUnavailableError`. It names the server and the operation, keeps the client's error name
 * and code, and never carries a URL's credentials or the client's own error (which may hold a
 * command's arguments, lease tokens among them).
 */

import { describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../src/errors.js';
import { storeUnavailable } from '../../src/stores/unavailable.js';

/** The cause an error was made with, read as what it is. */
function causeOf(error: Error): Error & { code?: string } {
  const { cause } = error;
  if (!(cause instanceof Error)) throw new Error('expected an Error cause');
  return cause;
}

describe('storeUnavailable', () => {
  it('names the server and the operation, and keeps the name and code of what failed', () => {
    const failure = Object.assign(new TypeError('connect ECONNREFUSED 127.0.0.1:6379'), {
      code: 'ECONNREFUSED',
      command: { name: 'eval', args: ['lease-token-secret'] },
    });
    const error = storeUnavailable('Redis', 'claim', failure);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error.message).toBe('Redis claim failed: connect ECONNREFUSED 127.0.0.1:6379');
    const cause = causeOf(error);
    expect(cause).not.toBe(failure);
    expect(cause.name).toBe('TypeError');
    expect(cause.code).toBe('ECONNREFUSED');
    expect(cause.message).toBe('connect ECONNREFUSED 127.0.0.1:6379');
    expect(JSON.stringify(cause)).not.toContain('lease-token-secret');
    expect(Object.keys(cause)).not.toContain('command');
  });

  it('blanks the user and password of every URL in the message and its cause', () => {
    const error = storeUnavailable(
      'Postgres',
      'commit',
      new Error(
        'no route to postgres://app:s3cret@db:5432/x, nor to redis://:pw@cache:6379 (//x@y)',
      ),
    );
    expect(error.message).toBe(
      'Postgres commit failed: no route to postgres://***@db:5432/x, nor to redis://***@cache:6379 (//***@y)',
    );
    expect(causeOf(error).message).not.toMatch(/s3cret|:pw@/);
    // A URL without credentials, and text with spaces before an @, are left as they are.
    expect(
      storeUnavailable('Redis', 'claim', new Error('redis://cache:6379 a // b@c')).message,
    ).toBe('Redis claim failed: redis://cache:6379 a // b@c');
  });

  it('keeps the error of a call that already said it (a timeout) as it is', () => {
    const timeout = new StoreUnavailableError('Postgres did not answer claim within 2000 ms');
    expect(storeUnavailable('Postgres', 'claim', timeout)).toBe(timeout);
  });

  it('says what a thrown non-Error was, with no name or code of its own', () => {
    const error = storeUnavailable('Redis', 'release', 'socket closed');
    expect(error.message).toBe('Redis release failed: socket closed');
    expect(causeOf(error).name).toBe('Error');
    expect('code' in causeOf(error)).toBe(false);
    expect(storeUnavailable('Redis', 'release', null).message).toBe('Redis release failed: null');
    // A code that is not a string is not copied.
    const numeric = storeUnavailable('Redis', 'claim', Object.assign(new Error('x'), { code: 7 }));
    expect('code' in causeOf(numeric)).toBe(false);
  });
});
