/**
 * An idempotency store on Redis (an ioredis `Redis` or `Cluster`) that every receiver process
 * shares.
 * @module
 */

// Types only: importing this entry never loads ioredis; the caller passes their own client.
import type { Cluster, Redis } from 'ioredis';
import { randomToken } from '../utils/crypto.js';
import { ConfigError, StoreUnavailableError } from '../errors.js';
import { ConnectionErrors } from './connection-errors.js';
import { storeUnavailable } from './unavailable.js';
import type {
  Claim,
  ClaimRequest,
  Completion,
  HeldClaim,
  IdempotencyStore,
  KeyState,
  RecordClaim,
  Settlement,
} from './types.js';
import type { WatchBatch, WatchState } from '../watchdog/types.js';
import { BoundedCalls, type BoundedCall as Call } from '../utils/bounded-calls.js';
import { ScriptSender } from './redis-script-sender.js';
import {
  checkedValue,
  CLAIM,
  DONE,
  LEASE,
  parseClaimReply,
  SETTLE,
  WATCH,
  type ClaimReply,
} from './redis-scripts.js';
import { parseWatchReply, watchCalls } from './redis-watch.js';
import { checkWatchBatch } from './watch-batch.js';
import { UnfinishedCalls } from './redis-unfinished.js';
import { storageKey } from './storage-key.js';
import { REDIS_STORE_DEFAULTS } from '../defaults.js';

/** Options of {@link redisStore}. */
export interface RedisStoreOptions {
  /**
   * A connected (or connecting) ioredis `Redis` or `Cluster`; the store never closes it. The
   * store listens to its `'error'` event until `close()` and reports each (see
   * `IdempotencyStore.onError`).
   */
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
 * `{key}` with `%`, `{` and `}` percent-escaped, so the hash tag is exactly the key (a key and
 * what is stored beside it, as an entity's version and lease, land in one cluster slot) and
 * distinct keys stay distinct. The key is first its {@link storageKey}: ioredis sends UTF-8, which
 * has no form for a lone surrogate.
 */
function hashTag(idempotencyKey: string): string {
  return `{${storageKey(idempotencyKey).replace(/[%{}]/g, (c) => ESCAPES[c] ?? c)}}`;
}

/**
 * An idempotency store that many receiver processes on many machines share through Redis.
 *
 * - A claim is one Lua script that takes the key (`SET key "L:<token>" PX leaseMs`), the entity's
 *   records and its version, or nothing: it answers `done`, or `in_flight` naming what another
 *   claim holds, in the same round trip. Its settle is one more script, which acts only while the
 *   claim's token still owns what it took, so a delivery whose lease ran out can neither complete
 *   nor free what another delivery has taken since. `peek` is one `MGET`.
 * - `watch` (the watchdog's notes, docs/watchdog.md) is one script a call: a tenant's notes are
 *   `${prefix}{watch:<tenant>}:watch`, `:watch-failing`, `:watch-order` and `:watch-succeeded`, at
 *   most `maxFailing` failing deliveries (and as many recent successes), expiring keepMs after
 *   their last write, and the summary (`:watch`)
 *   keepSummaryMs after (src/stores/redis-watch.ts).
 * - Keys are `${prefix}${namespace}:{${key}}` (`${prefix}{${key}}` without a namespace), with `%`,
 *   `{` and `}` of the key escaped as `%25`, `%7B` and `%7D`: the braces are a cluster hash tag. A
 *   key with a lone surrogate or U+0000, or over 2 kB, is its `storageKey` there
 *   (src/stores/storage-key.ts), so no two keys are ever one. An entity's version and lease (the
 *   ordering guard) are `…{entity}:entity` and `…{entity}:entity-lease`, in one slot.
 * - On a Redis Cluster a script touches one hash slot only: a claim whose key, records and entity
 *   fall in several slots is one script per slot, sent at once, and what one of them took is given
 *   back if another finds its part held.
 * - **The version is taken at claim time**: a claim writes its version as the entity's newest at
 *   once (keeping the one before it in the entity's lease), so if its process dies mid-handler an
 *   older state is `superseded` once the lease ends; a release puts the version before back.
 * - Every call fails with `StoreUnavailableError` within about `commandTimeoutMs`, and nothing
 *   waits in ioredis's offline queue: while the client is reconnecting (or closed) calls fail at
 *   once; while it is still connecting they wait for it, never past the timeout. A claim that
 *   reaches Redis after its caller was told it failed (ioredis re-sends commands that were in
 *   flight when a connection dropped) writes nothing: the script checks the deadline on Redis's
 *   clock, whose offset from this process's clock the store keeps measuring.
 * - A settle that fails because Redis is unreachable is kept and sent again, with the same token,
 *   once the client is ready (and before a resend of that delivery here is claimed), until the
 *   lease would have ended: a Redis restart mid-delivery neither runs a processed event again nor
 *   holds its resends at 409 `in_flight` for `leaseMs` (with a persistent Redis; one that restarts
 *   empty has forgotten every key anyway). So is the release of a claim sent to Redis whose answer
 *   never came in time (Redis may have taken it, and persisted it, just before it died).
 * - ioredis defaults are fine (`enableOfflineQueue` may stay on or be turned off); the store
 *   holds no connection state of its own, so it works again as soon as the client reconnects.
 * - The client's `'error'` events (a dropped connection, each failed reconnection) are heard from
 *   the store's creation and reported: to the receiver's `onError` handlers (or its logger), as
 *   a `StoreUnavailableError`; with no receiver, to the console, one line per burst.
 *   `close()` removes that listener and leaves the client connected.
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
 * // Redis Cluster: each script runs on the node of its slot.
 * const client = new Cluster([{ host: '10.0.0.1', port: 6379 }]);
 * const store = redisStore({ client, commandTimeoutMs: 500 });
 * ```
 */
export function redisStore(options: RedisStoreOptions): IdempotencyStore {
  const store = new RedisStore(options);
  // A plain object of the store's methods, so a copy or a wrapper ({ ...store }) keeps them.
  return {
    claim: (request) => store.claim(request),
    settle: (claim, how) => store.settle(claim, how),
    peek: (keys) => store.peek(keys),
    watch: (batch) => store.watch(batch),
    onError: (listener) => store.errors.subscribe(listener),
    close: async () => store.errors.close(),
  };
}

/**
 * The keys of a claim one script acts on: all of them on one Redis, those of one hash slot on a
 * Cluster. In script order: the key (if it is here), the records, the entity's version and lease.
 */
interface Part {
  readonly keys: string[];
  hasKey: boolean;
  /** The indexes, in the request's `records`, of the records here. */
  readonly records: number[];
  hasVersion: boolean;
}

/** {@link redisStore}'s state: its key layout, bounded calls, clock offset and unfinished settles. */
class RedisStore {
  readonly #keyPrefix: string;
  readonly #commandTimeoutMs: number;
  /** Whether the client is a Cluster: a script then touches one hash slot only. */
  readonly #cluster: boolean;
  /** Every call bounded by commandTimeoutMs, with one timer for all of them. */
  readonly #calls: BoundedCalls;
  readonly #sender: ScriptSender;
  /** Settles that failed while Redis was unreachable, sent again later. */
  readonly #unfinished: UnfinishedCalls;
  /** Redis's clock minus ours, learnt from every claim's reply (which carries Redis's TIME). */
  #clockOffsetMs = 0;
  /** The client's `'error'` events, heard and told. */
  readonly errors: ConnectionErrors;

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
    this.#cluster = (client as { isCluster?: unknown }).isCluster === true;
    this.#calls = new BoundedCalls(commandTimeoutMs, {
      timedOut: (name) =>
        new StoreUnavailableError(`Redis did not answer ${name} within ${commandTimeoutMs} ms`),
      failed: unavailable,
    });
    this.#sender = new ScriptSender(client);
    this.#unfinished = new UnfinishedCalls(client, this.#calls, this.#sender, commandTimeoutMs);
    // Last, once the options are checked: a store that was never made leaves no listener.
    this.errors = new ConnectionErrors('Redis', client);
  }

  async claim(request: ClaimRequest): Promise<Claim> {
    const token = randomToken();
    const lease = LEASE + token;
    const px = milliseconds(request.leaseMs, 'leaseMs');
    const { version } = request;
    const versionArgs =
      version === undefined
        ? [0, 0]
        : [finite(version.versionMs), milliseconds(version.ttlMs, 'version ttlMs')];
    // Refused now rather than at the settle: a claim whose completion could not be sent would
    // hold its key, records and entity for the whole lease, a release failing as well.
    doneArgs(request.completion);
    this.#unfinished.leased(px);
    const records = request.records ?? [];
    const parts = this.#partsOf(
      request,
      records.map(() => true),
      version !== undefined,
    );
    // A resend of a delivery whose settle is still unfinished here: finish it first, so the
    // resend is a duplicate (or claimed) rather than in_flight.
    for (const part of parts) {
      const pending = this.#unfinished.get(part.keys[0]!);
      if (pending !== undefined) await this.#unfinished.retry(part.keys[0]!, pending);
    }
    const args = [px, ...versionArgs];
    // One part (one Redis, or a Cluster slot that holds it all): its answer is the claim's.
    if (parts.length === 1) {
      const reply = await this.#claimPart(parts[0]!, lease, args);
      return this.#wholeClaim(
        request,
        token,
        parts,
        [{ status: 'fulfilled', value: reply }],
        lease,
      );
    }
    const replies = await Promise.allSettled(
      parts.map((part) => this.#claimPart(part, lease, args)),
    );
    return this.#wholeClaim(request, token, parts, replies, lease);
  }

  /** What the parts' replies answer together; what some took is given back when not all did. */
  async #wholeClaim(
    request: ClaimRequest,
    token: string,
    parts: readonly Part[],
    replies: readonly PromiseSettledResult<ClaimReply>[],
    lease: string,
  ): Promise<Claim> {
    const records = request.records ?? [];
    const taken = parts.filter((_, i) => isClaimed(replies[i]!));
    const answer = answerOf(parts, replies);
    if (answer.state === 'claimed') {
      return { state: 'claimed', request, token, ...claimedOf(parts, replies, records.length) };
    }
    // Not all of it: give back what one slot's script took (a Cluster only).
    await Promise.allSettled(
      taken.map((part) => this.#settlePart(part, lease, 'release', request)),
    );
    if (answer.state === 'failed') throw answer.error;
    return answer;
  }

  async settle(claim: HeldClaim, how: Settlement): Promise<void> {
    const { request, records } = claim;
    const held = records.map((record) => record.state === 'held');
    const parts = this.#partsOf(request, held, request.version !== undefined && !claim.superseded);
    const lease = LEASE + claim.token;
    if (parts.length === 1) return this.#settlePart(parts[0]!, lease, how, request);
    const settled = await Promise.allSettled(
      parts.map((part) => this.#settlePart(part, lease, how, request)),
    );
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  }

  async peek(keys: readonly string[]): Promise<readonly KeyState[]> {
    if (keys.length === 0) return [];
    const at = keys.map((key) => this.#keyPrefix + hashTag(key));
    // One MGET; on a Cluster (where MGET takes one slot) one GET per key, sent at once.
    const values = await this.#calls.run('peek', (call) =>
      this.#sender.send(
        (client) =>
          this.#cluster ? Promise.all(at.map((key) => client.get(key))) : client.mget(...at),
        call,
      ),
    );
    return values.map(stateOf);
  }

  /**
   * The watchdog's notes written, pruned and (when asked) a tenant read back: one script call
   * (on a Cluster, one a tenant, sent at once).
   */
  async watch(batch: WatchBatch): Promise<WatchState | undefined> {
    checkWatchBatch(batch, 'redisStore');
    if (batch.notes.length === 0 && batch.read === undefined) return undefined;
    const calls = watchCalls(batch, this.#keyPrefix, hashTag, this.#cluster);
    const replies = await this.#calls.run('watch', (call) =>
      Promise.all(calls.map(({ keys, args }) => this.#sender.evalScript(WATCH, keys, args, call))),
    );
    const at = calls.findIndex((one) => one.reads);
    return at === -1 ? undefined : parseWatchReply(replies[at]);
  }

  /**
   * The parts of `request` one script each acts on: its key, the records `records` marks, and its
   * entity when `withVersion`.
   */
  #partsOf(request: ClaimRequest, records: readonly boolean[], withVersion: boolean): Part[] {
    const parts = new Map<string, Part>();
    const partAt = (tag: string): Part => {
      const slot = this.#cluster ? tag : '';
      let part = parts.get(slot);
      if (part === undefined) {
        part = { keys: [], hasKey: false, records: [], hasVersion: false };
        parts.set(slot, part);
      }
      return part;
    };
    const keyTag = hashTag(request.key);
    const first = partAt(keyTag);
    first.keys.push(this.#keyPrefix + keyTag);
    first.hasKey = true;
    request.records?.forEach((record, index) => {
      if (!records[index]) return;
      const tag = hashTag(record);
      const part = partAt(tag);
      part.keys.push(this.#keyPrefix + tag);
      part.records.push(index);
    });
    if (withVersion && request.version !== undefined) {
      const tag = hashTag(request.version.entity);
      const part = partAt(tag);
      const base = this.#keyPrefix + tag;
      part.keys.push(`${base}:entity`, `${base}:entity-lease`);
      part.hasVersion = true;
    }
    return [...parts.values()];
  }

  /** One part's claim, with the caller's wait bounded; one that Redis may have taken late is given back. */
  async #claimPart(
    part: Part,
    lease: string,
    [px, versionMs, versionTtl]: number[],
  ): Promise<ClaimReply> {
    const redisKey = part.keys[0]!;
    // Whether a claim sent to Redis is still unanswered (Redis may have taken it).
    const sent = { unanswered: false };
    const args = (cutoff: number) => [
      part.hasKey ? 1 : 0,
      part.records.length,
      part.hasVersion ? 1 : 0,
      lease,
      px!,
      cutoff,
      versionMs!,
      versionTtl!,
    ];
    const claimed = this.#calls.run(
      'claim',
      (call) => this.#claimWithin(call, part, args, sent),
      (late) => this.#answeredLate(redisKey, lease, late),
    );
    return claimed.catch((error: unknown) => {
      // No answer in time, or none at all (Redis died): Redis may hold our lease, and keep it
      // for leaseMs (a persistent one, across its restart). Take it back once it is back;
      // but never in place of a completion kept for this key (its retry failed above): that
      // lease holds the key, so this claim took nothing, and losing the completion would run
      // the event again once its lease ends.
      if (sent.unanswered && this.#unfinished.get(redisKey)?.completes !== true) {
        this.#unfinished.keep(SETTLE, part.keys, settleArgs(part, lease, 'release'), false);
      }
      throw error;
    });
  }

  /**
   * The claim, within `call`: Redis refuses it once 90% of the budget is gone on its clock, so
   * a claim it takes is answered before the caller's timer fires, and one that reaches it after
   * the caller gave up writes nothing. The last 10% absorbs the error of the clock estimate.
   */
  async #claimWithin(
    call: Call,
    part: Part,
    args: (cutoff: number) => (string | number)[],
    sent: { unanswered: boolean },
  ): Promise<ClaimReply> {
    const cutoff = call.deadline - this.#commandTimeoutMs / 10;
    for (let retried = false; ; retried = true) {
      const connecting = this.#sender.whenReady(call);
      if (connecting !== undefined) await connecting;
      sent.unanswered = true;
      const sentAt = Date.now();
      const reply = await this.#sender.evalScript(
        CLAIM,
        part.keys,
        args(cutoff + this.#clockOffsetMs),
        call,
      );
      sent.unanswered = false;
      const receivedAt = Date.now();
      const parsed = parseClaimReply(reply);
      const late = parsed.outcome === 'late' && !call.aborted;
      this.#learnClock(sentAt, receivedAt, parsed.redisNow, late);
      if (parsed.outcome !== 'late') return parsed;
      // With the estimate corrected, one more try if the budget allows.
      if (late && !retried && Date.now() < cutoff) continue;
      throw new StoreUnavailableError(
        `Redis did not take the claim within ${this.#commandTimeoutMs} ms`,
      );
    }
  }

  /** Sends one part's settle; one Redis did not confirm is kept to be sent again. */
  async #settlePart(
    part: Part,
    lease: string,
    how: Settlement,
    request: ClaimRequest,
  ): Promise<void> {
    const args = settleArgs(part, lease, how, request.completion);
    try {
      await this.#calls.run(how, (call) => this.#sender.evalScript(SETTLE, part.keys, args, call));
    } catch (error) {
      this.#unfinished.keep(SETTLE, part.keys, args, how === 'complete');
      throw error;
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
  #answeredLate(redisKey: string, lease: string, late: ClaimReply): void {
    const pending = this.#unfinished.get(redisKey);
    if (pending === undefined || pending.completes || pending.args[3] !== lease) return;
    if (late.outcome === 'claimed') void this.#unfinished.retry(redisKey, pending);
    else this.#unfinished.forget(redisKey, pending);
  }
}

/**
 * The arguments of {@link SETTLE} for one part: a completion's done values come from `completion`;
 * a release marks nothing done.
 */
function settleArgs(
  part: Part,
  lease: string,
  how: Settlement,
  completion?: Completion,
): (string | number)[] {
  const done = how === 'complete' && completion !== undefined ? doneArgs(completion) : NOT_DONE;
  return [part.hasKey ? 1 : 0, part.records.length, part.hasVersion ? 1 : 0, lease, how, ...done];
}

/**
 * A completion as {@link SETTLE} writes it: the key's done value and ttl, then the records'. A
 * ttl that is not a positive number of ms is a `ConfigError`.
 */
function doneArgs(completion: Completion): (string | number)[] {
  const { records } = completion;
  const ttlMs = milliseconds(completion.ttlMs, 'ttlMs');
  return [
    DONE + completion.fingerprint,
    ttlMs,
    DONE + (records ?? completion).fingerprint,
    records === undefined ? ttlMs : milliseconds(records.ttlMs, 'records ttlMs'),
  ];
}

/** The done values of a release, which marks nothing done. */
const NOT_DONE: readonly (string | number)[] = ['', 1, '', 1];

/** Whether a part's claim took what it asked for. */
function isClaimed(reply: PromiseSettledResult<ClaimReply>): boolean {
  return reply.status === 'fulfilled' && reply.value.outcome === 'claimed';
}

/** What the parts' replies answer together, short of a whole claim. */
function answerOf(
  parts: readonly Part[],
  replies: readonly PromiseSettledResult<ClaimReply>[],
): { state: 'claimed' } | Exclude<Claim, HeldClaim> | { state: 'failed'; error: unknown } {
  let inFlight: Exclude<Claim, HeldClaim> | undefined;
  for (const [i, reply] of replies.entries()) {
    if (reply.status === 'rejected') return { state: 'failed', error: reply.reason };
    const value = reply.value;
    if (value.outcome !== 'held') continue;
    // A value this store did not write fails the claim, after what other slots took is given back.
    let found: string;
    try {
      found = checkedValue(value.value);
    } catch (error) {
      return { state: 'failed', error };
    }
    // The key done wins: the delivery is a duplicate whatever else is held.
    if (value.what === 'key' && parts[i]!.hasKey && found.startsWith(DONE)) {
      return { state: 'done', fingerprint: found.slice(DONE.length) };
    }
    inFlight ??= { state: 'in_flight', held: value.what };
  }
  return inFlight ?? { state: 'claimed' };
}

/** The records and the version of a whole claim, from its parts' replies. */
function claimedOf(
  parts: readonly Part[],
  replies: readonly PromiseSettledResult<ClaimReply>[],
  recordCount: number,
): { records: RecordClaim[]; superseded: boolean } {
  const records: RecordClaim[] = new Array<RecordClaim>(recordCount);
  let superseded = false;
  parts.forEach((part, i) => {
    const reply = (replies[i] as PromiseFulfilledResult<ClaimReply>).value;
    if (reply.outcome !== 'claimed') return;
    part.records.forEach((index, n) => {
      const before = reply.records[n] ?? '';
      records[index] =
        before === ''
          ? HELD
          : { state: 'done', fingerprint: checkedValue(before).slice(DONE.length) };
    });
    if (part.hasVersion) superseded = reply.superseded;
  });
  return { records, superseded };
}

/** What a key's value says. */
function stateOf(value: string | null): KeyState {
  if (value === null) return { state: 'free' };
  const checked = checkedValue(value);
  return checked.startsWith(DONE)
    ? { state: 'done', fingerprint: checked.slice(DONE.length) }
    : { state: 'in_flight' };
}

const HELD: RecordClaim = Object.freeze({ state: 'held' });

/** A positive whole number of milliseconds for PX (Redis refuses 0 and fractions). */
function milliseconds(ms: number, name: string): number {
  if (!(ms > 0) || !Number.isFinite(ms)) {
    throw new ConfigError(`redisStore: ${name} must be a positive number of milliseconds`);
  }
  return Math.ceil(ms);
}

/** An entity's version as the scripts compare it: a finite number. */
function finite(versionMs: number): number {
  if (!Number.isFinite(versionMs)) {
    throw new ConfigError('redisStore: versionMs must be a finite number of milliseconds');
  }
  return versionMs;
}

/** A `StoreUnavailableError` for any failure of a call to Redis. */
function unavailable(operation: string, error: unknown): StoreUnavailableError {
  return storeUnavailable('Redis', operation, error);
}
