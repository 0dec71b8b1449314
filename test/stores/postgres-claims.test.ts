/**
 * HeldClaims (src/stores/postgres-claims.ts), the claims a postgresStore holds. On real Postgres,
 * test/stores/postgres-rules.test.ts checks that a claim of an abandoned key waits for its
 * session to end; here a client whose end the test controls shows that the wait is forgotten
 * once the session ended, so a later claim of that key waits for nothing.
 */

import { EventEmitter } from 'node:events';
import type { PoolClient } from 'pg';
import { describe, expect, it } from 'vitest';
import { HeldClaims } from '../../src/stores/postgres-claims.js';

/** A pooled client that records its release and ends when the test says so. */
class FakeClient extends EventEmitter {
  released: unknown[] = [];
  release(error?: unknown): void {
    this.released.push(error);
  }
}

describe('HeldClaims.abandon', () => {
  it('closes the client, and keeps the key waited for only until its session ended', async () => {
    const claims = new HeldClaims(60_000);
    const client = new FakeClient();
    const { token } = claims.hold('k', client as unknown as PoolClient, 60_000);
    claims.abandon(token);
    expect(client.released).toHaveLength(1);
    expect(client.released).toEqual([true]);
    const closing = claims.closingOf('k');
    expect(closing).toBeDefined();
    expect(claims.find(token)).toBeUndefined();

    client.emit('end');
    await closing;
    await Promise.resolve();
    expect(claims.closingOf('k')).toBeUndefined();
  });

  it('keeps waiting for the newer close of a key abandoned twice', async () => {
    const claims = new HeldClaims(60_000);
    const [first, second] = [new FakeClient(), new FakeClient()];
    claims.abandon(claims.hold('k', first as unknown as PoolClient, 60_000).token);
    const older = claims.closingOf('k');
    claims.abandon(claims.hold('k', second as unknown as PoolClient, 60_000).token);
    const newer = claims.closingOf('k');
    expect(newer).not.toBe(older);
    first.emit('end');
    await older;
    await Promise.resolve();
    expect(claims.closingOf('k')).toBe(newer);
    second.emit('end');
    await newer;
    await Promise.resolve();
    expect(claims.closingOf('k')).toBeUndefined();
  });
});
