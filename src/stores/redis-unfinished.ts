/**
 * The settles (completions and releases) `redisStore` could not confirm while Redis was
 * unreachable, kept and sent again with the same token once the client is ready, until the lease
 * they end would have ended.
 * @module
 */

// Types only: importing this file never loads ioredis.
import type { Cluster, Redis } from 'ioredis';
import type { BoundedCalls } from '../utils/bounded-calls.js';
import type { Script } from './redis-scripts.js';
import type { ScriptSender } from './redis-script-sender.js';

/** A settle to send again: its script, keys and arguments, until when, the retry running. */
export interface Unfinished {
  readonly script: Script;
  /** The Redis keys it acts on (one slot's); the first names it. */
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
  /** Whether it completes (rather than releases) what it acts on. */
  readonly completes: boolean;
  readonly until: number;
  retry: Promise<void> | undefined;
}

/** The unfinished settles of one store, by the first Redis key each acts on. */
export class UnfinishedCalls {
  readonly #client: Redis | Cluster;
  readonly #calls: BoundedCalls;
  readonly #sender: ScriptSender;
  readonly #retryAfterMs: number;
  readonly #byKey = new Map<string, Unfinished>();
  /** The receiver gives one leaseMs to every claim: the longest an unfinished call matters. */
  #longestLeaseMs = 0;
  readonly #retryAll = (): void => {
    for (const [redisKey, pending] of this.#byKey) void this.retry(redisKey, pending);
  };

  constructor(
    client: Redis | Cluster,
    calls: BoundedCalls,
    sender: ScriptSender,
    retryAfterMs: number,
  ) {
    this.#client = client;
    this.#calls = calls;
    this.#sender = sender;
    this.#retryAfterMs = retryAfterMs;
  }

  /** Note a claim's lease: how long, at most, a call kept from now on matters. */
  leased(leaseMs: number): void {
    if (leaseMs > this.#longestLeaseMs) this.#longestLeaseMs = leaseMs;
  }

  /** The call kept for `redisKey`, if any. */
  get(redisKey: string): Unfinished | undefined {
    return this.#byKey.get(redisKey);
  }

  /**
   * Keep a settle Redis did not confirm, to send again (the script acts only while the token
   * still owns what it took, so sending one twice, or after the lease, changes nothing wrong).
   */
  keep(
    script: Script,
    keys: readonly string[],
    args: readonly (string | number)[],
    completes: boolean,
  ): void {
    if (this.#longestLeaseMs === 0) return;
    const until = Date.now() + this.#longestLeaseMs;
    const redisKey = keys[0]!;
    // One listener while anything is kept: a call kept again in place of its key's adds none.
    const first = this.#byKey.size === 0;
    this.#byKey.set(redisKey, { script, keys, args, completes, until, retry: undefined });
    if (first) this.#client.on('ready', this.#retryAll);
    // Still connected (Redis was slow, not gone): no 'ready' will come, so try again soon.
    if (this.#client.status === 'ready') setTimeout(this.#retryAll, this.#retryAfterMs).unref?.();
  }

  /** Send an unfinished settle again; resolves once it is done or still failing. */
  retry(redisKey: string, pending: Unfinished): Promise<void> {
    if (Date.now() > pending.until) {
      this.forget(redisKey, pending);
      return Promise.resolve();
    }
    // Its failure is only noted (the next 'ready' tries again): no error names it to anyone.
    pending.retry ??= this.#calls
      .run('resend', (call) =>
        this.#sender.evalScript(pending.script, pending.keys, pending.args, call),
      )
      .then(
        () => this.forget(redisKey, pending),
        () => {
          pending.retry = undefined;
        },
      );
    return pending.retry;
  }

  /** Drop `pending`, if it is still the call kept for `redisKey`. */
  forget(redisKey: string, pending: Unfinished): void {
    if (this.#byKey.get(redisKey) !== pending) return;
    this.#byKey.delete(redisKey);
    if (this.#byKey.size === 0) this.#client.off('ready', this.#retryAll);
  }
}
