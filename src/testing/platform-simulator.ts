/**
 * The platform's delivery behaviour, simulated: fan-out, signing, the 15 s timeout, the retry
 * schedule, auto-disable, test deliveries, injected faults and outages of the seller's server
 * (docs/platform.md#retries, #fan-out, #test-deliveries and #limits).
 * @module
 */

import { randomUUID } from 'node:crypto';
import { ConfigError } from '../errors.js';
import { resolveData, serializeEnvelope, toTimestamp } from './create-delivery.js';
import { deliveryAttempts, entryOf, type Delivery } from './delivery-attempts.js';
import { generateSecretKey } from './endpoint-config.js';
import { attemptDuring, endOutages, outageAt, outageOf } from './endpoint-outages.js';
import { createEndpointRegistry, viewOf, type EndpointRegistry } from './endpoint-registry.js';
import { exchange } from './exchange.js';
import { faultPicker } from './fault-picker.js';
import { signedRequest } from './sign-body.js';
import { PLATFORM_LIMITS } from '../platform/platform-contract.js';
import type {
  DeliveryLogEntry,
  OutageOptions,
  PlatformSimulator,
  PlatformSimulatorOptions,
  SendArgs,
  SentEvent,
  SimulatedEndpoint,
  TestDeliveryOptions,
} from './simulator-types.js';
import { createVirtualClock } from './virtual-clock.js';

/**
 * Create a simulated platform: the seller's endpoints and the platform's delivery behaviour, on a
 * virtual clock so a test runs hours of retries in milliseconds.
 *
 * @example
 * ```ts
 * import { createReceiver } from 'schoolhooks';
 * import { createPlatformSimulator, createVirtualClock } from 'schoolhooks/testing';
 *
 * const clock = createVirtualClock();
 * const receiver = createReceiver({ secret: 'test-secret', now: clock.now });
 * const platform = createPlatformSimulator({
 *   clock,
 *   endpoints: [{ handler: (req) => receiver.handle(req), secret: 'test-secret', events: ['PaymentCompleted'] }],
 *   faults: { rate: 0.3, seed: 7 },
 * });
 * platform.send('PaymentCompleted');
 * await platform.run(); // every retry, up to the platform's retry span of virtual time
 * console.log(platform.log);
 * ```
 */
export function createPlatformSimulator({
  endpoints: configs = [],
  clock = createVirtualClock(),
  faults,
  timeoutMs = PLATFORM_LIMITS.responseTimeoutMs,
  onAttempt,
  onEndpointDisabled,
}: PlatformSimulatorOptions = {}): PlatformSimulator {
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new ConfigError('timeoutMs must be a positive number of ms');
  }
  const log: DeliveryLogEntry[] = [];
  const record = (entry: DeliveryLogEntry): void => {
    log.push(entry);
    onAttempt?.(entry);
  };
  const state: SimulatorState = {
    clock,
    timeoutMs,
    registry: createEndpointRegistry(),
    deliveries: [],
    record,
    start: deliveryAttempts({
      clock,
      pickFault: faultPicker(faults),
      timeoutMs,
      record,
      disabled: (endpoint) => onEndpointDisabled?.(viewOf(endpoint)),
    }),
  };
  const simulator = simulatorOf(state, log);
  for (const config of configs) state.registry.add(config);
  return simulator;
}

/** What the simulator's methods share: its clock, endpoints, deliveries and how it records. */
interface SimulatorState {
  readonly clock: PlatformSimulator['clock'];
  readonly timeoutMs: number;
  readonly registry: EndpointRegistry;
  readonly deliveries: Delivery[];
  /** Log an attempt and tell `onAttempt`. */
  readonly record: (entry: DeliveryLogEntry) => void;
  /** Run a delivery's attempts, on the retry schedule. */
  readonly start: ReturnType<typeof deliveryAttempts>;
}

/** The public face of a simulator's state. */
function simulatorOf(state: SimulatorState, log: readonly DeliveryLogEntry[]): PlatformSimulator {
  const { clock, registry, deliveries } = state;
  return {
    clock,
    get endpoints() {
      return registry.saved().map(viewOf);
    },
    get log() {
      return [...log];
    },
    get deliveries() {
      return deliveries.map(({ endpoint, event, idempotencyKey, state, attempts }) => ({
        endpoint,
        event,
        idempotencyKey,
        state,
        attempts,
      }));
    },
    addEndpoint: registry.add,
    updateEndpoint: registry.update,
    removeEndpoint: registry.remove,
    send<N extends string>(event: N, ...args: SendArgs<N>): SentEvent {
      return sendEvent(state, event, ...args);
    },
    sendTestDelivery(
      endpoint: string | SimulatedEndpoint,
      options?: TestDeliveryOptions,
    ): Promise<DeliveryLogEntry> {
      return sendTestDelivery(state, endpoint, options);
    },
    takeDown(endpoint: string | SimulatedEndpoint, options: OutageOptions): void {
      const target = registry.find(endpoint);
      target.outages.push(outageOf(options, clock.now(), target.secret, `endpoint ${target.id}`));
    },
    bringUp(endpoint: string | SimulatedEndpoint): void {
      endOutages(registry.find(endpoint).outages, clock.now());
    },
    run(): Promise<void> {
      return clock.runAll();
    },
  };
}

/** Fan an event out to every active endpoint subscribed to it, each delivery on its own schedule. */
function sendEvent<N extends string>(
  { clock, registry, deliveries, start }: SimulatorState,
  event: N,
  ...[data, options = {}]: SendArgs<N>
): SentEvent {
  const { idempotencyKey = randomUUID(), timestamp = clock.now(), fault } = options;
  const envelope = {
    event,
    data: resolveData(event, data),
    idempotencyKey,
    timestamp: toTimestamp(timestamp),
  };
  const body = serializeEnvelope(envelope);
  const targets = registry
    .saved()
    .filter((endpoint) => endpoint.active && endpoint.events.includes(event));
  for (const target of targets) {
    const delivery: Delivery = {
      endpoint: target.id,
      event,
      idempotencyKey,
      state: 'pending',
      attempts: 0,
      target,
      body,
    };
    deliveries.push(delivery);
    clock.schedule(() => start(delivery, fault), 0);
  }
  return {
    event,
    idempotencyKey,
    timestamp: envelope.timestamp,
    body,
    endpoints: targets.map(({ id }) => id),
  };
}

/** One test delivery from the endpoint's form: a single attempt, never retried. */
async function sendTestDelivery(
  { clock, registry, timeoutMs, record }: SimulatorState,
  endpoint: string | SimulatedEndpoint,
  { saved: isSaved = true, event = 'UserSignedUp' }: TestDeliveryOptions = {},
): Promise<DeliveryLogEntry> {
  const target = registry.find(endpoint);
  const idempotencyKey = randomUUID();
  const body = serializeEnvelope({
    event,
    data: resolveData(event, undefined),
    idempotencyKey,
    timestamp: toTimestamp(clock.now()),
  });
  // An unsaved form has no secretKey yet: the platform signs with a throwaway key (4.4).
  let secret = target.secret;
  while (!isSaved && secret === target.secret) secret = generateSecretKey();
  const at = clock.now();
  const base = { endpoint: target.id, event, idempotencyKey, attempt: 1, at };
  const outage = outageAt(target.outages, at);
  let entry: DeliveryLogEntry;
  if (outage === undefined) {
    const result = await exchange(target, signedRequest(body, secret), timeoutMs, clock);
    entry = { ...entryOf(base, result), test: true };
  } else {
    const request = { target, body, secret, at, timeoutMs, clock };
    const { seen, outcome } = await attemptDuring(outage, request);
    entry = { ...entryOf(base, seen, outcome), outage: outage.effect.as, test: true };
  }
  record(entry);
  return entry;
}
