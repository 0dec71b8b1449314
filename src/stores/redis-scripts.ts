/**
 * What `redisStore` writes to Redis: the values at a key, the Lua scripts of claim, complete and
 * release (of a key, and of an entity), and how a claim's reply reads.
 * @module
 */

import { createHash } from 'node:crypto';
import { StoreUnavailableError } from '../errors.js';
import type { ClaimResult, EntityClaimResult } from './types.js';

/**
 * A Lua script run with EVALSHA, falling back to EVAL when Redis does not know it yet. Sent
 * by hand rather than with `defineCommand`, which would add methods to the caller's client.
 */
export interface Script {
  readonly lua: string;
  readonly sha: string;
}

function script(lua: string): Script {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

/** The value at a key while a delivery holds the lease: `L:<token>`. */
export const LEASE = 'L:';
/** The value at a key once done: `D:<fingerprint>`. */
export const DONE = 'D:';

/**
 * KEYS[1] the key; ARGV[1] the lease value; ARGV[2] leaseMs; ARGV[3] the latest moment, on
 * Redis's clock in ms, at which the caller still waits for the answer. Replies
 * `{ outcome, seconds, microseconds[, existing value] }` (TIME's two halves).
 *
 * One script rather than `SET NX PX` plus a GET: it is one round trip in every case, and the
 * deadline check makes a claim that reaches Redis after the caller gave up (ioredis re-sends
 * commands that were in flight when a connection dropped; a paused server reads its socket
 * late) write nothing. The write itself is still one atomic `SET NX PX`.
 */
export const CLAIM = script(`
local time = redis.call('TIME')
if time[1] * 1000 + math.floor(time[2] / 1000) > tonumber(ARGV[3]) then
  return { 'late', time[1], time[2] }
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return { 'claimed', time[1], time[2] }
end
return { 'held', time[1], time[2], redis.call('GET', KEYS[1]) }
`);

/** KEYS[1] the key; ARGV[1] the caller's lease value; ARGV[2] the done value; ARGV[3] ttlMs. */
export const COMPLETE = script(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
`);

/** KEYS[1] the key; ARGV[1] the caller's lease value. */
export const RELEASE = script(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`);

/**
 * An entity's claim (the ordering guard). KEYS[1] its newest completed version, KEYS[2] its lease
 * (the same hash tag: one slot); ARGV[1] the lease value; ARGV[2] leaseMs; ARGV[3] the version.
 * Replies `superseded` (a newer version was completed), `claimed` (one atomic `SET NX PX`), or
 * `in_flight`.
 */
export const ENTITY_CLAIM = script(`
local newest = redis.call('GET', KEYS[1])
if newest and tonumber(newest) > tonumber(ARGV[3]) then
  return 'superseded'
end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 'claimed'
end
return 'in_flight'
`);

/**
 * KEYS as {@link ENTITY_CLAIM}'s; ARGV[1] the caller's lease value; ARGV[2] the version; ARGV[3]
 * ttlMs. While the caller holds the lease: frees it and records the version for ttlMs, unless a
 * newer one is recorded.
 */
export const ENTITY_COMPLETE = script(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[2])
local newest = redis.call('GET', KEYS[1])
if not newest or tonumber(newest) <= tonumber(ARGV[2]) then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return 1
`);

/** KEYS[1] the entity's lease; ARGV[1] the caller's lease value. */
export const ENTITY_RELEASE = RELEASE;

/** The entity claim script's reply, or a `StoreUnavailableError` for one it never gives. */
export function parseEntityClaimReply(reply: unknown, token: string): EntityClaimResult {
  if (reply === 'claimed') return { state: 'claimed', token };
  if (reply === 'superseded' || reply === 'in_flight') return { state: reply };
  throw new StoreUnavailableError('Redis entity claim failed: unexpected reply from its script');
}

/** What a key held by another holds says: `in_flight`, or `done` with its fingerprint. */
export function heldBy(value: string | undefined): ClaimResult {
  if (value?.startsWith(LEASE)) return { state: 'in_flight' };
  if (value?.startsWith(DONE)) return { state: 'done', fingerprint: value.slice(DONE.length) };
  // Something other than this store wrote to the key: refuse rather than guess.
  throw new StoreUnavailableError(
    'Redis claim failed: the key holds a value this store did not write',
  );
}

/** The claim script's reply, read. */
export interface ClaimReply {
  outcome: 'claimed' | 'held' | 'late';
  /** Redis's clock when it ran the script, in ms since the epoch. */
  redisNow: number;
  value: string | undefined;
}

/** The claim script's reply, or a `StoreUnavailableError` for one it never gives. */
export function parseClaimReply(reply: unknown): ClaimReply {
  if (Array.isArray(reply)) {
    const [outcome, seconds, micros, value] = reply as unknown[];
    if (
      (outcome === 'claimed' || outcome === 'held' || outcome === 'late') &&
      typeof seconds === 'string' &&
      typeof micros === 'string' &&
      (value === undefined || value === null || typeof value === 'string')
    ) {
      const redisNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      return { outcome, redisNow, value: value ?? undefined };
    }
  }
  throw new StoreUnavailableError('Redis claim failed: unexpected reply from the claim script');
}
