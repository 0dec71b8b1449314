/**
 * The receiver: verify, parse, validate, deduplicate and dispatch one delivery, and say which
 * HTTP status answers it (docs/receiving.md); with an inbox, store it and let workers run
 * the handlers (docs/inbox.md). The steps themselves are in `pipeline.ts`.
 * @module
 */

import type { BodyReader } from './body.js';
import { DeadlineQueue } from './deadlines.js';
import { consoleLogger } from './console-logger.js';
import {
  causeMessageOf,
  ConfigError,
  SignatureError,
  StoreUnavailableError,
  type SchoolhooksError,
} from './errors.js';
import type { z } from 'zod';
import {
  isKnownEvent,
  KNOWN_EVENTS,
  type FixedEventName,
  type KnownEventName,
  type WebhookEvent,
} from './events/index.js';
import { getHeader, type HeadersInput } from './headers.js';
import type { Inbox, StoredDelivery, StoredRunOptions, StoredRunResult } from './inbox/types.js';
import { OUTCOMES, type Outcome } from './outcome.js';
import { fromBase64 } from './base64.js';
import { RECEIVER_DEFAULTS } from './defaults.js';
import { Delivery, DeliveryPipeline, Ending, type PipelineConfig } from './pipeline.js';
import type { AnyHandler, HandlerContext } from './run-handlers.js';
import { nearestName } from './nearest-name.js';
import { isPromiseLike, runSteps } from './run-steps.js';
import {
  createVerifier,
  paddedSecrets,
  secretsOf,
  type RawBody,
  type Verification,
} from './signature.js';
import { memoryStore } from './stores/memory.js';
import type { IdempotencyStore } from './stores/types.js';
import type { DeliveryObservation, Telemetry, TelemetryStart } from './telemetry.js';

/** A pino-compatible logger. It is never given a secret, a signature, a body or a token. */
export interface Logger {
  /** Detail for debugging: a delivery's steps. */
  debug(obj: Record<string, unknown>, msg?: string): void;
  /** What went as it should. */
  info(obj: Record<string, unknown>, msg?: string): void;
  /** A refused delivery or a failure the platform's retry may mend. */
  warn(obj: Record<string, unknown>, msg?: string): void;
  /** A failure that needs a person: a handler, a store or a setup mistake. */
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
  /**
   * Where the receiver logs what happened to each delivery. Default: the console, `warn` and
   * `error` lines only (`console.warn`, `console.error`), one per failure. `false`: nowhere.
   */
  logger?: Logger | false;
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
  /**
   * How to keep the raw body on the caller's framework, as a sentence: the fix the `ConfigError`
   * of a `body_unavailable` answer names. Each adapter gives its own (`defineAdapter`'s
   * `rawBodyFix`); without it the error gives the advice that holds on any framework.
   */
  rawBodyFix?: string | undefined;
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
  /**
   * Handle one event name, or each of a list: the names this version knows only, so a misspelt
   * one is a compile error, and a `ConfigError` (naming the nearest known name) at run time.
   */
  on<N extends KnownEventName>(name: N | readonly N[], handler: EventHandler<N>): Receiver;
  /**
   * Handle every verified event, known or not: the one place for names this version does not
   * know yet (there `event.event` is any string and `event.data` a plain record).
   */
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

/** What telemetry is told when an HTTP delivery starts (one object for every delivery). */
const DELIVERY: TelemetryStart = { kind: 'delivery' };

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
export function createReceiver(options: ReceiverOptions): Receiver {
  const settings = checkOptions(options);
  const { maxBodyBytes, inbox } = settings;
  const registry = handlerRegistry();
  const errors = errorReporter(settings);
  const steps = pipelineOf(settings, registry.handlersOf, errors.report);
  const ending = deliveryEnding(settings, errors);
  const httpSteps = inbox === undefined ? steps.dispatchNow : steps.handToInbox;

  async function handle(request: WebhookRequest): Promise<WebhookResult> {
    const observation = ending.observe(DELIVERY);
    const startedAt = observation ? performance.now() : 0;
    const signature = getHeader(request.headers, 'signature');
    let ended: Ending;
    try {
      ended = await runSteps(httpSteps, new Delivery(request, signature, 1, observation));
    } catch (cause) {
      // Only a faulty store, inbox or logger can get here; the delivery is retried later.
      ended = new Ending(
        'store_unavailable',
        new StoreUnavailableError('the receiver failed unexpectedly', { cause }),
      );
    }
    ending.finish(ended, observation, startedAt);
    return answer(ended.outcome, ended.idempotencyKey);
  }

  async function processStored(
    stored: StoredDelivery,
    { attempt }: StoredRunOptions,
  ): Promise<StoredRunResult> {
    const observation = ending.observe({ kind: 'job', attempt, link: stored.trace });
    const startedAt = observation ? performance.now() : 0;
    const delivery = new Delivery(undefined, stored.signature, attempt, observation);
    delivery.body = stored.encoding === 'base64' ? fromBase64(stored.body) : stored.body;
    let ended: Ending;
    try {
      ended = await runSteps(steps.runStored, delivery);
    } catch (cause) {
      ended = new Ending(
        'store_unavailable',
        new StoreUnavailableError('the worker failed unexpectedly', { cause }),
        stored.event,
        stored.idempotencyKey,
      );
    }
    ending.finish(ended, observation, startedAt, attempt);
    return runResultOf(ended, settings.secrets);
  }

  const receiver: Receiver = {
    on<N extends KnownEventName>(name: N | readonly N[], handler: EventHandler<N>): Receiver {
      const names: readonly string[] = Array.isArray(name) ? name : [name as string];
      // Checked before any is registered: a misspelt name would answer every real event
      // `200 ignored`, which the platform never sends again.
      names.forEach(assertKnownEvent);
      registry.on(names, handler as unknown as AnyHandler);
      return receiver;
    },
    onAny(handler: EventHandler): Receiver {
      registry.onAny(handler as unknown as AnyHandler);
      return receiver;
    },
    onError(handler: ErrorHandler): Receiver {
      errors.handlers.push(handler);
      return receiver;
    },
    handle,
    processStored,
    maxBodyBytes,
    inbox,
  };
  return receiver;
}

/**
 * The steps of a receiver with `settings`, its handlers and its failure reporting.
 * @internal also what bench/fetch-steps.ts cuts short, step by step.
 */
export function pipelineOf(
  settings: ReceiverSettings,
  handlersOf: PipelineConfig['handlersOf'],
  reportError: PipelineConfig['reportError'],
): DeliveryPipeline {
  return new DeliveryPipeline({
    ...settings,
    // One timer for every delivery whose handlers are still running: they share handlerTimeoutMs.
    handlerDeadlines: new DeadlineQueue(settings.handlerTimeoutMs),
    handlersOf,
    reportError,
  });
}

/** A receiver's options with their defaults, checked. */
type ReceiverSettings = ReturnType<typeof checkOptions>;

/**
 * The options with their defaults, checked: a mistake is a `ConfigError` at start-up.
 * @internal also what bench/fetch-steps.ts builds its cut-short pipelines with.
 */
export function checkOptions({
  secret,
  store = memoryStore(),
  maxBodyBytes = RECEIVER_DEFAULTS.maxBodyBytes,
  maxEventAgeMs = RECEIVER_DEFAULTS.maxEventAgeMs,
  dedupTtlMs = RECEIVER_DEFAULTS.dedupTtlMs,
  leaseMs = RECEIVER_DEFAULTS.leaseMs,
  handlerTimeoutMs = RECEIVER_DEFAULTS.handlerTimeoutMs,
  logger,
  now = Date.now,
  inbox,
  telemetry,
  schemas,
}: ReceiverOptions) {
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
  // Checked once, here: the ConfigError it throws names a secret by its place, never by its value.
  const secrets: readonly string[] = secretsOf(secret);
  const verification: Verification = createVerifier(secrets);
  // Failures are never silent: without a logger they reach the console.
  const log = logger === false ? undefined : (logger ?? consoleLogger);
  for (const place of paddedSecrets(secrets)) {
    const which = typeof secret === 'string' ? 'the secret' : `secret #${place} of the list`;
    log?.warn(
      {},
      `${which} has spaces or a line break around it; it is used exactly as given, so ` +
        'signatures made with the key as shown fail (401): trim it if that was a copy-paste slip',
    );
  }
  return {
    verification,
    secrets,
    store,
    maxBodyBytes,
    maxEventAgeMs,
    dedupTtlMs,
    leaseMs,
    handlerTimeoutMs,
    log,
    // The console takes warn and error lines only: no line object is built for the others.
    logs: {
      debug: log !== undefined && log !== consoleLogger,
      info: log !== undefined && log !== consoleLogger,
      warn: log !== undefined,
      error: log !== undefined,
    } satisfies Record<keyof Logger, boolean>,
    now,
    inbox,
    telemetry,
    schemas,
  };
}

/** The handlers registered with `on()` and `onAny()`, by event name. */
function handlerRegistry() {
  const named = new Map<string, AnyHandler[]>();
  const any: AnyHandler[] = [];
  return {
    on(names: readonly string[], handler: AnyHandler): void {
      for (const name of names) {
        const list = named.get(name) ?? [];
        list.push(handler);
        named.set(name, list);
      }
    },
    onAny(handler: AnyHandler): void {
      any.push(handler);
    },
    /** The handlers of an event name, `onAny`'s included; empty when there are none. */
    handlersOf(event: string): readonly AnyHandler[] {
      const handlers = named.get(event);
      if (handlers === undefined) return any;
      return any.length === 0 ? handlers : [...handlers, ...any];
    },
  };
}

/** What the receiver logs with, once its options are checked. */
interface Logging {
  /** The logger, the console's by default; none with `logger: false`. */
  log: Logger | undefined;
  /** Which levels reach it: a line object is built for those only. */
  logs: Record<keyof Logger, boolean>;
  secrets: readonly string[];
}

/** `onError`'s handlers, and the one way a failure is told to them. */
function errorReporter({ log, secrets }: Logging) {
  const handlers: ErrorHandler[] = [];
  const logOnErrorFailure = (thrown: unknown): void => {
    log?.error({ err: causeMessageOf(thrown, secrets) }, 'onError handler threw');
  };
  /** Tell every `onError` handler; what one throws is logged, never rethrown. */
  const tell = (error: SchoolhooksError): void => {
    for (const handler of handlers) {
      try {
        const result = handler(error);
        if (isPromiseLike(result)) result.then(undefined, logOnErrorFailure);
      } catch (thrown) {
        logOnErrorFailure(thrown);
      }
    }
  };
  return {
    handlers,
    tell,
    /** A failure outside a delivery's ending: to `onError`, or to the log when none listens. */
    report(error: SchoolhooksError): void {
      if (handlers.length === 0) {
        log?.warn({ code: error.code, err: error.message }, 'webhook failure');
        return;
      }
      tell(error);
    },
  };
}

/** How a delivery or a run ends: observed, reported, logged. */
function deliveryEnding(
  { log, logs, secrets, telemetry }: Logging & { telemetry: Telemetry | undefined },
  errors: { handlers: readonly ErrorHandler[]; tell: (error: SchoolhooksError) => void },
) {
  return {
    /** The observation of a delivery or a run; none if the observer fails (it never costs one). */
    observe(start: TelemetryStart): DeliveryObservation | undefined {
      if (telemetry === undefined) return undefined;
      try {
        return telemetry.start(start);
      } catch (thrown) {
        log?.error({ err: causeMessageOf(thrown, secrets) }, 'telemetry.start threw');
        return undefined;
      }
    },

    /** Report, log and observe how a delivery ended; a logger or observer that throws is ignored. */
    finish(
      ending: Ending,
      observation: DeliveryObservation | undefined,
      startedAt: number,
      attempt?: number,
    ): void {
      const { outcome, error, event, idempotencyKey } = ending;
      try {
        let level = OUTCOMES[outcome].logLevel;
        // A failure no onError is told of goes on the outcome's own line, at warn at least:
        // one line per failure, which reaches the console when there is no logger.
        const untold = error !== undefined && errors.handlers.length === 0;
        if (error !== undefined && !untold) errors.tell(error);
        if (untold && (level === 'debug' || level === 'info')) level = 'warn';
        if (logs[level]) {
          const fields: Record<string, unknown> = { outcome };
          if (event !== undefined) fields['event'] = event;
          if (idempotencyKey !== undefined) fields['idempotencyKey'] = idempotencyKey;
          if (attempt !== undefined) fields['attempt'] = attempt;
          if (untold) {
            fields['code'] = error.code;
            fields['err'] = error.message;
          }
          log![level](fields, `webhook ${outcome.replaceAll('_', ' ')}`);
        }
        observation?.end({
          kind: attempt === undefined ? 'delivery' : 'job',
          outcome,
          status: OUTCOMES[outcome].status,
          event,
          idempotencyKey,
          attempt,
          durationMs: performance.now() - startedAt,
          signatureReason: error instanceof SignatureError ? error.reason : undefined,
        });
      } catch {
        // A logger or an observer that throws must not turn the answer into a crash.
      }
    },
  };
}

/**
 * The status and JSON body that answer an outcome.
 * @internal also how bench/same-work.ts answers.
 */
export function answer(outcome: Outcome, idempotencyKey: string | undefined): WebhookResult {
  const { status, success } = OUTCOMES[outcome];
  const body: WebhookResponseBody = { ok: success, outcome };
  if (idempotencyKey !== undefined) body.idempotencyKey = idempotencyKey;
  return { status, outcome, body };
}

/** What a stored run came to, for the inbox: done, retry later, or a dead letter now. */
function runResultOf({ outcome, error }: Ending, secrets: readonly string[]): StoredRunResult {
  const { run } = OUTCOMES[outcome];
  if (run === 'succeeded') return { outcome, ok: true, retry: false };
  const result: StoredRunResult = { outcome, ok: false, retry: run === 'retry' };
  result.reason = `${outcome}: ${reasonOf(error, outcome, secrets)}`;
  return result;
}

/** The message a dead letter keeps: the handler's own error, or ours. */
function reasonOf(
  error: SchoolhooksError | undefined,
  outcome: Outcome,
  secrets: readonly string[],
): string {
  if (error === undefined) {
    return outcome === 'in_flight' ? 'another worker is running this event' : outcome;
  }
  // As the HandlerError's own message says it: one line, bounded, no secret of ours in it.
  if (error.code === 'handler_failed' && error.cause !== undefined) {
    return causeMessageOf(error.cause, secrets);
  }
  return error.message;
}

/** Refuse a name this version does not know, naming the nearest known one. */
function assertKnownEvent(name: unknown): void {
  if (typeof name === 'string' && isKnownEvent(name)) return;
  const text = typeof name === 'string' ? `'${name.slice(0, 100)}'` : typeof name;
  const near = typeof name === 'string' ? nearestName(name, KNOWN_EVENTS) : undefined;
  throw new ConfigError(
    `unknown event ${text}${near === undefined ? '.' : `; did you mean '${near}'?`} ` +
      'Events this version does not know reach onAny',
  );
}
