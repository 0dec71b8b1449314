/**
 * Outages of a seller's endpoint, simulated: windows of virtual time in which every request to it
 * fails one way. `down` (the default): the server is unreachable, as a refused connection;
 * `wrong_secret`: the platform signs with another secret (a rotation gone wrong), so the real
 * request reaches the receiver and is refused; `status`: a gateway in front of the server answers
 * an error status, and the receiver is not reached; `timeout`: the request reaches the receiver,
 * whose answer comes after the platform stopped waiting. The platform retries each on its schedule
 * (docs/platform.md#retries).
 * @module
 */

import { ConfigError } from '../errors.js';
import { isSuccessStatus } from '../platform/platform-contract.js';
import { generateSecretKey } from './endpoint-config.js';
import { exchange, type ExchangeResult, type ExchangeTarget } from './exchange.js';
import { signedRequest } from './sign-body.js';
import type { OutageKind, OutageOptions } from './simulator-types.js';
import type { VirtualClock } from './virtual-clock.js';

/** How every request fails during one outage. */
export type OutageEffect =
  | { readonly as: 'down' }
  | { readonly as: 'wrong_secret'; readonly secret: string }
  | { readonly as: 'status'; readonly status: number }
  | { readonly as: 'timeout' };

/** One outage: from `from` up to, not including, `until` (virtual ms), failing as `effect` says. */
export interface Outage {
  readonly from: number;
  until: number;
  readonly effect: OutageEffect;
}

/** What the platform sees of a request to an endpoint that is down: no answer at all. */
export const ENDPOINT_DOWN: ExchangeResult = Object.freeze({
  status: null,
  error: 'endpoint down (simulated outage)',
});

/** The kinds of outage, in the order the docs list them. */
export const OUTAGE_KINDS: readonly OutageKind[] = ['down', 'wrong_secret', 'status', 'timeout'];

/** The status a `status` outage answers when none is given: a gateway's "bad gateway". */
export const DEFAULT_OUTAGE_STATUS = 502;

/**
 * The outage `options` describe, `now` being the clock's now and `secret` the endpoint's; a
 * ConfigError for bad input (read as unknown: a caller in plain JavaScript may pass anything).
 */
export function outageOf(
  options: OutageOptions,
  now: number,
  secret: string,
  label: string,
): Outage {
  const forMs: unknown = options?.forMs;
  const start: unknown = options?.from ?? now;
  if (typeof forMs !== 'number' || !Number.isFinite(forMs) || forMs <= 0) {
    throw new ConfigError(`${label}: forMs must be a positive number of ms`);
  }
  if (typeof start !== 'number' || !Number.isFinite(start)) {
    throw new ConfigError(`${label}: from must be a virtual time in ms since the epoch`);
  }
  return { from: start, until: start + forMs, effect: effectOf(options, secret, label) };
}

/** How the outage of `options` fails requests, checked. */
function effectOf(options: OutageOptions, secret: string, label: string): OutageEffect {
  const { as = 'down' } = options as { as?: unknown };
  const given = options as { status?: unknown; secret?: unknown };
  if (as !== 'status' && given.status !== undefined) {
    throw new ConfigError(`${label}: status is an option of { as: 'status' } only`);
  }
  if (as !== 'wrong_secret' && given.secret !== undefined) {
    throw new ConfigError(`${label}: secret is an option of { as: 'wrong_secret' } only`);
  }
  switch (as) {
    case 'down':
    case 'timeout':
      return { as };
    case 'status':
      return { as, status: outageStatus(given.status ?? DEFAULT_OUTAGE_STATUS, label) };
    case 'wrong_secret':
      return { as, secret: wrongSecret(given.secret, secret, label) };
    default:
      throw new ConfigError(
        `${label}: as must be one of ${OUTAGE_KINDS.map((kind) => `'${kind}'`).join(', ')}`,
      );
  }
}

/** A `status` outage's status: an integer from 300 to 599 (a success would be no outage). */
function outageStatus(status: unknown, label: string): number {
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 300 || status > 599) {
    throw new ConfigError(`${label}: status must be an integer from 300 to 599`);
  }
  return status;
}

/** The secret a `wrong_secret` outage signs with: the one given, or a fresh one. */
function wrongSecret(given: unknown, secret: string, label: string): string {
  if (given === undefined) {
    let wrong = generateSecretKey();
    while (wrong === secret) wrong = generateSecretKey();
    return wrong;
  }
  // The message never shows a secret: it names the option only.
  if (typeof given !== 'string' || given === '') {
    throw new ConfigError(`${label}: secret must be a non-empty string`);
  }
  if (given === secret) {
    throw new ConfigError(`${label}: secret must differ from the endpoint's secretKey`);
  }
  return given;
}

/** The outage that covers the instant `at` (the first added, when several do), if any. */
export function outageAt(outages: readonly Outage[], at: number): Outage | undefined {
  return outages.find((outage) => outage.from <= at && at < outage.until);
}

/** End now every outage under way; those that start later still happen. */
export function endOutages(outages: readonly Outage[], now: number): void {
  for (const outage of outages) if (outage.from <= now && now < outage.until) outage.until = now;
}

/** One request during an outage: what the platform saw, what the receiver answered, when it failed. */
export interface OutageAttempt {
  /** What the platform saw. */
  readonly seen: ExchangeResult;
  /** The receiver's outcome, when the request reached it (also for a timeout). */
  readonly outcome: string | undefined;
  /** Whether the platform counted it delivered (a receiver that accepts the wrong secret). */
  readonly ok: boolean;
  /** When the platform counted it failed (virtual ms): after its wait, for a timeout. */
  readonly failedAt: number;
}

/** What {@link attemptDuring} needs: where the request goes, and the platform's wait. */
export interface OutageRequest {
  readonly target: ExchangeTarget;
  readonly body: string;
  /** The secret the platform signs with when nothing goes wrong (the endpoint's secretKey). */
  readonly secret: string;
  /** When the request went out (virtual ms). */
  readonly at: number;
  readonly timeoutMs: number;
  readonly clock: VirtualClock;
}

/** Send (or not) one request as `outage` makes it fail. */
export async function attemptDuring(
  { effect }: Outage,
  { target, body, secret, at, timeoutMs, clock }: OutageRequest,
): Promise<OutageAttempt> {
  switch (effect.as) {
    case 'down':
      return { seen: ENDPOINT_DOWN, outcome: undefined, ok: false, failedAt: at };
    case 'status':
      // The gateway answers: an answer the platform sees, from a server it never reached.
      return { seen: { status: effect.status }, outcome: undefined, ok: false, failedAt: at };
    case 'wrong_secret': {
      const seen = await exchange(target, signedRequest(body, effect.secret), timeoutMs, clock);
      const ok = isSuccessStatus(seen.status);
      return { seen, outcome: seen.outcome, ok, failedAt: ok ? at : clock.now() };
    }
    case 'timeout': {
      // The receiver gets the request and answers (its outcome is logged), too late: the
      // platform counts the attempt failed when its wait is over.
      const answered = await exchange(target, signedRequest(body, secret), timeoutMs, clock);
      const seen = { status: null, error: `no answer within ${timeoutMs} ms (simulated timeout)` };
      return { seen, outcome: answered.outcome, ok: false, failedAt: at + timeoutMs };
    }
  }
}
