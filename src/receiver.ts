/**
 * The receiver: verify, parse, validate, deduplicate and dispatch one delivery, and say which
 * HTTP status answers it (DESIGN section 3).
 * @module
 */

import {
  ConfigError,
  HandlerError,
  HandlerTimeoutError,
  IdempotencyConflictError,
  MalformedEnvelopeError,
  PayloadValidationError,
  RequestRejectedError,
  SignatureError,
  StaleEventError,
  StoreUnavailableError,
  type SchoolhooksError,
} from './errors.js';
import { parseEnvelope } from './envelope.js';
import { validateEventData } from './events/validate.js';
import { isFixedContractEvent, type KnownEventName, type WebhookEvent } from './events/index.js';
import { declaredLength, type BodyReader } from './body.js';
import { DeadlineQueue } from './deadlines.js';
import { fingerprintEnvelope } from './fingerprint.js';
import {
  isPromiseLike,
  runHandlers,
  type AnyHandler,
  type HandlerContext,
} from './run-handlers.js';
import { getHeader, type HeadersInput } from './headers.js';
import { OUTCOME_STATUS, type Outcome } from './outcome.js';
import { createVerifier, type RawBody } from './signature.js';
import { memoryStore, syncFaceOf } from './stores/memory.js';
import type { ClaimResult, IdempotencyStore } from './stores/types.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** How far in the future a timestamp may lie (clock skew between the platform and us). */
const FUTURE_SKEW_MS = 5 * MINUTE;

/** Any event name: the known ones autocomplete, any other string is accepted too. */
export type EventName = KnownEventName | (string & {});

/** A pino-compatible logger. It is never given a secret, a signature, a body or a token. */
export interface Logger {
  debug(obj: Record<string, unknown>, msg?: string): void;
  info(obj: Record<string, unknown>, msg?: string): void;
  warn(obj: Record<string, unknown>, msg?: string): void;
  error(obj: Record<string, unknown>, msg?: string): void;
}

/** Options of {@link createReceiver}. */
export interface ReceiverOptions {
  /** Every active endpoint's secretKey; a signature that matches any of them verifies. */
  secret: string | readonly string[];
  /** Where claims and completed keys live. Default: a fresh {@link memoryStore}. */
  store?: IdempotencyStore;
  /** Largest body accepted, in bytes. Default 1 MiB; beyond it -> 413. */
  maxBodyBytes?: number;
  /** Oldest event accepted, by its `timestamp`. Default 72 h; older -> 422 `stale`. */
  maxEventAgeMs?: number;
  /** How long a completed key is remembered. Default 7 days; must be >= maxEventAgeMs. */
  dedupTtlMs?: number;
  /** How long an in-flight claim holds before another delivery may take it. Default 60 s. */
  leaseMs?: number;
  /** How long handlers may run before the delivery is answered 503 `timeout`. Default 10 s. */
  handlerTimeoutMs?: number;
  /** Where the receiver logs what happened to each delivery. Default: nowhere. */
  logger?: Logger;
  /** The clock, in ms since the epoch. Default `Date.now`; tests and simulators set their own. */
  now?: () => number;
}

/** What {@link Receiver.handle} takes: the raw request. */
export interface WebhookRequest {
  /** The HTTP method; when given, anything but POST is answered 405. */
  method?: string | undefined;
  /** Request headers: a plain object in any letter case, Node's headers, or a Fetch `Headers`. */
  headers: HeadersInput;
  /**
   * The raw body bytes, exactly as received, or a {@link BodyReader} the receiver calls once the
   * method and content type passed. Anything else (a parsed object) is answered 500 `body_unavailable`.
   */
  body: RawBody | ArrayBuffer | BodyReader | null | undefined;
}

/** The JSON body of every answer. */
export interface WebhookResponseBody {
  ok: boolean;
  outcome: Outcome;
  idempotencyKey?: string;
}

/** What {@link Receiver.handle} resolves to: the status and JSON body to answer with. */
export interface WebhookResult {
  status: number;
  outcome: Outcome;
  body: WebhookResponseBody;
}

/** A handler of one or several events; it may return a promise. */
export type EventHandler<N extends string = EventName> = (
  event: WebhookEvent<N>,
  context: HandlerContext,
) => unknown;

/** A handler of failures; what it throws is logged, never rethrown. */
export type ErrorHandler = (error: SchoolhooksError) => unknown;

/** A webhook receiver. Create one with {@link createReceiver}. */
export interface Receiver {
  /** Handle one event name, or each of a list. */
  on<N extends EventName>(name: N | readonly N[], handler: EventHandler<N>): Receiver;
  /** Handle every verified event, known or not. */
  onAny(handler: EventHandler): Receiver;
  /** Be told of every failure, with a typed error. */
  onError(handler: ErrorHandler): Receiver;
  /** Run one delivery through the pipeline. Never throws for anything a request contains. */
  handle(request: WebhookRequest): Promise<WebhookResult>;
  /** The largest body accepted, for adapters to stop reading at the limit. */
  readonly maxBodyBytes: number;
}

/**
 * Create a webhook receiver.
 *
 * @example
 * ```ts
 * import { createReceiver } from 'schoolhooks';
 *
 * const receiver = createReceiver({ secret: process.env.SCHOOL_WEBHOOK_SECRET! });
 * receiver.on('PaymentCompleted', async (event) => {
 *   await grantAccess(event.data.payment.invoice.user.id, event.data.payment.invoice.totalAmount);
 * });
 * const { status, body } = await receiver.handle({ method: 'POST', headers, body: rawBody });
 * ```
 */
export function createReceiver({
  secret,
  store = memoryStore(),
  maxBodyBytes = 1024 * 1024,
  maxEventAgeMs = 72 * HOUR,
  dedupTtlMs = 7 * 24 * HOUR,
  leaseMs = MINUTE,
  handlerTimeoutMs = 10_000,
  logger,
  now = Date.now,
}: ReceiverOptions): Receiver {
  for (const [name, value] of Object.entries({
    maxBodyBytes,
    maxEventAgeMs,
    dedupTtlMs,
    leaseMs,
    handlerTimeoutMs,
  })) {
    if (!Number.isFinite(value) || value <= 0) {
      throw new ConfigError(
        `${name} must be a positive number of ${name === 'maxBodyBytes' ? 'bytes' : 'ms'}`,
      );
    }
  }
  if (dedupTtlMs < maxEventAgeMs) {
    // A key forgotten while its event is still accepted would let a late retry run twice.
    throw new ConfigError(
      'dedupTtlMs must be >= maxEventAgeMs, or a late retry is processed twice',
    );
  }
  let verify: ReturnType<typeof createVerifier>;
  try {
    verify = createVerifier(secret);
  } catch {
    throw new ConfigError('secret must be a non-empty string or a non-empty list of them');
  }

  // memoryStore's operations without a promise each: most deliveries then finish in one turn.
  const syncStore = syncFaceOf(store);
  // One timer for every delivery whose handlers are still running: they share handlerTimeoutMs.
  const handlerDeadlines = new DeadlineQueue(handlerTimeoutMs);
  const handlers = new Map<string, AnyHandler[]>();
  const anyHandlers: AnyHandler[] = [];
  const errorHandlers: ErrorHandler[] = [];

  function reportError(error: SchoolhooksError): void {
    if (errorHandlers.length === 0) {
      logger?.warn({ code: error.code, err: error.message }, 'webhook failure');
      return;
    }
    for (const handler of errorHandlers) {
      try {
        const result = handler(error);
        if (isPromiseLike(result)) {
          result.then(undefined, (thrown: unknown) => logOnErrorFailure(thrown));
        }
      } catch (thrown) {
        logOnErrorFailure(thrown);
      }
    }
  }

  function logOnErrorFailure(thrown: unknown): void {
    logger?.error(
      { err: thrown instanceof Error ? thrown.message : String(thrown) },
      'onError handler threw',
    );
  }

  function answer(outcome: Outcome, idempotencyKey?: string): WebhookResult {
    const status = OUTCOME_STATUS[outcome];
    const body: WebhookResponseBody = { ok: status >= 200 && status < 300, outcome };
    if (idempotencyKey !== undefined) body.idempotencyKey = idempotencyKey;
    return { status, outcome, body };
  }

  function reject(outcome: RequestRejectedError['outcome'], message: string): WebhookResult {
    reportError(new RequestRejectedError(outcome, message));
    logger?.info({ outcome }, 'webhook rejected');
    return answer(outcome);
  }

  async function handle(request: WebhookRequest): Promise<WebhookResult> {
    try {
      const { method, headers } = request;
      if (method !== undefined && method !== 'POST' && method.toUpperCase() !== 'POST') {
        return reject(
          'method_not_allowed',
          `method ${String(method).slice(0, 16)} is not allowed; use POST`,
        );
      }
      const contentType = getHeader(headers, 'content-type');
      if (contentType !== undefined && !isJsonContentType(contentType)) {
        return reject('unsupported_media_type', 'content-type must be application/json');
      }
      let input = request.body;
      if (typeof input === 'function') {
        // A body announced as too large is refused before any of it is read.
        if ((declaredLength(headers) ?? 0) > maxBodyBytes) {
          return reject('too_large', `body exceeds maxBodyBytes (${maxBodyBytes})`);
        }
        try {
          input = await input(maxBodyBytes);
        } catch (cause) {
          // The client went away or broke the stream mid-body.
          reportError(new MalformedEnvelopeError('the request body could not be read', { cause }));
          logger?.warn({ outcome: 'malformed' }, 'webhook body unreadable');
          return answer('malformed');
        }
      }
      const body = rawBodyOf(input);
      if (body === undefined) {
        reportError(
          new ConfigError(
            'the raw request body is not available (a body parser consumed it): mount the adapter ' +
              'before any JSON body parser, or keep the raw bytes (Express: ' +
              "express.json({ verify: rawBodySaver }) with rawBodySaver from 'schoolhooks/express')",
          ),
        );
        logger?.error({ outcome: 'body_unavailable' }, 'webhook body unavailable');
        return answer('body_unavailable');
      }
      if (byteLength(body, maxBodyBytes) > maxBodyBytes) {
        return reject('too_large', `body exceeds maxBodyBytes (${maxBodyBytes})`);
      }

      const verified = verify(body, getHeader(headers, 'signature'));
      if (!(typeof verified === 'boolean' ? verified : await verified)) {
        reportError(
          new SignatureError('the signature header is missing, malformed, or matches no secret'),
        );
        logger?.warn({ outcome: 'invalid_signature' }, 'webhook signature rejected');
        return answer('invalid_signature');
      }

      const parsed = parseEnvelope(body);
      if (!parsed.ok) {
        reportError(new MalformedEnvelopeError(parsed.reason));
        logger?.warn({ outcome: 'malformed', reason: parsed.reason }, 'webhook malformed');
        return answer('malformed');
      }
      const { envelope, timestampMs } = parsed;
      const { event: eventName, idempotencyKey } = envelope;

      const age = now() - timestampMs;
      if (age > maxEventAgeMs || age < -FUTURE_SKEW_MS) {
        reportError(
          new StaleEventError(
            `${eventName} timestamp ${envelope.timestamp} is outside the accepted window`,
            envelope.timestamp,
          ),
        );
        logger?.warn({ event: eventName, idempotencyKey, outcome: 'stale' }, 'webhook stale');
        return answer('stale', idempotencyKey);
      }

      let event = envelope as unknown as WebhookEvent<string>;
      if (isFixedContractEvent(eventName)) {
        const validation = validateEventData(eventName, envelope.data);
        if (!validation.ok) {
          reportError(new PayloadValidationError(eventName, validation.issues));
          logger?.warn(
            { event: eventName, idempotencyKey, outcome: 'invalid_payload' },
            'webhook payload invalid',
          );
          return answer('invalid_payload', idempotencyKey);
        }
        if (validation.data !== envelope.data) {
          event = { ...envelope, data: validation.data } as WebhookEvent<string>;
        }
      }

      let claim: ClaimResult;
      try {
        claim = syncStore
          ? syncStore.claim(idempotencyKey, leaseMs)
          : await store.claim(idempotencyKey, leaseMs);
      } catch (cause) {
        reportError(
          new StoreUnavailableError('the idempotency store failed to claim the key', { cause }),
        );
        logger?.error(
          { event: eventName, idempotencyKey, outcome: 'store_unavailable' },
          'webhook store unavailable',
        );
        return answer('store_unavailable', idempotencyKey);
      }
      if (claim.state === 'in_flight') {
        logger?.info(
          { event: eventName, idempotencyKey, outcome: 'in_flight' },
          'webhook in flight elsewhere',
        );
        return answer('in_flight', idempotencyKey);
      }
      if (claim.state === 'done') {
        if (
          claim.fingerprint !== undefined &&
          claim.fingerprint !== fingerprintEnvelope(envelope)
        ) {
          reportError(new IdempotencyConflictError(idempotencyKey));
          logger?.error(
            { event: eventName, idempotencyKey, outcome: 'conflict' },
            'webhook idempotencyKey reused',
          );
          return answer('conflict', idempotencyKey);
        }
        logger?.debug(
          { event: eventName, idempotencyKey, outcome: 'duplicate' },
          'webhook duplicate',
        );
        return answer('duplicate', idempotencyKey);
      }

      const { token } = claim;
      // Taken before any handler runs: a handler that changes event.data must not change it.
      const fingerprint = fingerprintEnvelope(envelope);
      const named = handlers.get(eventName);
      const chosen =
        named === undefined
          ? anyHandlers
          : anyHandlers.length === 0
            ? named
            : [...named, ...anyHandlers];
      if (chosen.length === 0) {
        const completing = complete(idempotencyKey, token, fingerprint);
        if (completing) await completing;
        logger?.debug(
          { event: eventName, idempotencyKey, outcome: 'ignored' },
          'webhook ignored: no handler',
        );
        return answer('ignored', idempotencyKey);
      }

      const ran = runHandlers(chosen, event, handlerDeadlines);
      const first = isPromiseLike(ran) ? await ran : ran;
      if ('later' in first) {
        reportError(new HandlerTimeoutError(eventName, idempotencyKey, handlerTimeoutMs));
        logger?.warn(
          { event: eventName, idempotencyKey, outcome: 'timeout' },
          'webhook handlers timed out',
        );
        // They go on: success completes the key, failure releases it for the next retry.
        void first.later.then(async (settled) => {
          if (settled.ok) return complete(idempotencyKey, token, fingerprint);
          reportError(new HandlerError(eventName, idempotencyKey, settled.error));
          return release(idempotencyKey, token);
        });
        return answer('timeout', idempotencyKey);
      }
      if (!first.ok) {
        const releasing = release(idempotencyKey, token);
        if (releasing) await releasing;
        reportError(new HandlerError(eventName, idempotencyKey, first.error));
        logger?.error(
          { event: eventName, idempotencyKey, outcome: 'handler_failed' },
          'webhook handler failed',
        );
        return answer('handler_failed', idempotencyKey);
      }
      const completing = complete(idempotencyKey, token, fingerprint);
      if (completing) await completing;
      logger?.info({ event: eventName, idempotencyKey, outcome: 'processed' }, 'webhook processed');
      return answer('processed', idempotencyKey);
    } catch (cause) {
      // Only a faulty store or logger can get here; the delivery is retried later.
      reportError(new StoreUnavailableError('the receiver failed unexpectedly', { cause }));
      return answer('store_unavailable');
    }
  }

  /** Mark the key done; resolves at once on a store with a synchronous face. */
  function complete(key: string, token: string, fingerprint: string): Promise<void> | undefined {
    try {
      if (syncStore) return void syncStore.complete(key, token, dedupTtlMs, fingerprint);
      return store.complete(key, token, dedupTtlMs, fingerprint).then(undefined, completeFailed);
    } catch (cause) {
      return completeFailed(cause);
    }
  }

  function completeFailed(cause: unknown): undefined {
    reportError(
      new StoreUnavailableError('the idempotency store failed to record completion', { cause }),
    );
    return undefined;
  }

  /** Give the key back; resolves at once on a store with a synchronous face. */
  function release(key: string, token: string): Promise<void> | undefined {
    try {
      if (syncStore) return void syncStore.release(key, token);
      return store.release(key, token).then(undefined, releaseFailed);
    } catch (cause) {
      return releaseFailed(cause);
    }
  }

  function releaseFailed(cause: unknown): undefined {
    // The lease still runs out by itself, so the next retry gets the key after leaseMs.
    reportError(
      new StoreUnavailableError('the idempotency store failed to release the key', { cause }),
    );
    return undefined;
  }

  const receiver: Receiver = {
    on<N extends EventName>(name: N | readonly N[], handler: EventHandler<N>): Receiver {
      const names: readonly string[] = typeof name === 'string' ? [name] : name;
      for (const one of names) {
        const list = handlers.get(one) ?? [];
        list.push(handler as unknown as AnyHandler);
        handlers.set(one, list);
      }
      return receiver;
    },
    onAny(handler: EventHandler): Receiver {
      anyHandlers.push(handler as unknown as AnyHandler);
      return receiver;
    },
    onError(handler: ErrorHandler): Receiver {
      errorHandlers.push(handler);
      return receiver;
    },
    handle,
    maxBodyBytes,
  };
  return receiver;
}

function rawBodyOf(body: unknown): Uint8Array | string | undefined {
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  return undefined;
}

function isJsonContentType(value: string): boolean {
  if (value === 'application/json') return true;
  const semicolon = value.indexOf(';');
  const mediaType = (semicolon === -1 ? value : value.slice(0, semicolon)).trim().toLowerCase();
  return mediaType === 'application/json';
}

/** The body's size in bytes; for a string, exact only when it could exceed `limit`. */
function byteLength(body: Uint8Array | string, limit: number): number {
  if (typeof body !== 'string') return body.byteLength;
  // A UTF-16 unit is at most 3 UTF-8 bytes: most bodies are far under the limit and need no count.
  if (body.length * 3 <= limit) return body.length;
  let bytes = 0;
  const text = body;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}
