/**
 * The steps of a delivery, each named for what it checks (docs/receiving.md), and the three lists
 * they are run in: an HTTP delivery whose handlers run now (request, body, verify, parse, age,
 * validate, claim, dispatch), one handed to an inbox (… age, claim, hand off), and a worker's
 * run of a stored delivery (verify, parse, validate, its run's key, claim, dispatch).
 *
 * Each step reads and writes the {@link Delivery} and gives back `undefined` to go on, or the
 * {@link Ending} of the delivery, or a promise of either; `run-steps.ts` runs the lists and is
 * the one place that decides when to wait.
 * @module
 */

import { declaredLength } from './body.js';
import type { DeadlineQueue } from './deadlines.js';
import { RECEIVER_DEFAULTS } from './defaults.js';
import { parseEnvelope, type ParsedEnvelope } from './envelope.js';
import {
  ConfigError,
  HandlerError,
  HandlerTimeoutError,
  IdempotencyConflictError,
  InboxUnavailableError,
  MalformedEnvelopeError,
  PayloadValidationError,
  RequestRejectedError,
  SignatureError,
  StaleEventError,
  StoreUnavailableError,
  type SchoolhooksError,
} from './errors.js';
import type { z } from 'zod';
import { isFixedContractEvent, type FixedEventName, type WebhookEvent } from './events/index.js';
import { validateEventData } from './events/validate.js';
import { getHeader, type HeadersInput } from './headers.js';
import type { Inbox, StoredDelivery } from './inbox/types.js';
import type { Outcome } from './outcome.js';
import { runHandlers, type AnyHandler, type HandlersSettled } from './run-handlers.js';
import {
  andThen,
  isPromiseLike,
  type MaybePromise,
  type Step,
  type StepResult,
} from './run-steps.js';
import type { Fingerprint, RawBody, Verification } from './signature.js';
import { signatureFailureOf } from './signature-failure.js';
import type { ClaimResult, ClaimTransaction, IdempotencyStore } from './stores/types.js';
import type { DeliveryObservation, TraceCarrier } from './telemetry.js';

/** The `body_unavailable` fix that holds whatever the framework, for a caller that names none. */
const ANY_FRAMEWORK_RAW_BODY_FIX =
  'give the receiver the bytes as received (or a reader of the request stream) before any body ' +
  "parser reads them; each adapter of schoolhooks names its own framework's fix";

/** A request as the first steps read it. */
export interface PipelineRequest {
  method?: string | undefined;
  headers: HeadersInput;
  body: unknown;
  /** The fix a `body_unavailable` error names, in the adapter's own words. */
  rawBodyFix?: string | undefined;
}

/**
 * How a delivery ended: its outcome, the failure `onError` is told of, and what is known of the
 * event by then (for the log line and telemetry).
 */
export class Ending {
  constructor(
    readonly outcome: Outcome,
    readonly error?: SchoolhooksError,
    readonly event?: string,
    readonly idempotencyKey?: string,
  ) {}
}

/** A step of a delivery. */
export type DeliveryStep = Step<Delivery, Ending>;

/**
 * What the steps learn of one delivery, each field set by the step named, read by the ones
 * after it.
 */
export class Delivery {
  /** Set by `readBody` (or given, for a stored delivery): the raw bytes. */
  body!: RawBody;
  /** Set by `verify`: the body's fingerprint under the secret that verified it. */
  fingerprint!: Fingerprint;
  /** Set by `parse`. */
  parsed!: ParsedEnvelope;
  /** Set by `parse`: the idempotencyKey; `useRunKey` replaces it by the run's own key. */
  key!: string;
  /** Set by `validate`: the event handlers get. */
  event!: WebhookEvent<string>;
  /** Set by `claim`: the lease token. */
  token!: string;
  /** Set by `claim`: the transaction the store opened with the claim, if it opened one. */
  transaction: ClaimTransaction | undefined;

  constructor(
    /** The request, for an HTTP delivery. */
    readonly request: PipelineRequest | undefined,
    /** The signature header (an HTTP delivery's, or the one stored with the delivery). */
    readonly signature: string | undefined,
    /** The attempt, 1 for an HTTP delivery; handlers see it as `ctx.attempt`. */
    readonly attempt: number,
    readonly observation: DeliveryObservation | undefined,
  ) {}
}

/** What the steps share: the receiver's options, prepared. */
export interface PipelineConfig {
  verification: Verification;
  /** The secrets, for a HandlerError to hide should its cause's message hold one. */
  secrets: readonly string[];
  store: IdempotencyStore;
  /** Where deliveries are handed off to, if anywhere. */
  inbox: Inbox | undefined;
  /** Schemas that replace the bundled ones, by event name. */
  schemas: Partial<Record<FixedEventName, z.ZodType>> | undefined;
  maxBodyBytes: number;
  maxEventAgeMs: number;
  dedupTtlMs: number;
  leaseMs: number;
  handlerTimeoutMs: number;
  /** One timer for every delivery whose handlers are still running. */
  handlerDeadlines: DeadlineQueue;
  now: () => number;
  /** The handlers of an event name, `onAny`'s included; empty when there are none. */
  handlersOf: (event: string) => readonly AnyHandler[];
  /** Tell `onError` (or the logger) of a failure. */
  reportError: (error: SchoolhooksError) => void;
}

/** The key a worker's run of a stored delivery holds in the store (the delivery's own key is done). */
export function runKeyOf(idempotencyKey: string): string {
  return `inbox-run:${idempotencyKey}`;
}

/** The steps of the pipeline, bound to one receiver's configuration, and their lists. */
export class DeliveryPipeline {
  readonly #config: PipelineConfig;

  /** An HTTP delivery whose handlers run before the answer. */
  readonly dispatchNow: readonly DeliveryStep[];
  /** An HTTP delivery handed to the inbox; workers validate and dispatch it later. */
  readonly handToInbox: readonly DeliveryStep[];
  /** A worker's run of a stored delivery: no age check (retries go on for days). */
  readonly runStored: readonly DeliveryStep[];

  constructor(config: PipelineConfig) {
    this.#config = config;
    const { checkRequest, readBody, verify, parse, checkAge, validate, claim, dispatch } = this;
    this.dispatchNow = [checkRequest, readBody, verify, parse, checkAge, validate, claim, dispatch];
    this.handToInbox = [checkRequest, readBody, verify, parse, checkAge, claim, this.handOff];
    this.runStored = [verify, parse, validate, useRunKey, claim, dispatch];
  }

  /** Step 1, request: 405 for a method other than POST, 415 for a type other than JSON. */
  checkRequest = ({ request }: Delivery): Ending | undefined => {
    const { method, headers } = request!;
    if (method !== undefined && method !== 'POST' && method.toUpperCase() !== 'POST') {
      return rejected(
        'method_not_allowed',
        `method ${String(method).slice(0, 16)} is not allowed; use POST`,
      );
    }
    const contentType = getHeader(headers, 'content-type');
    if (contentType !== undefined && !isJsonContentType(contentType)) {
      return rejected('unsupported_media_type', 'content-type must be application/json');
    }
    return undefined;
  };

  /**
   * Step 2, body: the raw bytes, read up to maxBodyBytes when the adapter gave a reader; 413
   * beyond it, 500 `body_unavailable` when a body parser took them, 400 when the client broke
   * the stream mid-body.
   */
  readBody = (delivery: Delivery): StepResult<Ending> => {
    const { headers, body } = delivery.request!;
    const { maxBodyBytes } = this.#config;
    if (typeof body !== 'function') return this.#useBody(delivery, body);
    // A body announced as too large is refused before any of it is read.
    if ((declaredLength(headers) ?? 0) > maxBodyBytes) return tooLarge(maxBodyBytes);
    // A reader that throws instead of rejecting is a stream that could not be read all the same.
    return andThen(
      () => (body as (limit: number) => Promise<unknown>)(maxBodyBytes),
      (read) => this.#useBody(delivery, read),
      unreadable,
    );
  };

  /** What an adapter gave or its reader read: the raw bytes, or why they cannot be used. */
  #useBody(delivery: Delivery, input: unknown): Ending | undefined {
    const body = rawBodyOf(input);
    if (body === undefined) {
      const fix = delivery.request!.rawBodyFix ?? ANY_FRAMEWORK_RAW_BODY_FIX;
      return new Ending(
        'body_unavailable',
        new ConfigError(
          `the raw request body is not available (a body parser consumed it): ${fix}`,
        ),
      );
    }
    const { maxBodyBytes } = this.#config;
    if (byteLength(body, maxBodyBytes) > maxBodyBytes) return tooLarge(maxBodyBytes);
    delivery.body = body;
    return undefined;
  }

  /** Step 3, verify: 401 unless the signature matches a secret; the body's fingerprint if it does. */
  verify = (delivery: Delivery): StepResult<Ending> =>
    andThen(
      () => this.#config.verification.verify(delivery.body, delivery.signature),
      (fingerprint) => {
        if (fingerprint === undefined) return signatureRefused(delivery.signature);
        delivery.fingerprint = fingerprint;
        return undefined;
      },
    );

  /** Step 4, parse: 400 unless the body is JSON with a valid envelope. */
  parse = (delivery: Delivery): Ending | undefined => {
    const parsed = parseEnvelope(delivery.body);
    if (!parsed.ok) return new Ending('malformed', new MalformedEnvelopeError(parsed.reason));
    delivery.parsed = parsed;
    delivery.key = parsed.envelope.idempotencyKey;
    return undefined;
  };

  /** Step 5, age: 422 `stale` for a timestamp older than maxEventAgeMs or too far ahead. */
  checkAge = ({ parsed: { envelope, timestampMs } }: Delivery): Ending | undefined => {
    if (isWithinAgeWindow(this.#config.now() - timestampMs, this.#config.maxEventAgeMs)) {
      return undefined;
    }
    return new Ending(
      'stale',
      new StaleEventError(
        `${envelope.event} timestamp ${envelope.timestamp} is outside the accepted window`,
        envelope.timestamp,
      ),
      envelope.event,
      envelope.idempotencyKey,
    );
  };

  /** Step 6, validate: 422 for a fixed-contract event whose `data` fails its schema. */
  validate = (delivery: Delivery): Ending | undefined => {
    const { envelope } = delivery.parsed;
    const event = envelope as unknown as WebhookEvent<string>;
    delivery.event = event;
    if (!isFixedContractEvent(envelope.event)) return undefined;
    const validation = validateEventData(
      envelope.event,
      envelope.data,
      this.#config.schemas?.[envelope.event],
    );
    if (!validation.ok) {
      return new Ending(
        'invalid_payload',
        new PayloadValidationError(envelope.event, validation.issues),
        envelope.event,
        envelope.idempotencyKey,
      );
    }
    if (validation.data !== envelope.data) {
      // A cast of a name, not of the literal: Stryker plants no mutant inside an `as` expression.
      const withData = { ...envelope, data: validation.data };
      delivery.event = withData as WebhookEvent<string>;
    }
    return undefined;
  };

  /**
   * Step 7, claim: the claimed key (its lease token, and a transaction if the store opened one),
   * or the ending of a key already taken: 200 `duplicate` (done
   * with this body), 409 `conflict` (done with another body), 409 `in_flight`, 503 when the
   * store fails.
   */
  claim = (delivery: Delivery): StepResult<Ending> => {
    const { store, leaseMs } = this.#config;
    return andThen(
      () => store.claim(delivery.key, leaseMs),
      (claimed) => this.#claimed(claimed, delivery),
      (cause) => storeUnavailable(cause, delivery.parsed.envelope),
    );
  };

  #claimed(claim: ClaimResult, delivery: Delivery): StepResult<Ending> {
    if (claim.state === 'claimed') {
      delivery.token = claim.token;
      delivery.transaction = claim.transaction;
      return undefined;
    }
    const { event, idempotencyKey } = delivery.parsed.envelope;
    if (claim.state === 'in_flight')
      return new Ending('in_flight', undefined, event, idempotencyKey);
    const duplicate = new Ending('duplicate', undefined, event, idempotencyKey);
    if (claim.fingerprint === undefined || claim.fingerprint === delivery.fingerprint) {
      return duplicate;
    }
    const conflict = new Ending(
      'conflict',
      new IdempotencyConflictError(idempotencyKey),
      event,
      idempotencyKey,
    );
    // Remembered under another secret (the list was reordered since, as in a rotation)?
    return andThen(
      () => this.#config.verification.otherFingerprints(delivery.body),
      (others) => (others.includes(claim.fingerprint!) ? duplicate : conflict),
    );
  }

  /**
   * Step 8, dispatch: run the handlers (every one at once) against handlerTimeoutMs. 200
   * `processed` (the key completed), `ignored` when none is registered, 500 `handler_failed`
   * (the key released for a retry), 503 `timeout` (they go on; their end completes or releases).
   * With a claim's transaction, the handlers write through it (`ctx.transaction`): completing
   * commits it, so a completion that fails is 503 `store_unavailable`, and a timeout abandons it.
   */
  dispatch = (delivery: Delivery): MaybePromise<Ending> => {
    const { event, key, token, transaction, fingerprint, attempt, observation } = delivery;
    const { event: name, idempotencyKey } = event;
    const handlers = this.#config.handlersOf(name);
    if (handlers.length === 0) {
      return this.#completeThen(
        key,
        token,
        fingerprint,
        new Ending('ignored', undefined, name, idempotencyKey),
      );
    }
    const { handlerDeadlines } = this.#config;
    const startedAt = observation ? performance.now() : 0;
    const client = transaction?.client;
    const ran = observation
      ? observation.runHandlers(() =>
          runHandlers(handlers, event, handlerDeadlines, attempt, client),
        )
      : runHandlers(handlers, event, handlerDeadlines, attempt, client);
    const settle = (settled: HandlersSettled): MaybePromise<Ending> => {
      observation?.handlersEnded({
        result: settled.ok ? 'succeeded' : 'failed',
        timedOut: false,
        durationMs: performance.now() - startedAt,
      });
      if (settled.ok) {
        const processed = new Ending('processed', undefined, name, idempotencyKey);
        return transaction
          ? this.#commitThen(key, token, fingerprint, processed)
          : this.#completeThen(key, token, fingerprint, processed);
      }
      return this.#releaseThen(
        key,
        token,
        new Ending(
          'handler_failed',
          new HandlerError(name, idempotencyKey, settled.error, this.#config.secrets),
          name,
          idempotencyKey,
        ),
      );
    };
    if (!isPromiseLike(ran)) return settle(ran);
    return ran.then((first) => {
      if (!('later' in first)) return settle(first);
      // Their transaction ends now, rolled back: nothing they write from here on commits.
      transaction?.abandon();
      // They go on: success completes the key, failure releases it for the next retry.
      void first.later.then((settled) => {
        observation?.handlersEnded({
          result: settled.ok ? 'succeeded' : 'failed',
          timedOut: true,
          durationMs: performance.now() - startedAt,
        });
        if (settled.ok) return this.complete(key, token, fingerprint);
        this.#config.reportError(
          new HandlerError(name, idempotencyKey, settled.error, this.#config.secrets),
        );
        return this.release(key, token);
      });
      return new Ending(
        'timeout',
        new HandlerTimeoutError(name, idempotencyKey, this.#config.handlerTimeoutMs),
        name,
        idempotencyKey,
      );
    });
  };

  /**
   * Step 8 with an inbox, hand off: store the raw body (its text, which gives back its bytes
   * exactly) and its signature in the inbox, then complete the key: 202 `queued`. When the
   * inbox fails, the key is released: 503.
   */
  handOff = (delivery: Delivery): MaybePromise<Ending> => {
    const { parsed, token, fingerprint, observation } = delivery;
    const { envelope, text } = parsed;
    const { event, idempotencyKey } = envelope;
    const stored: StoredDelivery = {
      body: text,
      signature: delivery.signature!,
      event,
      idempotencyKey,
      receivedAt: new Date(this.#config.now()).toISOString(),
    };
    const trace = observation === undefined ? undefined : carrierOf(observation);
    if (trace !== undefined) stored.trace = trace;
    const inbox = this.#config.inbox!;
    return andThen(
      () => inbox.enqueue(stored),
      () =>
        this.#completeThen(
          idempotencyKey,
          token,
          fingerprint,
          new Ending('queued', undefined, event, idempotencyKey),
        ),
      (cause: unknown) =>
        this.#releaseThen(
          idempotencyKey,
          token,
          new Ending(
            'inbox_unavailable',
            new InboxUnavailableError('the inbox failed to store the delivery', { cause }),
            event,
            idempotencyKey,
          ),
        ),
    );
  };

  #completeThen(
    key: string,
    token: string,
    fingerprint: Fingerprint,
    ending: Ending,
  ): MaybePromise<Ending> {
    return andThen(
      () => this.complete(key, token, fingerprint),
      () => ending,
    );
  }

  /**
   * Complete a key whose claim holds the handlers' transaction: the completion is their commit,
   * so unlike {@link complete} a failure is not acknowledged but answered 503 for a retry.
   */
  #commitThen(
    key: string,
    token: string,
    fingerprint: Fingerprint,
    ending: Ending,
  ): MaybePromise<Ending> {
    const { store, dedupTtlMs } = this.#config;
    return andThen(
      () => store.complete(key, token, dedupTtlMs, fingerprint),
      () => ending,
      (cause: unknown) =>
        new Ending(
          'store_unavailable',
          new StoreUnavailableError(
            "the idempotency store failed to commit the handlers' transaction",
            { cause },
          ),
          ending.event,
          ending.idempotencyKey,
        ),
    );
  }

  #releaseThen(key: string, token: string, ending: Ending): MaybePromise<Ending> {
    return andThen(
      () => this.release(key, token),
      () => ending,
    );
  }

  /**
   * Mark the key done; at once on a store that answers at once. A failure is reported, never
   * thrown: the handlers succeeded, so the delivery is still acknowledged.
   */
  complete(key: string, token: string, fingerprint: Fingerprint): MaybePromise<void> {
    const { store, dedupTtlMs } = this.#config;
    return andThen(
      () => store.complete(key, token, dedupTtlMs, fingerprint),
      () => undefined,
      this.#completeFailed,
    );
  }

  #completeFailed = (cause: unknown): undefined => {
    this.#config.reportError(
      new StoreUnavailableError('the idempotency store failed to record completion', { cause }),
    );
    return undefined;
  };

  /** Give the key back; at once on a store that answers at once. */
  release(key: string, token: string): MaybePromise<void> {
    return andThen(
      () => this.#config.store.release(key, token),
      () => undefined,
      this.#releaseFailed,
    );
  }

  #releaseFailed = (cause: unknown): undefined => {
    // The lease still runs out by itself, so the next retry gets the key after leaseMs.
    this.#config.reportError(
      new StoreUnavailableError('the idempotency store failed to release the key', { cause }),
    );
    return undefined;
  };
}

/**
 * Whether an event `ageMs` old (negative: stamped in the future) is accepted: no older than
 * maxEventAgeMs, and no further ahead than the clock skew allowed.
 * @internal also the age check of bench/same-work.ts.
 */
export function isWithinAgeWindow(ageMs: number, maxEventAgeMs: number): boolean {
  return ageMs <= maxEventAgeMs && ageMs >= -RECEIVER_DEFAULTS.futureSkewMs;
}

/** A stored run's step: the delivery's own key was completed when it was stored; its run holds a key of its own. */
function useRunKey(delivery: Delivery): undefined {
  delivery.key = runKeyOf(delivery.key);
  return undefined;
}

/** The client went away or broke the stream mid-body. */
function unreadable(cause: unknown): Ending {
  // A reader that knows what is wrong with the bytes says so (Lambda: a body flagged base64 that is not).
  const error =
    cause instanceof MalformedEnvelopeError
      ? cause
      : new MalformedEnvelopeError('the request body could not be read', { cause });
  return new Ending('malformed', error);
}

/** The observation's trace context, or none if the observer fails: it never costs a delivery. */
function carrierOf(observation: DeliveryObservation): TraceCarrier | undefined {
  try {
    return observation.carrier();
  } catch {
    return undefined;
  }
}

/** The answer of the verify step to a signature that failed, saying why (off the hot path). */
function signatureRefused(signature: string | undefined): Ending {
  return new Ending('invalid_signature', new SignatureError(signatureFailureOf(signature)));
}

function rejected(outcome: RequestRejectedError['outcome'], message: string): Ending {
  return new Ending(outcome, new RequestRejectedError(outcome, message));
}

function tooLarge(maxBodyBytes: number): Ending {
  return rejected('too_large', `body exceeds maxBodyBytes (${maxBodyBytes})`);
}

function storeUnavailable(
  cause: unknown,
  { event, idempotencyKey }: { event: string; idempotencyKey: string },
): Ending {
  return new Ending(
    'store_unavailable',
    new StoreUnavailableError('the idempotency store failed to claim the key', { cause }),
    event,
    idempotencyKey,
  );
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
