/**
 * The receiver's public API: `createReceiver`, and `on`, `onAny`, `onError`, `handle` and
 * `processStored` on what it returns (docs/receiving.md; with an inbox, docs/inbox.md). It holds the handler registry
 * (`HandlerRegistry`, at the end); its other parts, each in its module: the settings
 * (receiver-settings.ts), the steps of a delivery (pipeline.ts), and what an outcome is answered
 * with and how failures are told and logged (delivery-outcome.ts).
 * @module
 */

import {
  answer,
  DeliveryOutcome,
  Reporting,
  runResultOf,
  type ErrorHandler,
  type WebhookResult,
} from './delivery-outcome.js';
import { fromBase64 } from '../utils/base64.js';
import { type BodyReader, getHeader, type HeadersInput } from './request.js';
import { ConfigError, StoreUnavailableError, withCauses } from '../errors.js';
import { hasEntity, type EntityEventName } from '../platform/entity-of.js';
import {
  isKnownEvent,
  KNOWN_EVENTS,
  type KnownEventName,
  type WebhookEvent,
} from '../platform/events/index.js';
import { nearestName } from '../utils/nearest-name.js';
import type { Inbox, StoredDelivery, StoredRunOptions, StoredRunResult } from '../inbox/types.js';
import { DeliveryPipeline, type Arrival } from './pipeline.js';
import { checkOptions, type ReceiverOptions } from './receiver-settings.js';
import type { AnyHandler, HandlerContext } from './run-handlers.js';
import type { RawBody } from '../platform/signature.js';
import type { IdempotencyStore } from '../stores/types.js';
import { ANSWER_NOTES, AnswerNotes, type WatchCall } from '../watchdog/answer-notes.js';
import { OUTCOMES } from './outcome.js';
import type { DeliveryObservation, TelemetryStart } from '../telemetry/telemetry.js';

export type { WebhookResponseBody, WebhookResult } from './delivery-outcome.js';
export type { Logger, ReceiverOptions } from './receiver-settings.js';
export type { ErrorHandler } from './delivery-outcome.js';

/** Any event name: the known ones autocomplete, any other string is accepted too. */
export type EventName = KnownEventName | (string & {});

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
  /**
   * The tenant the route names, when one endpoint serves many schools (docs/tenants.md): its
   * secrets verify the delivery (with a secret lookup, a request without one is answered 404),
   * its keys are apart from every other tenant's, and handlers see it as `ctx.tenant`.
   */
  tenant?: string | TenantReader | undefined;
}

/**
 * A reader of the request's tenant, called once per delivery (the adapter kit passes one): what
 * it throws (a malformed percent-encoding in the route, say) is answered 404 `unknown_tenant`,
 * and `onError` is told why.
 */
export type TenantReader = () => string | undefined;

/**
 * The request's tenant read once, for a wrapper of `handle()` that shows it (the CLI's `listen`
 * and inspector): a string, none, or the reader itself when it threw, for the receiver to
 * answer 404 and tell onError why.
 * @internal
 */
export function readTenant(tenant: WebhookRequest['tenant']): WebhookRequest['tenant'] {
  if (typeof tenant !== 'function') return tenant;
  try {
    return tenant();
  } catch {
    return tenant;
  }
}

/** A handler of one or several events; it may return a promise. */
export type EventHandler<N extends string = EventName> = (
  event: WebhookEvent<N>,
  context: HandlerContext,
) => unknown;

/**
 * The options of `on()` for events named `N`: `latestOnly` only where every one of them is about
 * an entity ({@link EntityEventName}).
 */
export type OnOptions<N extends string> = [N] extends [EntityEventName]
  ? HandlerOptions
  : Omit<HandlerOptions, 'latestOnly'> & { latestOnly?: false };

/** A webhook receiver. Create one with {@link createReceiver}. */
export interface Receiver {
  /**
   * Handle one event name, or each of a list: the names this version knows only, so a misspelt
   * one is a compile error, and a `ConfigError` (naming the nearest known name) at run time.
   * With `{ latestOnly: true }` (events about an entity only: a compile error, and a
   * `ConfigError` naming the event, for any other), the event's handlers run only for a state
   * newer than the newest processed for its entity; an older one is answered `200 superseded`.
   */
  on<N extends KnownEventName>(
    name: N | readonly N[],
    handler: EventHandler<N>,
    options?: OnOptions<N>,
  ): Receiver;
  /**
   * Handle every verified event, known or not: the one place for names this version does not
   * know yet (there `event.event` is any string and `event.data` a plain record).
   */
  onAny(handler: EventHandler): Receiver;
  /**
   * Be told of every failure, with a typed error. The default console logger then prints none
   * of them: one line per failure, the handler's (`Reporting` in delivery-outcome.ts says the rule).
   */
  onError(handler: ErrorHandler): Receiver;
  /** Run one delivery through the pipeline. Never throws for anything a request contains. */
  handle(request: WebhookRequest): Promise<WebhookResult>;
  /**
   * Run the handlers of a delivery an inbox stored: verify it again, parse, validate, claim its
   * run in the store (so two workers never run one event at once, and a processed one never
   * again), dispatch with `ctx.attempt`. Inbox workers call it; never throws.
   */
  processStored(delivery: StoredDelivery, options: StoredRunOptions): Promise<StoredRunResult>;
  /**
   * Forget the cached secrets of `tenant` (of every tenant, without one): its next delivery, in
   * this process, looks them up again instead of waiting out `secretCacheMs`. Call it after you
   * add a school, or add or remove one of its secrets (docs/tenants.md). Does nothing when
   * `secret` is not a lookup.
   *
   * @example
   * ```ts
   * await db.addWebhookSecret('school-12', newSecret);
   * receiver.forgetSecret('school-12');
   * ```
   */
  forgetSecret(tenant?: string): void;
  /** The largest body accepted, for adapters to stop reading at the limit. */
  readonly maxBodyBytes: number;
  /** The inbox deliveries are handed to, if any. */
  readonly inbox: Inbox | undefined;
  /**
   * True when the secret is looked up per tenant: each request must then name its tenant (an
   * adapter without a `tenant` option throws a `ConfigError` when it is made).
   */
  readonly needsTenant: boolean;
  /** The store its keys (and the records of the entities it handles) are kept in. */
  readonly store: IdempotencyStore;
  /** Whether it records the entities it handles, for a reconciler (`recordEntities`). */
  readonly recordsEntities: boolean;
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
  const { maxBodyBytes, inbox, secrets } = settings;
  const registry = new HandlerRegistry();
  const reporting = new Reporting(settings);
  const pipeline = new DeliveryPipeline({
    ...settings,
    handlersOf: registry.handlersOf,
    latestOnly: registry.latestOnly,
    reportError: reporting.report,
  });
  const httpRun = inbox === undefined ? pipeline.dispatchNow : pipeline.handToInbox;
  const notes = answerNotesOf(settings, reporting);
  // What the store's client fails with outside any delivery (an idle connection a restart
  // ended) is this receiver's to tell, as a delivery's failures are.
  if (typeof settings.store.onError === 'function') settings.store.onError(reporting.report);
  async function handle(request: WebhookRequest): Promise<WebhookResult> {
    const observation = reporting.observe(DELIVERY);
    const startedAt = observation ? performance.now() : 0;
    const signature = getHeader(request.headers, 'signature');
    const arrival = arrivalOf(signature, request.tenant, observation);
    let ending: DeliveryOutcome;
    try {
      ending = await httpRun.run(request, arrival);
    } catch (cause) {
      // Only a faulty store, inbox or logger can get here; the delivery is retried later.
      ending = DeliveryOutcome.beforeEvent(
        'store_unavailable',
        unexpected('receiver', cause, secrets),
      );
    }
    reporting.finish(ending, arrival, startedAt, 'delivery');
    const answered = answer(ending.outcome, ending.idempotencyKey);
    if (notes !== undefined) noteAnswer(notes, settings.now(), arrival, ending);
    return answered;
  }

  const processStored = storedRunner(pipeline, reporting, secrets);

  const receiver: Receiver = {
    on<N extends KnownEventName>(
      name: N | readonly N[],
      handler: EventHandler<N>,
      options?: OnOptions<N>,
    ): Receiver {
      const names = Array.isArray(name) ? name : [name];
      registry.on(names, handler as unknown as AnyHandler, options);
      return receiver;
    },
    onAny(handler: EventHandler): Receiver {
      registry.onAny(handler as unknown as AnyHandler);
      return receiver;
    },
    onError(handler: ErrorHandler): Receiver {
      reporting.onError(handler);
      return receiver;
    },
    handle,
    processStored,
    forgetSecret: (tenant?: string): void => settings.secretSource.forget(tenant),
    maxBodyBytes,
    inbox,
    needsTenant: settings.secretSource.perTenant,
    store: settings.store,
    recordsEntities: settings.recordTtlMs !== undefined,
  };
  if (notes !== undefined) Object.defineProperty(receiver, ANSWER_NOTES, { value: notes });
  return receiver;
}

/** `receiver.processStored`: a stored delivery run by an inbox's worker, as the pipeline runs it. */
function storedRunner(
  pipeline: DeliveryPipeline,
  reporting: Reporting,
  secrets: readonly string[],
): Receiver['processStored'] {
  return async (stored, { attempt }) => {
    const observation = reporting.observe({ kind: 'job', attempt, link: stored.trace });
    const startedAt = observation ? performance.now() : 0;
    const { signature, tenant } = stored;
    const arrival: Arrival = { signature, attempt, tenant, tenantUnread: undefined, observation };
    const body = stored.encoding === 'base64' ? fromBase64(stored.body) : stored.body;
    let ending: DeliveryOutcome;
    try {
      ending = await pipeline.runStored.run(body, arrival);
    } catch (cause) {
      ending = DeliveryOutcome.failed(
        'store_unavailable',
        stored,
        unexpected('worker', cause, secrets),
      );
    }
    reporting.finish(ending, arrival, startedAt, 'job');
    return runResultOf(ending, secrets);
  };
}

/** A failure no step answered (a faulty store, inbox or logger): retried later, as a store's. */
function unexpected(
  who: 'receiver' | 'worker',
  cause: unknown,
  secrets: readonly string[],
): StoreUnavailableError {
  const why = withCauses(`the ${who} failed unexpectedly`, cause, secrets);
  return new StoreUnavailableError(why, { cause });
}

/** An HTTP delivery's arrival, its tenant read (a string, or none), or what reading it threw. */
function arrivalOf(
  signature: string | undefined,
  given: WebhookRequest['tenant'],
  observation: DeliveryObservation | undefined,
): Arrival {
  let tenant: unknown = given;
  let tenantUnread: unknown;
  if (typeof given === 'function') {
    try {
      tenant = given();
    } catch (cause) {
      tenantUnread = { cause };
    }
  }
  return {
    signature,
    attempt: 1,
    tenant: typeof tenant === 'string' ? tenant : undefined,
    tenantUnread: tenantUnread as Arrival['tenantUnread'],
    observation,
  };
}

/**
 * Note an answer for the watchdog: in memory now, in the store with the others within a second.
 * A route that names no known tenant is not noted: anyone can send one.
 */
function noteAnswer(
  notes: AnswerNotes,
  at: number,
  arrival: Arrival,
  ending: DeliveryOutcome,
): void {
  if (ending.outcome === 'unknown_tenant') return;
  const { idempotencyKey: key, event } = ending;
  // Whether the platform counts the outcome's status as delivered (the outcome table's `success`).
  notes.note({ scope: arrival.tenant ?? '', at, ok: OUTCOMES[ending.outcome].success, key, event });
}

/**
 * The answers this receiver keeps for the watchdog, when its store keeps them and `watch` is on;
 * a store that cannot take them is reported (the notes wait for the next write).
 */
function answerNotesOf(
  settings: ReturnType<typeof checkOptions>,
  reporting: Reporting,
): AnswerNotes | undefined {
  const { store, watch, now, secrets } = settings;
  if (!watch || typeof store.watch !== 'function') return undefined;
  const write: WatchCall = (batch) => store.watch!(batch);
  return new AnswerNotes(write, now, (cause) => {
    const why = withCauses("the store failed to keep the watchdog's notes", cause, secrets);
    reporting.report(new StoreUnavailableError(why, { cause }));
  });
}

/** Options of one `on()`. */
export interface HandlerOptions {
  /**
   * Run the handlers of this event only for a state newer (by the event's `timestamp`) than the
   * newest already processed for the same entity (`entityOf`): an older one is answered
   * `200 superseded`, and two deliveries of one entity never run at once. For the events of the
   * entity table only.
   */
  latestOnly?: boolean;
}

/** The handlers of a receiver: `on()`'s by event name, and `onAny()`'s for every event. */
export class HandlerRegistry {
  readonly #named = new Map<string, AnyHandler[]>();
  readonly #any: AnyHandler[] = [];
  /** The events one of whose handlers asked for `latestOnly`. */
  readonly #latestOnly = new Set<string>();

  /**
   * Register `handler` for each of `names`, every name checked before any is registered: a
   * misspelt name would answer every real event `200 ignored`, which the platform never sends
   * again; `latestOnly` for an event of no entity would guard nothing.
   */
  on(names: readonly unknown[], handler: AnyHandler, options?: HandlerOptions | null): void {
    names.forEach(assertKnownEvent);
    const latestOnly = options?.latestOnly === true;
    if (latestOnly) this.#assertGuardable(names as readonly string[]);
    for (const name of names as readonly string[]) {
      const list = this.#named.get(name) ?? [];
      list.push(handler);
      this.#named.set(name, list);
      if (latestOnly) this.#latestOnly.add(name);
    }
  }

  /**
   * Whether the handlers of an event run for its newest state only: when one of them asked
   * for it, every handler of the event (`onAny`'s too) is guarded.
   */
  latestOnly = (event: string): boolean =>
    this.#latestOnly.size !== 0 && this.#latestOnly.has(event);

  /** Refuse `latestOnly` where it would guard nothing: an event of no entity. */
  #assertGuardable(names: readonly string[]): void {
    const without = names.find((name) => !hasEntity(name));
    if (without !== undefined) {
      throw new ConfigError(
        `latestOnly needs an event about an entity (entityOf); ${without} is about none, so no state of it is newer than another`,
      );
    }
  }

  /** Register `handler` for every event, known or not. */
  onAny(handler: AnyHandler): void {
    this.#any.push(handler);
  }

  /** The handlers of an event name, `onAny`'s included; empty when there are none. */
  handlersOf = (event: string): readonly AnyHandler[] => {
    const handlers = this.#named.get(event);
    if (handlers === undefined) return this.#any;
    return this.#any.length === 0 ? handlers : [...handlers, ...this.#any];
  };
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
