/**
 * The handlers registered with `on()` and `onAny()`, by event name.
 * @module
 */

import { hasEntity } from '../platform/entity-of.js';
import { ConfigError } from '../errors.js';
import { isKnownEvent, KNOWN_EVENTS } from '../platform/events/index.js';
import { nearestName } from '../utils/nearest-name.js';
import type { AnyHandler } from './run-handlers.js';

/** Options of one `on()`. */
export interface HandlerOptions {
  /**
   * Run the handlers of this event only for a state newer (by the event's `timestamp`) than the
   * newest already processed for the same entity (`entityOf`): an older one is answered
   * `200 superseded`, and two deliveries of one entity never run at once. For the events of the
   * entity table only.
   */
  latestOnly?: boolean;
}

/** The handlers of a receiver: `on()`'s by event name, and `onAny()`'s for every event. */
export class HandlerRegistry {
  readonly #named = new Map<string, AnyHandler[]>();
  readonly #any: AnyHandler[] = [];
  /** The events one of whose handlers asked for `latestOnly`. */
  readonly #latestOnly = new Set<string>();

  /**
   * Register `handler` for each of `names`, every name checked before any is registered: a
   * misspelt name would answer every real event `200 ignored`, which the platform never sends
   * again; `latestOnly` for an event of no entity would guard nothing.
   */
  on(names: readonly unknown[], handler: AnyHandler, options?: HandlerOptions | null): void {
    names.forEach(assertKnownEvent);
    const latestOnly = options?.latestOnly === true;
    if (latestOnly) this.#assertGuardable(names as readonly string[]);
    for (const name of names as readonly string[]) {
      const list = this.#named.get(name) ?? [];
      list.push(handler);
      this.#named.set(name, list);
      if (latestOnly) this.#latestOnly.add(name);
    }
  }

  /**
   * Whether the handlers of an event run for its newest state only: when one of them asked
   * for it, every handler of the event (`onAny`'s too) is guarded.
   */
  latestOnly = (event: string): boolean =>
    this.#latestOnly.size !== 0 && this.#latestOnly.has(event);

  /** Refuse `latestOnly` where it would guard nothing: an event of no entity. */
  #assertGuardable(names: readonly string[]): void {
    const without = names.find((name) => !hasEntity(name));
    if (without !== undefined) {
      throw new ConfigError(
        `latestOnly needs an event about an entity (entityOf); ${without} is about none, so no state of it is newer than another`,
      );
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
