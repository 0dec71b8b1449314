/**
 * The public types of the platform simulator.
 * @module
 */

import type { EventData, FixedEventName } from '../events/index.js';
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

/** Options of {@link PlatformSimulator.takeDown}. */
export interface OutageOptions {
  /** How long the endpoint stays down, in ms of virtual time: a positive number. */
  forMs: number;
  /** When the outage starts, in virtual ms since the epoch. Default: the clock's now. */
  from?: number;
}

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
   * Take the seller's server down from `from` for `forMs` of virtual time: every attempt at the
   * endpoint then (retries and test deliveries) fails as a refused connection does, status null,
   * and reaches nothing; the platform retries on its schedule as ever. Call again for more
   * outages. A ConfigError for an unknown endpoint or a `forMs` that is not a positive number.
   */
  takeDown(endpoint: string | SimulatedEndpoint, options: OutageOptions): void;
  /** End the endpoint's outage now, if one is under way; outages that start later still happen. */
  bringUp(endpoint: string | SimulatedEndpoint): void;
  /** Run the clock until every delivery is delivered or failed. */
  run(): Promise<void>;
}
