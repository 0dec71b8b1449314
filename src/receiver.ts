/**
 * The receiver: verify, parse, validate, deduplicate and dispatch one delivery, and say which
 * HTTP status answers it (DESIGN section 3); with an inbox, store it and let workers run the
 * handlers (section 4b). The steps themselves are in `pipeline.ts`.
 * @module
 */

import type { BodyReader } from './body.js';
import { DeadlineQueue } from './deadlines.js';
import { ConfigError, StoreUnavailableError, type SchoolhooksError } from './errors.js';
import type { z } from 'zod';
import type { FixedEventName, KnownEventName, WebhookEvent } from './events/index.js';
import { getHeader, type HeadersInput } from './headers.js';
import type { Inbox, StoredDelivery, StoredRunOptions, StoredRunResult } from './inbox/types.js';
import { OUTCOMES, type Outcome } from './outcome.js';
import { fromBase64 } from './base64.js';
import { DeliveryPipeline, Ending, runKeyOf, type PipelineRequest } from './pipeline.js';
import { isPromiseLike, type AnyHandler, type HandlerContext } from './run-handlers.js';
import { createVerifier, type RawBody, type Verification } from './signature.js';
import { memoryStore, syncFaceOf } from './stores/memory.js';
import type { IdempotencyStore } from './stores/types.js';
import type { DeliveryObservation, Telemetry, TelemetryStart } from './telemetry.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** A pino-compatible logger. It is never given a secret, a signature, a body or a token. */
export interface Logger {
  debug(obj: Record<string, unknown>, msg?: string): void;
  info(obj: Record<string, unknown>, msg?: string): void;
  warn(obj: Record<string, unknown>, msg?: string): void;
  error(obj: Record<string, unknown>, msg?: string): void;
}

/** Any event name: the known ones autocomplete, any other string is accepted too. */
export type EventName = KnownEventName | (string & {});

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
  /**
   * Store each verified delivery here and answer 202 `queued`; workers run the handlers later
   * (`inbox.work(receiver)`). Default: none, the handlers run before the answer.
   */
  inbox?: Inbox;
  /** Told of every delivery and every inbox run (`openTelemetry()` from `schoolhooks/otel`). */
  telemetry?: Telemetry;
  /**
   * Replace the schema of some fixed-contract events, e.g. to accept a payload the bundled
   * schema refuses until an upgrade of schoolhooks reads it (then replay the inbox's dead
   * letters). Handlers keep the bundled types. Default: the bundled schemas.
   */
  schemas?: Partial<Record<FixedEventName, z.ZodType>>;
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
  /**
   * Run the handlers of a delivery an inbox stored: verify it again, parse, validate, claim its
   * run in the store (so two workers never run one event at once, and a processed one never
   * again), dispatch with `ctx.attempt`. Inbox workers call it; never throws.
   */
  processStored(delivery: StoredDelivery, options: StoredRunOptions): Promise<StoredRunResult>;
  /** The largest body accepted, for adapters to stop reading at the limit. */
  readonly maxBodyBytes: number;
  /** The inbox deliveries are handed to, if any. */
  readonly inbox: Inbox | undefined;
}

const DELIVERY = { kind: 'delivery' } as const;

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
  inbox,
  telemetry,
  schemas,
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
  if (inbox !== undefined && typeof inbox.enqueue !== 'function') {
    throw new ConfigError('inbox must have an enqueue(delivery) method');
  }
  let verification: Verification;
  try {
    verification = createVerifier(secret);
  } catch {
    throw new ConfigError('secret must be a non-empty string or a non-empty list of them');
  }

  const handlers = new Map<string, AnyHandler[]>();
  const anyHandlers: AnyHandler[] = [];
  const errorHandlers: ErrorHandler[] = [];

  function handlersOf(event: string): readonly AnyHandler[] {
    const named = handlers.get(event);
    if (named === undefined) return anyHandlers;
    return anyHandlers.length === 0 ? named : [...named, ...anyHandlers];
  }

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

  const steps = new DeliveryPipeline({
    verification,
    store,
    // memoryStore's operations without a promise each: most deliveries then finish in one turn.
    syncStore: syncFaceOf(store),
    schemas,
    maxBodyBytes,
    maxEventAgeMs,
    dedupTtlMs,
    leaseMs,
    handlerTimeoutMs,
    // One timer for every delivery whose handlers are still running: they share handlerTimeoutMs.
    handlerDeadlines: new DeadlineQueue(handlerTimeoutMs),
    now,
    handlersOf,
    reportError,
  });

  /** The steps of one HTTP delivery, in order; the first ending ends it. */
  async function deliver(
    request: PipelineRequest,
    observation: DeliveryObservation | undefined,
  ): Promise<Ending> {
    const refused = steps.checkRequest(request);
    if (refused) return refused;
    let body = steps.readBody(request);
    if (isPromiseLike(body)) {
      try {
        body = steps.checkBody(await body);
      } catch (cause) {
        body = steps.unreadable(cause);
      }
    }
    if (body instanceof Ending) return body;
    const signature = getHeader(request.headers, 'signature');
    let fingerprint = steps.verify(body, signature);
    if (isPromiseLike(fingerprint)) fingerprint = await fingerprint;
    if (fingerprint instanceof Ending) return fingerprint;
    const parsed = steps.parse(body);
    if (parsed instanceof Ending) return parsed;
    const stale = steps.checkAge(parsed);
    if (stale) return stale;
    const { envelope } = parsed;
    const key = envelope.idempotencyKey;

    if (inbox !== undefined) {
      // Hand off: claim, store in the inbox, complete; workers validate and dispatch later.
      let token = steps.claim(key, body, fingerprint, envelope);
      if (isPromiseLike(token)) token = await token;
      if (token instanceof Ending) return token;
      // Awaited rather than returned: an async function that returns a promise pays two more turns.
      return await steps.handOff(parsed, body, signature!, token, fingerprint, inbox, observation);
    }
    // Or dispatch now: validate, claim, run the handlers.
    const event = steps.validate(parsed);
    if (event instanceof Ending) return event;
    let token = steps.claim(key, body, fingerprint, envelope);
    if (isPromiseLike(token)) token = await token;
    if (token instanceof Ending) return token;
    const ended = steps.dispatch(event, key, token, fingerprint, 1, observation);
    return isPromiseLike(ended) ? await ended : ended;
  }

  /** The steps of a worker's run of a stored delivery: no age check (retries go on for days). */
  async function run(
    stored: StoredDelivery,
    attempt: number,
    observation: DeliveryObservation | undefined,
  ): Promise<Ending> {
    const body = stored.encoding === 'base64' ? fromBase64(stored.body) : stored.body;
    let fingerprint = steps.verify(body, stored.signature);
    if (isPromiseLike(fingerprint)) fingerprint = await fingerprint;
    if (fingerprint instanceof Ending) return fingerprint;
    const parsed = steps.parse(body);
    if (parsed instanceof Ending) return parsed;
    const event = steps.validate(parsed);
    if (event instanceof Ending) return event;
    // The delivery's own key was completed when it was stored; its run holds a key of its own.
    const key = runKeyOf(parsed.envelope.idempotencyKey);
    let token = steps.claim(key, body, fingerprint, parsed.envelope);
    if (isPromiseLike(token)) token = await token;
    if (token instanceof Ending) return token;
    const ended = steps.dispatch(event, key, token, fingerprint, attempt, observation);
    return isPromiseLike(ended) ? await ended : ended;
  }

  /** Report, log and observe how a delivery ended. */
  function finish(
    ending: Ending,
    observation: DeliveryObservation | undefined,
    startedAt: number,
    attempt?: number,
  ): void {
    const { outcome, error, event, idempotencyKey } = ending;
    if (error !== undefined) reportError(error);
    if (logger !== undefined) {
      const fields: Record<string, unknown> = { outcome };
      if (event !== undefined) fields['event'] = event;
      if (idempotencyKey !== undefined) fields['idempotencyKey'] = idempotencyKey;
      if (attempt !== undefined) fields['attempt'] = attempt;
      logger[OUTCOMES[outcome].logLevel](fields, `webhook ${outcome.replaceAll('_', ' ')}`);
    }
    observation?.end({
      kind: attempt === undefined ? 'delivery' : 'job',
      outcome,
      status: OUTCOMES[outcome].status,
      event,
      idempotencyKey,
      attempt,
      durationMs: performance.now() - startedAt,
    });
  }

  /** The observation of a delivery or a run; none if the observer fails (it never costs one). */
  function observe(start: TelemetryStart): DeliveryObservation | undefined {
    try {
      return telemetry!.start(start);
    } catch (thrown) {
      logger?.error(
        { err: thrown instanceof Error ? thrown.message : String(thrown) },
        'telemetry.start threw',
      );
      return undefined;
    }
  }

  async function handle(request: WebhookRequest): Promise<WebhookResult> {
    const observation = telemetry && observe(DELIVERY);
    const startedAt = observation ? performance.now() : 0;
    let ending: Ending;
    try {
      ending = await deliver(request, observation);
    } catch (cause) {
      // Only a faulty store, inbox or logger can get here; the delivery is retried later.
      ending = new Ending(
        'store_unavailable',
        new StoreUnavailableError('the receiver failed unexpectedly', { cause }),
      );
    }
    try {
      finish(ending, observation, startedAt);
    } catch {
      // A logger or an observer that throws must not turn the answer into a crash.
    }
    return answer(ending.outcome, ending.idempotencyKey);
  }

  async function processStored(
    stored: StoredDelivery,
    { attempt }: StoredRunOptions,
  ): Promise<StoredRunResult> {
    const observation = telemetry && observe({ kind: 'job', attempt, link: stored.trace });
    const startedAt = observation ? performance.now() : 0;
    let ending: Ending;
    try {
      ending = await run(stored, attempt, observation);
    } catch (cause) {
      ending = new Ending(
        'store_unavailable',
        new StoreUnavailableError('the worker failed unexpectedly', { cause }),
        stored.event,
        stored.idempotencyKey,
      );
    }
    try {
      finish(ending, observation, startedAt, attempt);
    } catch {
      // As in handle(): never let a logger or an observer fail the run.
    }
    return runResultOf(ending);
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
    processStored,
    maxBodyBytes,
    inbox,
  };
  return receiver;
}

/** The status and JSON body that answer an outcome. */
function answer(outcome: Outcome, idempotencyKey: string | undefined): WebhookResult {
  const { status, success } = OUTCOMES[outcome];
  const body: WebhookResponseBody = { ok: success, outcome };
  if (idempotencyKey !== undefined) body.idempotencyKey = idempotencyKey;
  return { status, outcome, body };
}

/** What a stored run came to, for the inbox: done, retry later, or a dead letter now. */
function runResultOf({ outcome, error }: Ending): StoredRunResult {
  const { run } = OUTCOMES[outcome];
  if (run === 'succeeded') return { outcome, ok: true, retry: false };
  const result: StoredRunResult = { outcome, ok: false, retry: run === 'retry' };
  result.reason = `${outcome}: ${reasonOf(error, outcome)}`;
  return result;
}

/** The message a dead letter keeps: the handler's own error, or ours. */
function reasonOf(error: SchoolhooksError | undefined, outcome: Outcome): string {
  if (error === undefined) {
    return outcome === 'in_flight' ? 'another worker is running this event' : outcome;
  }
  if (error.code === 'handler_failed' && error.cause instanceof Error) return error.cause.message;
  return error.message;
}
