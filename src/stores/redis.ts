/**
 * An idempotency store on Redis (an ioredis `Redis` or `Cluster`) that every receiver process
 * shares.
 * @module
 */

// Types only: importing this entry never loads ioredis; the caller passes their own client.
import type { Cluster, Redis } from 'ioredis';
import { randomToken } from '../crypto.js';
import { ConfigError, StoreUnavailableError } from '../errors.js';
import { storeUnavailable } from './unavailable.js';
import type { AsyncIdempotencyStore, ClaimResult, EntityClaimResult } from './types.js';
import { BoundedCalls, type BoundedCall as Call } from '../bounded-calls.js';
import { ScriptSender } from './redis-script-sender.js';
import {
  CLAIM,
  COMPLETE,
  DONE,
  ENTITY_CLAIM,
  ENTITY_COMPLETE,
  ENTITY_RELEASE,
  heldBy,
  LEASE,
  parseClaimReply,
  parseEntityClaimReply,
  RELEASE,
} from './redis-scripts.js';
import { UnfinishedCalls } from './redis-unfinished.js';
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
 * - The ordering guard (`latestOnly`) keeps an entity's newest completed version at
 *   `…{entity}:entity` for dedupTtlMs and its lease at `…{entity}:entity-lease` (one slot); each
 *   of its calls is one Lua script. Its completions and releases are not kept to be sent again:
 *   one lost while Redis is unreachable leaves the entity held until its lease ends.
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
export function redisStore(options: RedisStoreOptions): AsyncIdempotencyStore {
  const store = new RedisStore(options);
  // A plain object of the store's methods, so a copy or a wrapper ({ ...store }) keeps them.
  return {
    claim: (key, leaseMs) => store.claim(key, leaseMs),
    complete: (key, token, ttlMs, fingerprint) => store.complete(key, token, ttlMs, fingerprint),
    release: (key, token) => store.release(key, token),
    claimEntity: (entity, versionMs, leaseMs) => store.claimEntity(entity, versionMs, leaseMs),
    completeEntity: (entity, token, versionMs, ttlMs) =>
      store.completeEntity(entity, token, versionMs, ttlMs),
    releaseEntity: (entity, token) => store.releaseEntity(entity, token),
  };
}

/** {@link redisStore}'s state: its key layout, bounded calls, clock offset and unfinished calls. */
class RedisStore implements AsyncIdempotencyStore {
  readonly #keyPrefix: string;
  readonly #commandTimeoutMs: number;
  /** Every call bounded by commandTimeoutMs, with one timer for all of them. */
  readonly #calls: BoundedCalls;
  readonly #sender: ScriptSender;
  /** Completions and releases that failed while Redis was unreachable, sent again later. */
  readonly #unfinished: UnfinishedCalls;
  /** Redis's clock minus ours, learnt from every claim's reply (which carries Redis's TIME). */
  #clockOffsetMs = 0;

  constructor({
    client,
    prefix = REDIS_STORE_DEFAULTS.prefix,
    namespace,
    commandTimeoutMs = REDIS_STORE_DEFAULTS.commandTimeoutMs,
  }: RedisStoreOptions) {
    if (/[{}]/.test(prefix) || (namespace !== undefined && /[{}]/.test(namespace))) {
      // A brace there would become the hash tag and put every key of the store in one slot.
      throw new ConfigError('redisStore: prefix and namespace must not contain "{" or "}"');
    }
    if (!(commandTimeoutMs > 0) || !Number.isFinite(commandTimeoutMs)) {
      throw new ConfigError('redisStore: commandTimeoutMs must be a positive number');
    }
    this.#keyPrefix = namespace ? `${prefix}${namespace}:` : prefix;
    this.#commandTimeoutMs = commandTimeoutMs;
    this.#calls = new BoundedCalls(commandTimeoutMs, {
      timedOut: (name) =>
        new StoreUnavailableError(`Redis did not answer ${name} within ${commandTimeoutMs} ms`),
      failed: unavailable,
    });
    this.#sender = new ScriptSender(client);
    this.#unfinished = new UnfinishedCalls(client, this.#calls, this.#sender, commandTimeoutMs);
  }

  async claim(key: string, leaseMs: number): Promise<ClaimResult> {
    const token = randomToken();
    const redisKey = this.#keyPrefix + hashTag(key);
    const lease = LEASE + token;
    const px = milliseconds(leaseMs, 'leaseMs');
    this.#unfinished.leased(px);
    // A resend of a delivery whose completion (or release) is still unfinished here: finish
    // it first, so the resend is a duplicate (or claimed) rather than in_flight.
    const pending = this.#unfinished.get(redisKey);
    if (pending !== undefined) await this.#unfinished.retry(redisKey, pending);
    // Whether a claim sent to Redis is still unanswered (Redis may have taken it).
    const sent = { unanswered: false };
    const claimed: Promise<ClaimResult> = this.#calls.run(
      'claim',
      (call) => this.#claimWithin(call, redisKey, [lease, px], token, sent),
      (late) => this.#answeredLate(redisKey, lease, late),
    );
    return claimed.catch((error: unknown) => {
      // No answer in time, or none at all (Redis died): Redis may hold our lease, and keep it
      // for leaseMs (a persistent one, across its restart). Take it back once it is back;
      // but never in place of a completion kept for this key (its retry failed above): that
      // lease holds the key, so this claim took nothing, and losing the completion would run
      // the event again once its lease ends.
      if (sent.unanswered && this.#unfinished.get(redisKey)?.script !== COMPLETE) {
        this.#unfinished.keep(redisKey, RELEASE, [lease]);
      }
      throw error;
    });
  }

  async complete(key: string, token: string, ttlMs: number, fingerprint: string): Promise<void> {
    const redisKey = this.#keyPrefix + hashTag(key);
    const args = [LEASE + token, DONE + fingerprint, milliseconds(ttlMs, 'ttlMs')];
    await this.#sendKept('complete', redisKey, args);
  }

  async release(key: string, token: string): Promise<void> {
    const redisKey = this.#keyPrefix + hashTag(key);
    await this.#sendKept('release', redisKey, [LEASE + token]);
  }

  /**
   * The ordering guard's claim of an entity: one script over its version and its lease (one
   * slot). Unlike a key's claim, one that reaches Redis after the caller gave up may still take
   * the lease: the entity then waits for its end (a retry is answered 409 `in_flight` meanwhile).
   */
  async claimEntity(
    entity: string,
    versionMs: number,
    leaseMs: number,
  ): Promise<EntityClaimResult> {
    const token = randomToken();
    const args = [LEASE + token, milliseconds(leaseMs, 'leaseMs'), version(versionMs)];
    const reply = await this.#calls.run('claimEntity', (call) =>
      this.#sender.evalScript(ENTITY_CLAIM, this.#entityKeys(entity), args, call),
    );
    return parseEntityClaimReply(reply, token);
  }

  /** Records the entity's version and frees it, while `token` holds it. */
  async completeEntity(
    entity: string,
    token: string,
    versionMs: number,
    ttlMs: number,
  ): Promise<void> {
    const args = [LEASE + token, version(versionMs), milliseconds(ttlMs, 'ttlMs')];
    await this.#calls.run('completeEntity', (call) =>
      this.#sender.evalScript(ENTITY_COMPLETE, this.#entityKeys(entity), args, call),
    );
  }

  /** Frees the entity, while `token` holds it. */
  async releaseEntity(entity: string, token: string): Promise<void> {
    const [, lease] = this.#entityKeys(entity);
    await this.#calls.run('releaseEntity', (call) =>
      this.#sender.evalScript(ENTITY_RELEASE, lease, [LEASE + token], call),
    );
  }

  /**
   * An entity's version and lease: its hash tag and a suffix (no key of a delivery has one, so
   * an entity never meets a delivery's key, whatever the two strings).
   */
  #entityKeys(entity: string): [version: string, lease: string] {
    const base = this.#keyPrefix + hashTag(entity);
    return [`${base}:entity`, `${base}:entity-lease`];
  }

  /** Sends a completion or release; one Redis did not confirm is kept to be sent again. */
  async #sendKept(
    name: 'complete' | 'release',
    redisKey: string,
    args: readonly (string | number)[],
  ): Promise<void> {
    const script = name === 'complete' ? COMPLETE : RELEASE;
    try {
      await this.#calls.run(name, (call) => this.#sender.evalScript(script, redisKey, args, call));
    } catch (error) {
      this.#unfinished.keep(redisKey, script, args);
      throw error;
    }
  }

  /**
   * The claim, within `call`: Redis refuses it once 90% of the budget is gone on its clock, so
   * a claim it takes is answered before the caller's timer fires, and one that reaches it after
   * the caller gave up writes nothing. The last 10% absorbs the error of the clock estimate.
   */
  async #claimWithin(
    call: Call,
    redisKey: string,
    [lease, px]: [string, number],
    token: string,
    sent: { unanswered: boolean },
  ): Promise<ClaimResult> {
    const cutoff = call.deadline - this.#commandTimeoutMs / 10;
    for (let retried = false; ; retried = true) {
      const connecting = this.#sender.whenReady(call);
      if (connecting !== undefined) await connecting;
      sent.unanswered = true;
      const sentAt = Date.now();
      const args = [lease, px, cutoff + this.#clockOffsetMs];
      const reply = await this.#sender.evalScript(CLAIM, redisKey, args, call);
      sent.unanswered = false;
      const receivedAt = Date.now();
      const { outcome, redisNow, value } = parseClaimReply(reply);
      const late = outcome === 'late' && !call.aborted;
      this.#learnClock(sentAt, receivedAt, redisNow, late);
      if (outcome === 'claimed') return { state: 'claimed', token };
      if (outcome === 'held') return heldBy(value);
      // With the estimate corrected, one more try if the budget allows.
      if (late && !retried && Date.now() < cutoff) continue;
      throw new StoreUnavailableError(
        `Redis did not take the claim within ${this.#commandTimeoutMs} ms`,
      );
    }
  }

  /**
   * Redis read its clock between sentAt and receivedAt, so a sample is off by at most half the
   * round trip: keep quick ones, and any `late` answer that came back in time, which proves the
   * estimate wrong (this process's clock was set, or drifted).
   */
  #learnClock(sentAt: number, receivedAt: number, redisNow: number, late: boolean): void {
    if (late || receivedAt - sentAt <= this.#commandTimeoutMs / 20) {
      this.#clockOffsetMs = redisNow - (sentAt + receivedAt) / 2;
    }
  }

  /**
   * Redis answered after the caller had given up, so the release kept for this claim is due:
   * sent now if Redis gave us the lease (it is nobody's), dropped if it gave none.
   */
  #answeredLate(redisKey: string, lease: string, late: ClaimResult): void {
    const pending = this.#unfinished.get(redisKey);
    if (pending?.script !== RELEASE || pending.args[0] !== lease) return;
    if (late.state === 'claimed') void this.#unfinished.retry(redisKey, pending);
    else this.#unfinished.forget(redisKey, pending);
  }
}

/** A positive whole number of milliseconds for PX (Redis refuses 0 and fractions). */
function milliseconds(ms: number, name: string): number {
  if (!(ms > 0) || !Number.isFinite(ms)) {
    throw new ConfigError(`redisStore: ${name} must be a positive number of milliseconds`);
  }
  return Math.ceil(ms);
}

/** An entity's version as the scripts compare it: a finite number. */
function version(versionMs: number): number {
  if (!Number.isFinite(versionMs)) {
    throw new ConfigError('redisStore: versionMs must be a finite number of milliseconds');
  }
  return versionMs;
}

/** A `StoreUnavailableError` for any failure of a call to Redis. */
function unavailable(operation: string, error: unknown): StoreUnavailableError {
  return storeUnavailable('Redis', operation, error);
}
