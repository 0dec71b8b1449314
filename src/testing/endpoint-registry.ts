/**
 * The seller's webhook endpoints as the simulated platform keeps them: added, updated and removed
 * as in the platform's settings, with its limits (docs/platform.md#fan-out and #limits).
 * @module
 */

import { ConfigError } from '../errors.js';
import {
  checkEndpointConfig,
  generateSecretKey,
  type EndpointConfig,
  type EndpointHandler,
  type EndpointUpdate,
} from './endpoint-config.js';
import { PLATFORM_LIMITS } from '../platform/platform-contract.js';
import type { Outage } from './endpoint-outages.js';
import type { SimulatedEndpoint } from './simulator-types.js';

/** One endpoint, as the platform keeps it (mutable; callers get a frozen {@link viewOf}). */
export interface EndpointState {
  id: string;
  url: string | undefined;
  handler: EndpointHandler | undefined;
  secret: string;
  events: readonly string[];
  active: boolean;
  note: string;
  disabledAt: number | undefined;
  removed: boolean;
  /** When the current run of failures began; undefined after a success. */
  failingSince: number | undefined;
  /** When the seller's server is down (`takeDown`). */
  outages: Outage[];
}

/** What {@link createEndpointRegistry} returns. */
export interface EndpointRegistry {
  /** The endpoints not removed, in the order they were added. */
  saved(): EndpointState[];
  /** A saved endpoint by id; a ConfigError when there is none. */
  find(endpoint: string | SimulatedEndpoint): EndpointState;
  add(config: EndpointConfig): SimulatedEndpoint;
  update(id: string, update: EndpointUpdate): SimulatedEndpoint;
  remove(id: string): void;
}

/** An empty list of endpoints; ids given to those added without one are `endpoint-1`, `-2`… */
export function createEndpointRegistry(): EndpointRegistry {
  const endpoints: EndpointState[] = [];
  let nextId = 1;

  function saved(): EndpointState[] {
    return endpoints.filter((endpoint) => !endpoint.removed);
  }

  function find(endpoint: string | SimulatedEndpoint): EndpointState {
    const id = typeof endpoint === 'string' ? endpoint : endpoint.id;
    const found = saved().find((candidate) => candidate.id === id);
    if (!found) throw new ConfigError(`no saved endpoint ${id}`);
    return found;
  }

  return {
    saved,
    find,
    add(config) {
      const id = config.id ?? `endpoint-${nextId}`;
      if (saved().length >= PLATFORM_LIMITS.maxEndpoints) {
        throw new ConfigError(
          `a seller may have at most ${PLATFORM_LIMITS.maxEndpoints} webhook endpoints`,
        );
      }
      checkEndpointConfig(config, `endpoint ${id}`);
      if ((config.url === undefined) === (config.handler === undefined)) {
        throw new ConfigError(`endpoint ${id}: give either a url or a handler`);
      }
      if (saved().some((endpoint) => endpoint.id === id)) {
        throw new ConfigError(`endpoint ${id}: the id is taken`);
      }
      const state: EndpointState = {
        id,
        url: config.url,
        handler: config.handler,
        secret: config.secret ?? generateSecretKey(),
        events: [...config.events],
        active: config.active ?? true,
        note: config.note ?? '',
        disabledAt: undefined,
        removed: false,
        failingSince: undefined,
        outages: [],
      };
      endpoints.push(state);
      if (config.id === undefined) nextId++;
      return viewOf(state);
    },
    update(id, update) {
      const endpoint = find(id);
      checkEndpointConfig(update, `endpoint ${id}`);
      if (update.url !== undefined && endpoint.handler) {
        throw new ConfigError(`endpoint ${id}: an in-process endpoint has no url`);
      }
      if (update.url !== undefined) endpoint.url = update.url;
      if (update.events !== undefined) endpoint.events = [...update.events];
      if (update.note !== undefined) endpoint.note = update.note;
      if (update.active === true && !endpoint.active) {
        // Re-enabled by hand: the 14 days start again.
        endpoint.failingSince = undefined;
        endpoint.disabledAt = undefined;
      }
      if (update.active !== undefined) endpoint.active = update.active;
      return viewOf(endpoint);
    },
    remove(id) {
      const endpoint = find(id);
      endpoint.removed = true;
      endpoint.active = false;
    },
  };
}

/** A frozen copy of what a test may see of an endpoint. */
export function viewOf(state: EndpointState): SimulatedEndpoint {
  const { id, url, secret, events, active, note, disabledAt } = state;
  return Object.freeze({ id, url, secret, events: [...events], active, note, disabledAt });
}
