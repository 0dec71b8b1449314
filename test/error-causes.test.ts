/**
 * withCauses: a failure's message followed by what its cause chain says, each level once,
 * bounded, with no secret and no URL password in it.
 */

import { describe, expect, it } from 'vitest';
import { withCauses } from '../src/errors.js';

describe('withCauses', () => {
  it('follows the cause chain, each level on the line after a colon', () => {
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:6379');
    const wrapped = new Error('Redis claim failed', { cause: refused });
    expect(withCauses('the idempotency store failed to claim the key', wrapped)).toBe(
      'the idempotency store failed to claim the key: Redis claim failed: connect ECONNREFUSED 127.0.0.1:6379',
    );
  });

  it('says a level only once when a wrapper already repeats its cause', () => {
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:1');
    const wrapped = new Error('Redis claim failed: connect ECONNREFUSED 127.0.0.1:1', {
      cause: refused,
    });
    expect(withCauses('failed', wrapped)).toBe(
      'failed: Redis claim failed: connect ECONNREFUSED 127.0.0.1:1',
    );
  });

  it('hides the secrets it is given and any URL password', () => {
    const cause = new Error('cannot reach redis://app:hunter2@cache:6379 with key whsec-live-123');
    const line = withCauses('failed', cause, ['whsec-live-123']);
    expect(line).toBe('failed: cannot reach redis://app:[hidden]@cache:6379 with key [hidden]');
  });

  it('stops at four levels and stays bounded', () => {
    let cause: unknown = new Error('level 5');
    for (let level = 4; level >= 1; level--) cause = new Error(`level ${level}`, { cause });
    expect(withCauses('top', cause)).toBe('top: level 1: level 2: level 3: level 4');
    expect(withCauses('top', new Error('x'.repeat(5000))).length).toBeLessThanOrEqual(601);
  });

  it('is the message alone without a cause', () => {
    expect(withCauses('the inbox failed to store the delivery', undefined)).toBe(
      'the inbox failed to store the delivery',
    );
  });
});
