/**
 * An idempotency store on Redis (an ioredis `Redis` or `Cluster`) that every receiver process
 * shares.
 * @module
 */

import { createHash } from 'node:crypto';
// Types only: importing this entry never loads ioredis; the caller passes their own client.
import type { Cluster, Redis } from 'ioredis';
import { randomToken } from '../crypto.js';
import { ConfigError, StoreUnavailableError } from '../errors.js';
import { storeUnavailable } from './unavailable.js';
import type { AsyncIdempotencyStore, ClaimResult } from './types.js';
import { BoundedCalls, type BoundedCall as Call } from '../bounded-calls.js';
import { readinessOf } from './client-readiness.js';
import { storageKey } from './storage-key.js';
import { REDIS_STORE_DEFAULTS } from '../defaults.js';

/** Options of {@link redisStore}. */
export interface RedisStoreOptions {
  /** A connected (or connecting) ioredis `Redis` or `Cluster`; the store never closes it. */
  client: Redis | Cluster;
  /** Prepended to every key. Default `'schoolhooks:'`. Must not contain `{` or `}`. */
  prefix?: string;
  /**
   * Separates receivers that must each see every event (two endpoints of one seller, two
   * systems) while sharing one Redis. Must not contain `{` or `}`.
   */
  namespace?: string;
  /**
   * The longest a store call may take before it fails with `StoreUnavailableError` (the
   * receiver answers 503 `store_unavailable`). Default 1000.
   */
  commandTimeoutMs?: number;
}

/**
 * A Lua script run with EVALSHA, falling back to EVAL when Redis does not know it yet. Sent
 * by hand rather than with `defineCommand`, which would add methods to the caller's client.
 */
interface Script {
  readonly lua: string;
  readonly sha: string;
}

function script(lua: string): Script {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

// The value at a key: `L:<token>` while a delivery holds the lease, `D:<fingerprint>` once done.
const LEASE = 'L:';
const DONE = 'D:';

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
const CLAIM = script(`
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
const COMPLETE = script(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
`);

/** KEYS[1] the key; ARGV[1] the caller's lease value. */
const RELEASE = script(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`);

const ESCAPES: Readonly<Record<string, string>> = { '%': '%25', '{': '%7B', '}': '%7D' };

/**
 * `{idempotencyKey}` with `%`, `{` and `}` percent-escaped, so the hash tag is exactly the
 * idempotency key (every key of one delivery lands in one cluster slot) and distinct keys stay
 * distinct. The key is first its {@link storageKey}: ioredis sends UTF-8, which has no form for
 * a lone surrogate.
 */
function hashTag(idempotencyKey: string): string {
  return `{${storageKey(idempotencyKey).replace(/[%{}]/g, (c) => ESCAPES[c] ?? c)}}`;
}

/**
 * An idempotency store that many receiver processes on many machines share through Redis.
 *
 * - `claim` is one atomic `SET key "L:<token>" NX PX leaseMs` (in a Lua script that also reads
 *   who holds the key, in the same round trip); `complete` and `release` are Lua scripts that act
 *   only while the caller's token still owns the key, so a delivery whose lease ran out can
 *   neither mark done nor free the key another delivery has taken since.
 * - Keys are `${prefix}${namespace}:{${idempotencyKey}}` (`${prefix}{${idempotencyKey}}` without a
 *   namespace), with `%`, `{` and `}` of the idempotency key escaped as `%25`, `%7B` and `%7D`:
 *   the braces are a cluster hash tag. A key with a lone surrogate or U+0000, or over 2 kB, is
 *   its `storageKey` there (src/stores/storage-key.ts), so no two keys are ever one.
 * - Every call fails with `StoreUnavailableError` within about `commandTimeoutMs`, and nothing
 *   waits in ioredis's offline queue: while the client is reconnecting (or closed) calls fail at
 *   once; while it is still connecting they wait for it, never past the timeout. A claim that
 *   reaches Redis after its caller was told it failed (ioredis re-sends commands that were in
 *   flight when a connection dropped) writes nothing: the script checks the deadline on Redis's
 *   clock, whose offset from this process's clock the store keeps measuring.
 * - A completion that fails because Redis is unreachable is kept and sent again, with the same
 *   token, once the client is ready (and before a resend of that delivery here is claimed),
 *   until the lease would have ended: a Redis restart mid-delivery neither runs a processed
 *   event again nor holds its resends at 409 `in_flight` for `leaseMs` (with a persistent Redis;
 *   one that restarts empty has forgotten every key anyway). So is a release that fails, and
 *   the release of a claim sent to Redis whose answer never came in time (Redis may have taken
 *   it, and persisted it, just before it died).
 * - ioredis defaults are fine (`enableOfflineQueue` may stay on or be turned off); the store
 *   holds no connection state of its own, so it works again as soon as the client reconnects.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { createReceiver } from 'schoolhooks';
 * import { redisStore } from 'schoolhooks/redis';
 *
 * const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * const receiver = createReceiver({
 *   secret: process.env.SCHOOL_WEBHOOK_SECRET ?? '',
 *   store: redisStore({ client, namespace: 'crm' }),
 * });
 * ```
 *
 * @example
 * ```ts
 * // Redis Cluster: one delivery's keys share a slot, so the scripts run on a single node.
 * const client = new Cluster([{ host: '10.0.0.1', port: 6379 }]);
 * const store = redisStore({ client, commandTimeoutMs: 500 });
 * ```
 */
export function redisStore({
  client,
  prefix = REDIS_STORE_DEFAULTS.prefix,
  namespace,
  commandTimeoutMs = REDIS_STORE_DEFAULTS.commandTimeoutMs,
}: RedisStoreOptions): AsyncIdempotencyStore {
  if (/[{}]/.test(prefix) || (namespace !== undefined && /[{}]/.test(namespace))) {
    // A brace there would become the hash tag and put every key of the store in one slot.
    throw new ConfigError('redisStore: prefix and namespace must not contain "{" or "}"');
  }
  if (!(commandTimeoutMs > 0) || !Number.isFinite(commandTimeoutMs)) {
    throw new ConfigError('redisStore: commandTimeoutMs must be a positive number');
  }
  const keyPrefix = namespace ? `${prefix}${namespace}:` : prefix;
  // Redis's clock minus ours, learnt from every claim's reply (which carries Redis's TIME).
  let clockOffsetMs = 0;
  // Every call bounded by commandTimeoutMs, with one timer for all of them.
  const calls = new BoundedCalls(commandTimeoutMs, {
    timedOut: (name) =>
      new StoreUnavailableError(`Redis did not answer ${name} within ${commandTimeoutMs} ms`),
    failed: unavailable,
  });
  // A client still connecting is waited for (within the call's time); any other fails at once.
  const connected = readinessOf(client, notReady);
  // Completions and releases that failed while Redis was unreachable, by Redis key: sent again
  // with the same token once the client is ready, until the lease they end would have ended.
  const unfinished = new Map<string, Unfinished>();
  // The receiver gives one leaseMs to every claim: the longest an unfinished call matters.
  let longestLeaseMs = 0;

  const store: AsyncIdempotencyStore = {
    async claim(key: string, leaseMs: number): Promise<ClaimResult> {
      const token = randomToken();
      const redisKey = keyPrefix + hashTag(key);
      const lease = LEASE + token;
      const px = milliseconds(leaseMs, 'leaseMs');
      if (px > longestLeaseMs) longestLeaseMs = px;
      // A resend of a delivery whose completion (or release) is still unfinished here: finish
      // it first, so the resend is a duplicate (or claimed) rather than in_flight.
      if (unfinished.size !== 0) {
        const pending = unfinished.get(redisKey);
        if (pending !== undefined) await retryUnfinished(redisKey, pending);
      }
      // Whether a claim sent to Redis is still unanswered (Redis may have taken it).
      let unanswered = false;
      const claimed: Promise<ClaimResult> = calls.run(
        'claim',
        async (call) => {
          // Redis refuses the claim once 90% of the budget is gone on its clock: a claim it
          // takes is answered before the caller's timer fires, and one that reaches it after the
          // caller gave up writes nothing. The last 10% absorbs the error of the clock estimate.
          const cutoff = call.deadline - commandTimeoutMs / 10;
          for (let retried = false; ; retried = true) {
            if (client.status !== 'ready') await connected(call);
            unanswered = true;
            const sentAt = Date.now();
            const args = [lease, px, cutoff + clockOffsetMs];
            const reply = await evalScript(CLAIM, redisKey, args, call);
            unanswered = false;
            const receivedAt = Date.now();
            const { outcome, redisNow, value } = parseClaimReply(reply);
            // Redis read its clock between sentAt and receivedAt, so a sample is off by at most
            // half the round trip: keep quick ones, and any `late` answer that came back in
            // time, which proves the estimate wrong (this process's clock was set, or drifted).
            const late = outcome === 'late' && !call.aborted;
            if (late || receivedAt - sentAt <= commandTimeoutMs / 20) {
              clockOffsetMs = redisNow - (sentAt + receivedAt) / 2;
            }
            if (outcome === 'claimed') return { state: 'claimed', token };
            if (outcome === 'held') return heldBy(value);
            // With the estimate corrected, one more try if the budget allows.
            if (late && !retried && Date.now() < cutoff) continue;
            throw new StoreUnavailableError(
              `Redis did not take the claim within ${commandTimeoutMs} ms`,
            );
          }
        },
        (late) => {
          // Redis answered after the caller had given up, so the release kept below is due:
          // sent now if Redis gave us the lease (it is nobody's), dropped if it gave none.
          const pending = unfinished.get(redisKey);
          if (pending?.script !== RELEASE || pending.args[0] !== lease) return;
          if (late.state === 'claimed') void retryUnfinished(redisKey, pending);
          else forget(redisKey, pending);
        },
      );
      return claimed.catch((error: unknown) => {
        // No answer in time, or none at all (Redis died): Redis may hold our lease, and keep it
        // for leaseMs (a persistent one, across its restart). Take it back once it is back;
        // but never in place of a completion kept for this key (its retry failed above): that
        // lease holds the key, so this claim took nothing, and losing the completion would run
        // the event again once its lease ends.
        if (unanswered && unfinished.get(redisKey)?.script !== COMPLETE) {
          keepUnfinished(redisKey, RELEASE, [lease]);
        }
        throw error;
      });
    },

    async complete(key: string, token: string, ttlMs: number, fingerprint: string): Promise<void> {
      const redisKey = keyPrefix + hashTag(key);
      const args = [LEASE + token, DONE + fingerprint, milliseconds(ttlMs, 'ttlMs')];
      try {
        await calls.run('complete', (call) => evalScript(COMPLETE, redisKey, args, call));
      } catch (error) {
        keepUnfinished(redisKey, COMPLETE, args);
        throw error;
      }
    },

    async release(key: string, token: string): Promise<void> {
      const redisKey = keyPrefix + hashTag(key);
      const args = [LEASE + token];
      try {
        await calls.run('release', (call) => evalScript(RELEASE, redisKey, args, call));
      } catch (error) {
        keepUnfinished(redisKey, RELEASE, args);
        throw error;
      }
    },
  };
  return store;

  /**
   * Keep a completion or release Redis did not confirm, to send again (the scripts act only
   * while the token still owns the key, so sending one twice, or after the lease, changes
   * nothing wrong).
   */
  function keepUnfinished(
    redisKey: string,
    script: Script,
    args: readonly (string | number)[],
  ): void {
    if (longestLeaseMs === 0) return;
    const until = Date.now() + longestLeaseMs;
    unfinished.set(redisKey, { script, args, until, retry: undefined });
    if (unfinished.size === 1) client.on('ready', retryAllUnfinished);
    // Still connected (Redis was slow, not gone): no 'ready' will come, so try again soon.
    if (client.status === 'ready') setTimeout(retryAllUnfinished, commandTimeoutMs).unref?.();
  }

  function retryAllUnfinished(): void {
    for (const [redisKey, pending] of unfinished) void retryUnfinished(redisKey, pending);
  }

  /** Send an unfinished call again; resolves once it is done or still failing. */
  function retryUnfinished(redisKey: string, pending: Unfinished): Promise<void> {
    if (Date.now() > pending.until) {
      forget(redisKey, pending);
      return Promise.resolve();
    }
    const name = pending.script === COMPLETE ? 'complete' : 'release';
    pending.retry ??= calls
      .run(name, (call) => evalScript(pending.script, redisKey, pending.args, call))
      .then(
        () => forget(redisKey, pending),
        () => {
          pending.retry = undefined;
        },
      );
    return pending.retry;
  }

  function forget(redisKey: string, pending: Unfinished): void {
    if (unfinished.get(redisKey) !== pending) return;
    unfinished.delete(redisKey);
    if (unfinished.size === 0) client.off('ready', retryAllUnfinished);
  }

  /**
   * EVALSHA, or EVAL when Redis answers NOSCRIPT (first use, a restarted or flushed server, a
   * new cluster node). Sends only while the client is ready and the deadline has not passed, so
   * nothing is ever parked in ioredis's offline queue to run after the caller gave up.
   */
  async function evalScript(
    { lua, sha }: Script,
    key: string,
    args: readonly (string | number)[],
    call: Call,
  ): Promise<unknown> {
    if (client.status !== 'ready') await connected(call);
    try {
      return await sendNow(() => client.evalsha(sha, 1, key, ...args), call);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return sendNow(() => client.eval(lua, 1, key, ...args), call);
    }
  }

  /** Sends `command` only if, at this very tick, the client is ready and the call is live. */
  function sendNow(command: () => Promise<unknown>, call: Call): Promise<unknown> {
    if (client.status !== 'ready') return Promise.reject(notReady());
    if (call.aborted) return Promise.reject(new Error('the call timed out'));
    return command();
  }

  function notReady(): Error {
    return new Error(`the Redis client is not ready (status: ${client.status})`);
  }
}

/** A completion or release to send again: which, its arguments, until when, the retry running. */
interface Unfinished {
  readonly script: Script;
  readonly args: readonly (string | number)[];
  readonly until: number;
  retry: Promise<void> | undefined;
}

function heldBy(value: string | undefined): ClaimResult {
  if (value?.startsWith(LEASE)) return { state: 'in_flight' };
  if (value?.startsWith(DONE)) return { state: 'done', fingerprint: value.slice(DONE.length) };
  // Something other than this store wrote to the key: refuse rather than guess.
  throw new StoreUnavailableError(
    'Redis claim failed: the key holds a value this store did not write',
  );
}

interface ClaimReply {
  outcome: 'claimed' | 'held' | 'late';
  /** Redis's clock when it ran the script, in ms since the epoch. */
  redisNow: number;
  value: string | undefined;
}

function parseClaimReply(reply: unknown): ClaimReply {
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

/** A positive whole number of milliseconds for PX (Redis refuses 0 and fractions). */
function milliseconds(ms: number, name: string): number {
  if (!(ms > 0) || !Number.isFinite(ms)) {
    throw new ConfigError(`redisStore: ${name} must be a positive number of milliseconds`);
  }
  return Math.ceil(ms);
}

/** A `StoreUnavailableError` for any failure of a call to Redis. */
function unavailable(operation: string, error: unknown): StoreUnavailableError {
  return storeUnavailable('Redis', operation, error);
}
