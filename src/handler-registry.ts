/**
 * The handlers registered with `on()` and `onAny()`, by event name.
 * @module
 */

import { ConfigError } from './errors.js';
import { isKnownEvent, KNOWN_EVENTS } from './events/index.js';
import { nearestName } from './nearest-name.js';
import type { AnyHandler } from './run-handlers.js';

/** The handlers of a receiver: `on()`'s by event name, and `onAny()`'s for every event. */
export class HandlerRegistry {
  readonly #named = new Map<string, AnyHandler[]>();
  readonly #any: AnyHandler[] = [];

  /**
   * Register `handler` for each of `names`, every name checked before any is registered: a
   * misspelt name would answer every real event `200 ignored`, which the platform never sends
   * again.
   */
  on(names: readonly unknown[], handler: AnyHandler): void {
    names.forEach(assertKnownEvent);
    for (const name of names as readonly string[]) {
      const list = this.#named.get(name) ?? [];
      list.push(handler);
      this.#named.set(name, list);
    }
  }

  /** Register `handler` for every event, known or not. */
  onAny(handler: AnyHandler): void {
    this.#any.push(handler);
  }

  /** The handlers of an event name, `onAny`'s included; empty when there are none. */
  handlersOf = (event: string): readonly AnyHandler[] => {
    const handlers = this.#named.get(event);
    if (handlers === undefined) return this.#any;
    return this.#any.length === 0 ? handlers : [...handlers, ...this.#any];
  };
}

/** Refuse a name this version does not know, naming the nearest known one. */
function assertKnownEvent(name: unknown): void {
  if (typeof name === 'string' && isKnownEvent(name)) return;
  const text = typeof name === 'string' ? `'${name.slice(0, 100)}'` : typeof name;
  const near = typeof name === 'string' ? nearestName(name, KNOWN_EVENTS) : undefined;
  throw new ConfigError(
    `unknown event ${text}${near === undefined ? '.' : `; did you mean '${near}'?`} ` +
      'Events this version does not know reach onAny',
  );
}
