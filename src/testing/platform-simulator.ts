/**
 * The platform's delivery behaviour, simulated: fan-out, signing, the 15 s timeout, the retry
 * schedule, auto-disable, test deliveries and injected faults (docs/platform.md#retries, #fan-out, #test-deliveries and #limits).
 * @module
 */

import { randomUUID } from 'node:crypto';
import { ConfigError } from '../errors.js';
import { resolveData, serializeEnvelope, toTimestamp } from './create-delivery.js';
import {
  checkEndpointConfig,
  generateSecretKey,
  type EndpointConfig,
  type EndpointHandler,
  type EndpointUpdate,
  type SimulatedRequest,
} from './endpoint-config.js';
import { exchange, type ExchangeResult } from './exchange.js';
import { faultPicker, type FaultKind } from './fault-picker.js';
import { isSuccessStatus, PLATFORM_LIMITS } from './platform-limits.js';
import { signBody } from './sign-body.js';
import type {
  DeliveryLogEntry,
  DeliveryState,
  PlatformSimulator,
  PlatformSimulatorOptions,
  SendArgs,
  SentEvent,
  SimulatedEndpoint,
  TestDeliveryOptions,
} from './simulator-types.js';
import { createVirtualClock } from './virtual-clock.js';

const { maxAttempts, retryDelaysMs, responseTimeoutMs, autoDisableAfterMs } = PLATFORM_LIMITS;

interface EndpointState {
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
}

interface Delivery extends DeliveryState {
  target: EndpointState;
  body: string;
}

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
 * await platform.run(); // every retry, up to 4 h 46 min of virtual time
 * console.log(platform.log);
 * ```
 */
export function createPlatformSimulator({
  endpoints: configs = [],
  clock = createVirtualClock(),
  faults,
  timeoutMs = responseTimeoutMs,
  onAttempt,
  onEndpointDisabled,
}: PlatformSimulatorOptions = {}): PlatformSimulator {
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new ConfigError('timeoutMs must be a positive number of ms');
  }
  const pickFault = faultPicker(faults);
  const endpoints: EndpointState[] = [];
  const log: DeliveryLogEntry[] = [];
  const deliveries: Delivery[] = [];
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

  function addEndpoint(config: EndpointConfig): SimulatedEndpoint {
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
    };
    endpoints.push(state);
    if (config.id === undefined) nextId++;
    return view(state);
  }

  function record(entry: DeliveryLogEntry): void {
    log.push(entry);
    onAttempt?.(entry);
  }

  function request(body: string, secret: string): SimulatedRequest {
    return {
      method: 'POST',
      headers: { 'content-type': 'application/json', signature: signBody(body, secret) },
      body,
    };
  }

  function start(delivery: Delivery, forced?: FaultKind): Promise<void> | void {
    const attempt = ++delivery.attempts;
    const fault = forced ?? pickFault();
    if (fault === 'reorder') {
      // Held back while later events go out; sent as it would be, only later.
      const holdMs = Math.round(1_000 + 59_000 * pickFault.random());
      clock.schedule(() => attemptDelivery(delivery, attempt, 'reorder'), holdMs);
      return;
    }
    return attemptDelivery(delivery, attempt, fault);
  }

  async function attemptDelivery(
    delivery: Delivery,
    attempt: number,
    fault: FaultKind | undefined,
  ): Promise<void> {
    const { target } = delivery;
    const at = clock.now();
    const sent = request(delivery.body, target.secret);
    const [result, copy] = await Promise.all([
      exchange(target, sent, timeoutMs, clock),
      fault === 'duplicate' ? exchange(target, sent, timeoutMs, clock) : undefined,
    ]);
    let seen: ExchangeResult = result;
    let failedAt = clock.now();
    if (fault === 'drop') {
      seen = { status: null, error: 'the answer was lost (injected drop)' };
    } else if (fault === 'delay') {
      seen = { status: null, error: `no answer within ${timeoutMs} ms (injected delay)` };
      failedAt = Math.max(failedAt, at + timeoutMs);
    }
    const ok = isSuccessStatus(seen.status);
    const base = {
      endpoint: target.id,
      event: delivery.event,
      idempotencyKey: delivery.idempotencyKey,
      attempt,
      at,
    };
    // The receiver's outcome is logged even when the platform did not see it (drop, delay).
    record(entryOf(base, seen, result.outcome, fault === 'duplicate' ? undefined : fault));
    if (copy) record(entryOf(base, copy, copy.outcome, 'duplicate'));

    if (ok) {
      delivery.state = 'delivered';
      target.failingSince = undefined;
      return;
    }
    target.failingSince ??= failedAt;
    if (target.active && failedAt - target.failingSince >= autoDisableAfterMs) {
      target.active = false;
      target.disabledAt = failedAt;
      onEndpointDisabled?.(view(target));
    }
    const delay = retryDelaysMs[attempt - 1];
    // An inactive or deleted endpoint's queued retries stop after their next failed attempt (3.2).
    if (delay === undefined || attempt >= maxAttempts || !target.active) {
      delivery.state = 'failed';
      return;
    }
    clock.schedule(() => start(delivery), failedAt + delay - clock.now());
  }

  const simulator: PlatformSimulator = {
    clock,
    get endpoints() {
      return saved().map(view);
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
    addEndpoint,
    updateEndpoint(id: string, update: EndpointUpdate): SimulatedEndpoint {
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
      return view(endpoint);
    },
    removeEndpoint(id: string): void {
      const endpoint = find(id);
      endpoint.removed = true;
      endpoint.active = false;
    },
    send<N extends string>(event: N, ...[data, options = {}]: SendArgs<N>): SentEvent {
      const { idempotencyKey = randomUUID(), timestamp = clock.now(), fault } = options;
      const envelope = {
        event,
        data: resolveData(event, data),
        idempotencyKey,
        timestamp: toTimestamp(timestamp),
      };
      const body = serializeEnvelope(envelope);
      const targets = saved().filter(
        (endpoint) => endpoint.active && endpoint.events.includes(event),
      );
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
      const target = find(endpoint);
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
      const result = await exchange(target, request(body, secret), timeoutMs, clock);
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

  for (const config of configs) addEndpoint(config);
  return simulator;
}

/** The log entry of what the platform `seen`; `outcome` is what the receiver answered. */
function entryOf(
  base: Pick<DeliveryLogEntry, 'endpoint' | 'event' | 'idempotencyKey' | 'attempt' | 'at'>,
  seen: ExchangeResult,
  outcome: string | undefined = seen.outcome,
  fault?: FaultKind,
): DeliveryLogEntry {
  const entry: DeliveryLogEntry = {
    ...base,
    status: seen.status,
    ok: isSuccessStatus(seen.status),
  };
  if (outcome !== undefined) entry.outcome = outcome;
  if (seen.error !== undefined) entry.error = seen.error;
  if (fault !== undefined) entry.fault = fault;
  return entry;
}

function view(state: EndpointState): SimulatedEndpoint {
  const { id, url, secret, events, active, note, disabledAt } = state;
  return Object.freeze({ id, url, secret, events: [...events], active, note, disabledAt });
}
