/**
 * The errors a store's client emits outside any call (an idle pg connection that Postgres ended,
 * an ioredis reconnection that failed): heard, so none can end the process as an unhandled
 * `'error'` event, and told, never swallowed. A receiver subscribes (`store.onError`) and reports
 * each through its `onError` handlers or its logger; while nobody subscribes (a reconciler, the
 * CLI) the store writes them to the console itself, one line per burst.
 * @module
 */

import { consoleLogger } from '../receiving/console-logger.js';
import type { StoreUnavailableError } from '../errors.js';
import { storeUnavailable } from './unavailable.js';

/** A listener of a store's connection errors (see `IdempotencyStore.onError`). */
export type StoreErrorListener = (error: StoreUnavailableError) => void;

/** The part of a pg `Pool` or an ioredis client this needs (no import of either). */
export interface ErrorEmitter {
  on(event: 'error', listener: (error: unknown) => void): unknown;
  off(event: 'error', listener: (error: unknown) => void): unknown;
}

/**
 * How often, at most, an unsubscribed store writes a line while errors keep coming: the first of
 * a burst at once, then one line a minute counting the others.
 */
export const CONNECTION_ERROR_LOG_EVERY_MS = 60_000;

/**
 * One store's listener on its client's `'error'` event, from the store's creation until its
 * `close()`.
 *
 * @example
 * ```ts
 * const errors = new ConnectionErrors('Postgres', pool);
 * const stop = errors.subscribe((error) => console.warn(error.code, error.message));
 * errors.close(); // at the store's close: the listener leaves the pool
 * ```
 */
export class ConnectionErrors {
  readonly #server: string;
  readonly #emitter: ErrorEmitter;
  readonly #listeners = new Set<StoreErrorListener>();
  readonly #log: BurstLog;
  #closed = false;

  constructor(server: string, emitter: ErrorEmitter, logEveryMs = CONNECTION_ERROR_LOG_EVERY_MS) {
    this.#server = server;
    this.#emitter = emitter;
    this.#log = new BurstLog(logEveryMs);
    // A pool-like wrapper that is no event emitter has no 'error' event to hear.
    if (listens(emitter)) sharedListenerOf(emitter).add(this.#heard);
  }

  /** Tell `listener` of every connection error from now on; returns what stops it. */
  subscribe(listener: StoreErrorListener): () => void {
    // Wrapped, so one listener given twice is told twice and stopped once per subscription.
    const each: StoreErrorListener = (error) => listener(error);
    this.#listeners.add(each);
    return () => {
      this.#listeners.delete(each);
    };
  }

  /** Stop listening to the client (which stays the caller's: it is not closed). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (listens(this.#emitter)) sharedListenerOf(this.#emitter).delete(this.#heard);
    this.#listeners.clear();
    this.#log.end();
  }

  #heard = (cause: unknown): void => {
    const error = storeUnavailable(this.#server, 'connection', cause);
    if (this.#listeners.size === 0) {
      this.#log.write(error);
      return;
    }
    for (const listener of this.#listeners) {
      try {
        listener(error);
      } catch (thrown) {
        // A listener that throws must not turn a heard error into an unhandled one.
        this.#log.write(storeUnavailable(this.#server, 'error listener', thrown));
      }
    }
  };
}

/**
 * The stores on one client, heard through one `'error'` listener: a process with many stores on
 * one pool or client (a store per school, a reconciler's beside a receiver's) would otherwise add
 * a listener per store, and Node warns of a leak past ten (`MaxListenersExceededWarning`). The
 * listener is added with the first store and taken off the client with the last one's `close()`.
 */
class SharedListener {
  readonly #emitter: ErrorEmitter;
  readonly #stores = new Set<(cause: unknown) => void>();

  constructor(emitter: ErrorEmitter) {
    this.#emitter = emitter;
  }

  add(heard: (cause: unknown) => void): void {
    if (this.#stores.size === 0) this.#emitter.on('error', this.#tell);
    this.#stores.add(heard);
  }

  delete(heard: (cause: unknown) => void): void {
    if (!this.#stores.delete(heard) || this.#stores.size !== 0) return;
    this.#emitter.off('error', this.#tell);
    SHARED.delete(this.#emitter);
  }

  #tell = (cause: unknown): void => {
    for (const heard of this.#stores) heard(cause);
  };
}

/** Each client's shared listener, while a store listens to it. */
const SHARED = new WeakMap<ErrorEmitter, SharedListener>();

function sharedListenerOf(emitter: ErrorEmitter): SharedListener {
  let shared = SHARED.get(emitter);
  if (shared === undefined) {
    shared = new SharedListener(emitter);
    SHARED.set(emitter, shared);
  }
  return shared;
}

/** Whether `emitter` really has `on` and `off` (a caller in plain JavaScript may pass anything). */
function listens(emitter: ErrorEmitter): boolean {
  const { on, off } = emitter as Partial<ErrorEmitter>;
  return typeof on === 'function' && typeof off === 'function';
}

/**
 * Console lines for errors nobody subscribed to: the first of a burst at once, then at most one
 * every `everyMs` that counts those seen since, until a whole period passes without one.
 */
class BurstLog {
  readonly #everyMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #since = 0;
  #last: StoreUnavailableError | undefined;

  constructor(everyMs: number) {
    this.#everyMs = everyMs;
  }

  write(error: StoreUnavailableError): void {
    if (this.#timer !== undefined) {
      this.#since++;
      this.#last = error;
      return;
    }
    consoleLogger.warn({ code: error.code, err: error.message }, 'store connection failed');
    this.#arm();
  }

  end(): void {
    this.#flush();
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#flush()) this.#arm();
    }, this.#everyMs);
    // A burst's count must not keep a process alive that has nothing else to do.
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /** Writes the count of the errors seen since the last line; false when there were none. */
  #flush(): boolean {
    const last = this.#last;
    if (this.#since === 0 || last === undefined) return false;
    const seconds = Math.round(this.#everyMs / 1000);
    consoleLogger.warn(
      { code: last.code, err: last.message, more: this.#since, seconds },
      'store connection still failing',
    );
    this.#since = 0;
    this.#last = undefined;
    return true;
  }
}
