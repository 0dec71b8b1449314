/**
 * The public types of the platform simulator.
 * @module
 */

import type { EventData, FixedEventName } from '../platform/events/index.js';
import type { EndpointConfig, EndpointUpdate } from './endpoint-config.js';
import type { FaultKind, FaultOptions } from './fault-picker.js';
import type { VirtualClock } from './virtual-clock.js';

/** Options of {@link createPlatformSimulator}. */
export interface PlatformSimulatorOptions {
  /** The seller's endpoints, at most 5. More can be added with `addEndpoint()`. */
  endpoints?: readonly EndpointConfig[];
  /** The clock deliveries are scheduled on. Default: a new {@link createVirtualClock}. */
  clock?: VirtualClock;
  /** Inject faults at random. Default: none. */
  faults?: FaultOptions;
  /** How long the platform waits for an answer. Default 15 000 ms, as the platform. */
  timeoutMs?: number;
  /** Told of every request as soon as its result is known. */
  onAttempt?: (entry: DeliveryLogEntry) => void;
  /** Told when an endpoint is disabled for 14 days without a successful delivery. */
  onEndpointDisabled?: (endpoint: SimulatedEndpoint) => void;
}

/** A saved endpoint, as the simulator holds it. */
export interface SimulatedEndpoint {
  readonly id: string;
  readonly url: string | undefined;
  /** The endpoint's secretKey: configure the receiver with it. */
  readonly secret: string;
  readonly events: readonly string[];
  readonly active: boolean;
  readonly note: string;
  /** When the platform disabled it for 14 days without success (virtual ms), if it did. */
  readonly disabledAt: number | undefined;
}

/** One request the platform sent, and what it made of the answer. */
export interface DeliveryLogEntry {
  /** The endpoint's id. */
  endpoint: string;
  event: string;
  idempotencyKey: string;
  /** 1 for the first delivery, up to 5. */
  attempt: number;
  /** When the request went out (virtual ms since the epoch). */
  at: number;
  /** The HTTP status the platform saw; null when it saw none (timeout, network error, dropped). */
  status: number | null;
  /** Whether the platform counted it delivered (a success status, in time). */
  ok: boolean;
  /**
   * The receiver's `outcome`, from its JSON answer; given for a dropped or late answer too,
   * which the receiver sent but the platform never saw.
   */
  outcome?: string;
  /** Why the platform saw no answer. */
  error?: string;
  /** The fault injected into this request, if any. */
  fault?: FaultKind;
  /** The kind of outage this request met (`takeDown`), if any: then no fault is injected. */
  outage?: OutageKind;
  /** True for a test delivery from the endpoint form. */
  test?: true;
}

/** Where one event stands at one endpoint. */
export interface DeliveryState {
  endpoint: string;
  event: string;
  idempotencyKey: string;
  /** `failed` after 5 failed attempts, or a failed attempt while the endpoint is inactive. */
  state: 'pending' | 'delivered' | 'failed';
  attempts: number;
}

/** Options of {@link PlatformSimulator.send}. */
export interface SendOptions {
  /** Default: a random UUID. */
  idempotencyKey?: string;
  /** When the event occurred. Default: the clock's now. */
  timestamp?: string | Date | number;
  /** Inject this fault into the first attempt at every endpoint. */
  fault?: FaultKind;
}

/** The arguments of {@link PlatformSimulator.send} after the event name. */
export type SendArgs<N extends string> = N extends FixedEventName
  ? [data?: EventData<N> | undefined, options?: SendOptions]
  : [data: EventData<N>, options?: SendOptions];

/** An event handed to the simulator. */
export interface SentEvent {
  event: string;
  idempotencyKey: string;
  timestamp: string;
  /** The envelope as JSON text, the same bytes for every endpoint and every attempt. */
  body: string;
  /** The endpoints it goes to. */
  endpoints: string[];
}

/** Options of {@link PlatformSimulator.sendTestDelivery}. */
export interface TestDeliveryOptions {
  /**
   * Whether the endpoint form is saved. An unsaved form signs with a temporary key that differs
   * from the endpoint's secretKey (docs/platform.md#test-deliveries). Default true.
   */
  saved?: boolean;
  /** Default `UserSignedUp`. */
  event?: FixedEventName;
}

/**
 * How every request fails during an outage ({@link PlatformSimulator.takeDown}): `down`, the
 * server is unreachable; `wrong_secret`, the platform signs with another secret; `status`, a
 * gateway answers an error status; `timeout`, the answer comes after the platform stopped waiting.
 */
export type OutageKind = 'down' | 'wrong_secret' | 'status' | 'timeout';

/** When an outage is: what every kind of {@link OutageOptions} takes. */
export interface OutageWindow {
  /** How long the outage lasts, in ms of virtual time: a positive number. */
  forMs: number;
  /** When the outage starts, in virtual ms since the epoch. Default: the clock's now. */
  from?: number;
}

/**
 * Options of {@link PlatformSimulator.takeDown}: a window of virtual time, and how every request
 * in it fails (`as`, default `'down'`).
 *
 * @example
 * ```ts
 * platform.takeDown('shop', { forMs: 2 * HOUR });                            // unreachable
 * platform.takeDown('shop', { forMs: HOUR, as: 'wrong_secret' });            // answered 401
 * platform.takeDown('shop', { forMs: HOUR, as: 'status', status: 500 });     // a gateway's 500
 * platform.takeDown('shop', { forMs: HOUR, as: 'timeout' });                 // too slow
 * ```
 */
export type OutageOptions =
  | (OutageWindow & {
      /**
       * The seller's server is unreachable: every request fails as a refused connection does
       * (status null) and reaches nothing.
       */
      as?: 'down';
    })
  | (OutageWindow & {
      /**
       * The platform signs with another secret (a secretKey rotation gone wrong): the real
       * request reaches the receiver, which answers 401 `invalid_signature`.
       */
      as: 'wrong_secret';
      /** The secret it signs with; default a fresh one. Must differ from the endpoint's. */
      secret?: string;
    })
  | (OutageWindow & {
      /** A gateway before the server answers `status`; the receiver is not reached. */
      as: 'status';
      /** The gateway's answer, an integer from 300 to 599. Default 502. */
      status?: number;
    })
  | (OutageWindow & {
      /**
       * The request reaches the receiver, which answers (its outcome is logged), but the
       * platform has stopped waiting: the attempt fails when `timeoutMs` is over (virtual time).
       */
      as: 'timeout';
    });

/** A simulated platform. Create one with {@link createPlatformSimulator}. */
export interface PlatformSimulator {
  /** The clock deliveries run on. */
  readonly clock: VirtualClock;
  /** The saved endpoints. */
  readonly endpoints: readonly SimulatedEndpoint[];
  /** Every request sent so far, in the order their results were known. */
  readonly log: readonly DeliveryLogEntry[];
  /** Every event at every endpoint it went to. */
  readonly deliveries: readonly DeliveryState[];
  /** Save a new endpoint, checked as the platform checks it. */
  addEndpoint(config: EndpointConfig): SimulatedEndpoint;
  /** Change a saved endpoint; `active: true` re-enables a disabled one. */
  updateEndpoint(id: string, update: EndpointUpdate): SimulatedEndpoint;
  /** Delete an endpoint: no new events; queued retries stop after their next failed attempt. */
  removeEndpoint(id: string): void;
  /**
   * Queue an event for every active endpoint subscribed to it: one envelope, one idempotencyKey,
   * each endpoint signing with its own secretKey. Nothing is sent until the clock runs.
   */
  send<N extends string>(event: N, ...args: SendArgs<N>): SentEvent;
  /** Send a test delivery from an endpoint's form now: one attempt, never retried. */
  sendTestDelivery(
    endpoint: string | SimulatedEndpoint,
    options?: TestDeliveryOptions,
  ): Promise<DeliveryLogEntry>;
  /**
   * Fail every attempt at the endpoint (retries and test deliveries) from `from` for `forMs` of
   * virtual time, as `as` says: by default the seller's server is down (status null, reaches
   * nothing); `wrong_secret`, `status` and `timeout` as {@link OutageOptions} says. The platform
   * retries on its schedule as ever, and injects no fault into an attempt an outage met. Call
   * again for more outages (where several cover an instant, the first added applies). A
   * ConfigError for an unknown endpoint or options that do not check.
   */
  takeDown(endpoint: string | SimulatedEndpoint, options: OutageOptions): void;
  /** End the endpoint's outage now, if one is under way; outages that start later still happen. */
  bringUp(endpoint: string | SimulatedEndpoint): void;
  /** Run the clock until every delivery is delivered or failed. */
  run(): Promise<void>;
}
