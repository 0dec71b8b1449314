/**
 * Typed errors of the receiver. Every error has a stable `code`; none ever carries a secret,
 * a signature, an API key or a session token in its message or its fields.
 * @module
 */

import { quotedTenant } from './keys/delivery-key.js';
import type { Outcome } from './receiving/outcome.js';
import type { SignatureFailure, SignatureFailureReason } from './platform/signature-failure.js';

/** Stable codes of {@link SchoolhooksError}. */
export type SchoolhooksErrorCode =
  | 'config'
  | 'request_rejected'
  | 'unknown_tenant'
  | 'secret_unavailable'
  | 'invalid_signature'
  | 'malformed'
  | 'stale'
  | 'invalid_payload'
  | 'conflict'
  | 'store_unavailable'
  | 'handler_failed'
  | 'timeout'
  | 'inbox_unavailable'
  | 'api_unavailable';

const BRAND = Symbol.for('schoolhooks.error');

/**
 * The base class of every error schoolhooks reports.
 *
 * @example
 * ```ts
 * receiver.onError((error) => {
 *   if (error.code === 'invalid_payload') console.warn(error.message);
 * });
 * ```
 */
export class SchoolhooksError extends Error {
  override name = 'SchoolhooksError';
  /** A stable, machine-readable code. */
  readonly code: SchoolhooksErrorCode;

  constructor(code: SchoolhooksErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    Object.defineProperty(this, BRAND, { value: true });
  }
}

/**
 * True for any {@link SchoolhooksError}, even one created by another copy of this package
 * (another realm, a CJS and an ESM copy side by side).
 */
export function isSchoolhooksError(value: unknown): value is SchoolhooksError {
  return typeof value === 'object' && value !== null && BRAND in value;
}

/** The receiver was set up wrongly (bad options, or an adapter that lost the raw body). */
export class ConfigError extends SchoolhooksError {
  override name = 'ConfigError' as const;
  constructor(message: string) {
    super('config', message);
  }
}

/** A request was turned away before verification: wrong method, content type or size. */
export class RequestRejectedError extends SchoolhooksError {
  override name = 'RequestRejectedError' as const;
  /** Which check turned it away. */
  readonly outcome: Extract<Outcome, 'method_not_allowed' | 'unsupported_media_type' | 'too_large'>;
  constructor(outcome: RequestRejectedError['outcome'], message: string) {
    super('request_rejected', message);
    this.outcome = outcome;
  }
}

/**
 * The delivery's tenant has no secret: the secret lookup gave `undefined` for it, or the request
 * named no tenant although the secret is looked up per tenant (docs/tenants.md).
 */
export class UnknownTenantError extends SchoolhooksError {
  override name = 'UnknownTenantError' as const;
  /** The tenant the request named; undefined when it named none. */
  readonly tenant: string | undefined;
  /**
   * @param why what is wrong with the tenant (after its name), or with the request when it names
   *   none; `cause` is what reading the tenant threw, if it threw.
   */
  constructor(tenant: string | undefined, why?: string, options?: { cause?: unknown }) {
    super(
      'unknown_tenant',
      tenant === undefined
        ? (why ??
            'the request names no tenant, and the secret is looked up per tenant: give the ' +
              'adapter a `tenant` option (or handle() a `tenant`) that reads it from the route')
        : `tenant ${quotedTenant(tenant)} ${why ?? 'has no secret (the secret lookup gave none)'}`,
      options,
    );
    this.tenant = tenant;
  }
}

/**
 * The secret lookup of the delivery's tenant threw, outlasted its bound (`secretLookupTimeoutMs`)
 * or gave a secret that is empty or not a string: the delivery is answered 503 and retried.
 */
export class SecretUnavailableError extends SchoolhooksError {
  override name = 'SecretUnavailableError' as const;
  /** The tenant whose secret could not be had. */
  readonly tenant: string;
  constructor(tenant: string, message: string, options?: { cause?: unknown }) {
    super('secret_unavailable', message, options);
    this.tenant = tenant;
  }
}

/**
 * The `signature` header is missing, malformed, or matches no configured secret: `reason` says
 * which, `causes` what usually leads to it (see `signatureFailureOf`).
 */
export class SignatureError extends SchoolhooksError {
  override name = 'SignatureError' as const;
  /** `missing` (no header), `malformed` (not 64 hex characters) or `mismatch` (no secret matches). */
  readonly reason: SignatureFailureReason;
  /** The likely causes, each a sentence, most likely first. */
  readonly causes: readonly string[];
  constructor({ reason, message, causes }: SignatureFailure) {
    super('invalid_signature', message);
    this.reason = reason;
    this.causes = causes;
  }
}

/** The body is not JSON, or its envelope (event, timestamp, idempotencyKey, data) is invalid. */
export class MalformedEnvelopeError extends SchoolhooksError {
  override name = 'MalformedEnvelopeError' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super('malformed', message, options);
  }
}

/** The event's timestamp lies outside the accepted window. */
export class StaleEventError extends SchoolhooksError {
  override name = 'StaleEventError' as const;
  /** The event's timestamp, as sent. */
  readonly timestamp: string;
  constructor(message: string, timestamp: string) {
    super('stale', message);
    this.timestamp = timestamp;
  }
}

/** One issue found by schema validation: where it is and what is wrong. */
export interface PayloadIssue {
  readonly path: readonly PropertyKey[];
  readonly code: string;
  readonly message: string;
}

/** A fixed-contract event whose `data` does not match its schema. */
export class PayloadValidationError extends SchoolhooksError {
  override name = 'PayloadValidationError' as const;
  /** The event name. */
  readonly event: string;
  /** The schema issues (Zod's), without the offending values. */
  readonly issues: readonly PayloadIssue[];
  constructor(event: string, issues: readonly PayloadIssue[]) {
    const first = issues[0];
    const where = first ? ` at data.${first.path.map(String).join('.')}: ${first.message}` : '';
    super('invalid_payload', `${event} payload failed validation${where}`);
    this.event = event;
    this.issues = issues;
  }
}

/** A completed idempotency key came back with a different envelope. */
export class IdempotencyConflictError extends SchoolhooksError {
  override name = 'IdempotencyConflictError' as const;
  readonly idempotencyKey: string;
  constructor(idempotencyKey: string) {
    super(
      'conflict',
      `idempotencyKey ${idempotencyKey} was already processed with a different payload; not processed again`,
    );
    this.idempotencyKey = idempotencyKey;
  }
}

/** The idempotency store could not be reached or failed. */
export class StoreUnavailableError extends SchoolhooksError {
  override name = 'StoreUnavailableError' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super('store_unavailable', message, options);
  }
}

/**
 * A handler threw or rejected; `cause` holds what it threw (an `AggregateError` for several) and
 * the message carries its message: `a handler of PaymentCompleted failed: crm hiccup
 * (idempotencyKey …)`.
 */
export class HandlerError extends SchoolhooksError {
  override name = 'HandlerError' as const;
  readonly event: string;
  readonly idempotencyKey: string;
  /**
   * @param hidden strings the message must never show, should the cause's message hold one (the
   *   receiver passes its secrets).
   */
  constructor(
    event: string,
    idempotencyKey: string,
    cause: unknown,
    hidden: readonly string[] = [],
  ) {
    const why = causeMessageOf(cause, hidden);
    super(
      'handler_failed',
      `a handler of ${event} failed: ${why} (idempotencyKey ${idempotencyKey})`,
      {
        cause,
      },
    );
    this.event = event;
    this.idempotencyKey = idempotencyKey;
  }
}

/** Handlers were still running when handlerTimeoutMs elapsed. */
export class HandlerTimeoutError extends SchoolhooksError {
  override name = 'HandlerTimeoutError' as const;
  readonly event: string;
  readonly idempotencyKey: string;
  readonly timeoutMs: number;
  constructor(event: string, idempotencyKey: string, timeoutMs: number) {
    super(
      'timeout',
      `handlers of ${event} still running after ${timeoutMs} ms (idempotencyKey ${idempotencyKey})`,
    );
    this.event = event;
    this.idempotencyKey = idempotencyKey;
    this.timeoutMs = timeoutMs;
  }
}

/** The inbox could not store a delivery (with an `inbox`); the claim was released for a retry. */
export class InboxUnavailableError extends SchoolhooksError {
  override name = 'InboxUnavailableError' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super('inbox_unavailable', message, options);
  }
}

/** Longest cause message a {@link HandlerError} repeats. */
const MAX_CAUSE_MESSAGE = 300;

/**
 * What a thrown value says, on one bounded line, each of `hidden` replaced by `[hidden]`: the
 * handler's own words, which may be anything, but never a secret the receiver knows.
 */
export function causeMessageOf(cause: unknown, hidden: readonly string[] = []): string {
  let text = rawMessageOf(cause);
  for (const secret of hidden) {
    if (secret.trim() !== '') text = text.replaceAll(secret.trim(), '[hidden]');
  }
  // eslint-disable-next-line no-control-regex -- control characters are what is replaced
  text = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return text.length > MAX_CAUSE_MESSAGE ? `${text.slice(0, MAX_CAUSE_MESSAGE)}…` : text;
}

/** How many `cause` levels {@link withCauses} follows. */
const MAX_CAUSE_DEPTH = 4;

/**
 * `message`, then what its cause chain says, each level once: `the idempotency store failed to
 * claim the key: connect ECONNREFUSED 127.0.0.1:1`, so the failure that matters is on the line
 * and not two `cause` levels down. Each of `hidden` becomes `[hidden]`, as does the password of
 * any URL a driver quotes (`redis://user:[hidden]@host`); the line stays bounded.
 */
export function withCauses(
  message: string,
  cause: unknown,
  hidden: readonly string[] = [],
): string {
  let text = message;
  let level = cause;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && level !== undefined && level !== null; depth++) {
    const said = hideUrlPasswords(causeMessageOf(level, hidden));
    // A wrapper that repeats its cause's words (or says nothing new) adds nothing to the line.
    if (said !== '' && !text.includes(said)) text += `: ${said}`;
    level = (level as { cause?: unknown }).cause;
  }
  return text.length > MAX_CAUSE_MESSAGE * 2 ? `${text.slice(0, MAX_CAUSE_MESSAGE * 2)}…` : text;
}

/** A URL's password (`scheme://user:password@`) replaced by `[hidden]`. */
function hideUrlPasswords(text: string): string {
  return text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]*@/gi, '$1[hidden]@');
}

function rawMessageOf(cause: unknown): string {
  if (cause instanceof AggregateError) {
    const each = cause.errors.slice(0, 5).map(rawMessageOf).join('; ');
    return `${cause.message}: ${each}${cause.errors.length > 5 ? '; …' : ''}`;
  }
  if (cause instanceof Error) return cause.message || cause.name;
  if (typeof cause === 'string') return cause || 'an empty string';
  if (typeof cause === 'object' && cause !== null) {
    const { message } = cause as { message?: unknown };
    return typeof message === 'string' && message !== '' ? message : 'a non-Error object';
  }
  return String(cause);
}
