/**
 * How `redisStore` sends its scripts: only while the client is ready and the caller still waits,
 * so nothing is ever parked in ioredis's offline queue to run after the caller gave up.
 * @module
 */

// Types only: importing this file never loads ioredis.
import type { Cluster, Redis } from 'ioredis';
import type { BoundedCall as Call } from '../utils/bounded-calls.js';
import { readinessOf } from './client-readiness.js';
import type { Script } from './redis-scripts.js';

/** Sends the store's scripts to one client, waiting (within the call) for it to connect. */
export class ScriptSender {
  readonly #client: Redis | Cluster;
  /** A client still connecting is waited for (within the call's time); any other fails at once. */
  readonly #connected: (call: Call) => Promise<void>;

  constructor(client: Redis | Cluster) {
    this.#client = client;
    this.#connected = readinessOf(client, () => this.notReady());
  }

  /**
   * Undefined while the client is ready: the caller sends in this same tick, so commands reach
   * the connection in the order they were called. Otherwise a wait for the client to connect,
   * within `call`, which rejects at once if it is not connecting.
   */
  whenReady(call: Call): Promise<void> | undefined {
    return this.#client.status === 'ready' ? undefined : this.#connected(call);
  }

  /**
   * EVALSHA, or EVAL when Redis answers NOSCRIPT (first use, a restarted or flushed server, a
   * new cluster node). Sends only while the client is ready and the deadline has not passed, so
   * nothing is ever parked in ioredis's offline queue to run after the caller gave up.
   */
  async evalScript(
    { lua, sha }: Script,
    key: string | readonly string[],
    args: readonly (string | number)[],
    call: Call,
  ): Promise<unknown> {
    const client = this.#client;
    const connecting = this.whenReady(call);
    if (connecting !== undefined) await connecting;
    // One key, or the keys of one slot (on one Redis, a claim's keys are one "slot").
    const keys: [number, ...string[]] = typeof key === 'string' ? [1, key] : [key.length, ...key];
    try {
      return await this.#sendNow(() => client.evalsha(sha, ...keys, ...args), call);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return this.#sendNow(() => client.eval(lua, ...keys, ...args), call);
    }
  }

  /**
   * `command` on the client, sent as {@link evalScript} sends a script: once the client is ready
   * (waited for within `call`) and only while the call is live.
   */
  async send<T>(command: (client: Redis | Cluster) => Promise<T>, call: Call): Promise<T> {
    const connecting = this.whenReady(call);
    if (connecting !== undefined) await connecting;
    return this.#sendNow(() => command(this.#client), call) as Promise<T>;
  }

  /** The error of a call made while the client is not ready, naming its status. */
  notReady(): Error {
    return new Error(`the Redis client is not ready (status: ${this.#client.status})`);
  }

  /** Sends `command` only if, at this very tick, the client is ready and the call is live. */
  #sendNow(command: () => Promise<unknown>, call: Call): Promise<unknown> {
    if (this.#client.status !== 'ready') return Promise.reject(this.notReady());
    if (call.aborted) return Promise.reject(new Error('the call timed out'));
    return command();
  }
}
