/**
 * The platform's delivery behaviour, simulated: fan-out, signing, the 15 s timeout, the retry
 * schedule, auto-disable, test deliveries and injected faults (docs/platform.md#retries, #fan-out, #test-deliveries and #limits).
 * @module
 */

import { randomUUID } from 'node:crypto';
import { ConfigError } from '../errors.js';
import { resolveData, serializeEnvelope, toTimestamp } from './create-delivery.js';
import { deliveryAttempts, entryOf, signedRequest, type Delivery } from './delivery-attempts.js';
import { generateSecretKey } from './endpoint-config.js';
import { createEndpointRegistry, viewOf } from './endpoint-registry.js';
import { exchange } from './exchange.js';
import { faultPicker } from './fault-picker.js';
import { PLATFORM_LIMITS } from '../platform-contract.js';
import type {
  DeliveryLogEntry,
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
  const registry = createEndpointRegistry();
  const log: DeliveryLogEntry[] = [];
  const deliveries: Delivery[] = [];

  function record(entry: DeliveryLogEntry): void {
    log.push(entry);
    onAttempt?.(entry);
  }

  const start = deliveryAttempts({
    clock,
    pickFault: faultPicker(faults),
    timeoutMs,
    record,
    disabled: (endpoint) => onEndpointDisabled?.(viewOf(endpoint)),
  });

  const simulator: PlatformSimulator = {
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
    send<N extends string>(event: N, ...[data, options = {}]: SendArgs<N>): SentEvent {
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
    },
    async sendTestDelivery(
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
      const result = await exchange(target, signedRequest(body, secret), timeoutMs, clock);
      const entry: DeliveryLogEntry = {
        ...entryOf({ endpoint: target.id, event, idempotencyKey, attempt: 1, at }, result),
        test: true,
      };
      record(entry);
      return entry;
    },
    run(): Promise<void> {
      return clock.runAll();
    },
  };

  for (const config of configs) registry.add(config);
  return simulator;
}
