/**
 * One delivery's attempts as the platform makes them: signed, answered within the timeout or not,
 * injected faults applied, failed while the seller's server is down, retried on the platform's
 * schedule, and the endpoint disabled after 14 days of failures (docs/platform.md#retries).
 * @module
 */

import { attemptDuring, outageAt, type Outage } from './endpoint-outages.js';
import type { EndpointState } from './endpoint-registry.js';
import { exchange, type ExchangeResult } from './exchange.js';
import type { FaultKind, FaultPicker } from './fault-picker.js';
import { isSuccessStatus, PLATFORM_LIMITS } from '../platform/platform-contract.js';
import { signedRequest } from './sign-body.js';
import type { DeliveryLogEntry, DeliveryState } from './simulator-types.js';
import type { VirtualClock } from './virtual-clock.js';

const { maxAttempts, retryDelaysMs, autoDisableAfterMs } = PLATFORM_LIMITS;

/** A delivery of one event to one endpoint, with its body. */
export interface Delivery extends DeliveryState {
  target: EndpointState;
  body: string;
}

/** What every log entry of one attempt says: which request it was. */
type AttemptBase = Pick<
  DeliveryLogEntry,
  'endpoint' | 'event' | 'idempotencyKey' | 'attempt' | 'at'
>;

/** What {@link deliveryAttempts} needs of the simulator. */
export interface DeliveryAttemptsOptions {
  clock: VirtualClock;
  pickFault: FaultPicker;
  timeoutMs: number;
  /** Called with each attempt's log entry. */
  record(entry: DeliveryLogEntry): void;
  /** Called when an endpoint has failed for 14 days and is turned off. */
  disabled(endpoint: EndpointState): void;
}

/**
 * The function that starts a delivery's next attempt (now, or later for a `reorder` fault); each
 * failed attempt schedules the next on the clock until one succeeds or the schedule ends.
 */
export function deliveryAttempts({
  clock,
  pickFault,
  timeoutMs,
  record,
  disabled,
}: DeliveryAttemptsOptions): (delivery: Delivery, forced?: FaultKind) => Promise<void> | void {
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
    const base = {
      endpoint: target.id,
      event: delivery.event,
      idempotencyKey: delivery.idempotencyKey,
      attempt,
      at: clock.now(),
    };
    // An attempt an outage meets fails its way, with no fault injected on top of it.
    const outage = outageAt(target.outages, base.at);
    const { ok, failedAt } =
      outage === undefined
        ? await send(delivery, base, fault, { clock, timeoutMs, record })
        : await sendDuring(outage, delivery, base, { clock, timeoutMs, record });
    if (ok) {
      delivery.state = 'delivered';
      target.failingSince = undefined;
      return;
    }
    target.failingSince ??= failedAt;
    if (target.active && failedAt - target.failingSince >= autoDisableAfterMs) {
      target.active = false;
      target.disabledAt = failedAt;
      disabled(target);
    }
    const delay = retryDelaysMs[attempt - 1];
    // An inactive or deleted endpoint's queued retries stop after their next failed attempt (3.2).
    if (delay === undefined || attempt >= maxAttempts || !target.active) {
      delivery.state = 'failed';
      return;
    }
    clock.schedule(() => start(delivery), failedAt + delay - clock.now());
  }

  return start;
}

/** Send one attempt, apply its fault and log it; whether it succeeded, and when it failed. */
async function send(
  delivery: Delivery,
  base: AttemptBase,
  fault: FaultKind | undefined,
  { clock, timeoutMs, record }: Pick<DeliveryAttemptsOptions, 'clock' | 'timeoutMs' | 'record'>,
): Promise<{ ok: boolean; failedAt: number }> {
  const { target } = delivery;
  const sent = signedRequest(delivery.body, target.secret);
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
    failedAt = Math.max(failedAt, base.at + timeoutMs);
  }
  // The receiver's outcome is logged even when the platform did not see it (drop, delay).
  record(entryOf(base, seen, result.outcome, fault === 'duplicate' ? undefined : fault));
  if (copy) record(entryOf(base, copy, copy.outcome, 'duplicate'));
  return { ok: isSuccessStatus(seen.status), failedAt };
}

/** Send one attempt as the outage under way makes it fail, and log it. */
async function sendDuring(
  outage: Outage,
  { target, body }: Delivery,
  base: AttemptBase,
  { clock, timeoutMs, record }: Pick<DeliveryAttemptsOptions, 'clock' | 'timeoutMs' | 'record'>,
): Promise<{ ok: boolean; failedAt: number }> {
  const request = { target, body, secret: target.secret, at: base.at, timeoutMs, clock };
  const { seen, outcome, ok, failedAt } = await attemptDuring(outage, request);
  record({ ...entryOf(base, seen, outcome), outage: outage.effect.as });
  return { ok, failedAt };
}

/** The log entry of what the platform `seen`; `outcome` is what the receiver answered. */
export function entryOf(
  base: AttemptBase,
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
