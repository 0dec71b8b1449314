/**
 * The steps of a delivery, each named for what it checks (docs/receiving.md), and the three runs
 * they make: an HTTP delivery whose handlers run now (request, body, secrets, verify, parse, age,
 * validate, claim, dispatch), one handed to an inbox (… age, claim, hand off), and a worker's run
 * of a stored delivery (secrets, verify, parse, validate, its run's key, claim, dispatch: its
 * entity was recorded when it was stored).
 *
 * Each step takes what the step before it gave and gives what the next one takes (the request,
 * then the raw body, then {@link Keyed}, {@link Verified}, {@link Parsed}, {@link Validated}, {@link Claimed}),
 * or the {@link DeliveryOutcome} of the delivery. A step that waits for the store, the handlers or the
 * inbox is `async`; the body, secrets and verify steps give a promise only while a reader, a lookup
 * or Web Crypto works (docs/decisions.md says what that saves); the others are plain functions.
 * {@link Stages} (below the step types) awaits each promise in turn.
 * @module
 */

import { declaredLength, getHeader, type HeadersInput } from './request.js';
import { deliveryKeyOf, isTenantName, MAX_TENANT_LENGTH, runKeyOf } from '../keys/delivery-key.js';
import { DeadlineQueue } from '../utils/deadlines.js';
import { RECEIVER_DEFAULTS } from '../defaults.js';
import { DeliveryOutcome } from './delivery-outcome.js';
import {
  ConfigError,
  HandlerError,
  HandlerTimeoutError,
  InboxUnavailableError,
  MalformedEnvelopeError,
  PayloadValidationError,
  RequestRejectedError,
  SecretUnavailableError,
  SignatureError,
  StaleEventError,
  UnknownTenantError,
  withCauses,
  type SchoolhooksError,
} from '../errors.js';
import type { z } from 'zod';
import {
  isFixedContractEvent,
  validateEventData,
  type Envelope,
  type FixedEventName,
  type WebhookEvent,
  parseEnvelope,
} from '../platform/events/index.js';
import type { Inbox, StoredDelivery } from '../inbox/types.js';
import {
  runHandlers,
  returnedPromise,
  type AnyHandler,
  isTimedOut,
  type HandlersResult,
} from './run-handlers.js';
import { DeliveryClaims, type Claimed } from '../keys/delivery-claims.js';
import type { SecretSource, TenantSecrets } from './secret-source.js';
import type { Fingerprint, RawBody, Verifier } from '../platform/signature.js';
import { signatureFailureOf } from '../platform/signature-failure.js';
import type { IdempotencyStore } from '../stores/types.js';
import type { DeliveryObservation, TraceCarrier } from '../telemetry/telemetry.js';

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

/** What is known of a delivery before its first step; every step may read it. */
export interface Arrival {
  /** The signature header (an HTTP delivery's, or the one stored with the delivery). */
  readonly signature: string | undefined;
  /** The attempt, 1 for an HTTP delivery; handlers see it as `ctx.attempt`. */
  readonly attempt: number;
  /** The tenant the route named (many schools on one endpoint); handlers see it as `ctx.tenant`. */
  readonly tenant: string | undefined;
  /** When reading the tenant threw: what it threw (the delivery is answered 404). */
  readonly tenantUnread: { readonly cause: unknown } | undefined;
  readonly observation: DeliveryObservation | undefined;
}

/** What `findSecrets` gives: the raw body and the verifier of the delivery's secrets. */
export interface Keyed {
  readonly body: RawBody;
  /** The delivery's secrets (its tenant's, with a lookup), their keys prepared. */
  readonly verifier: Verifier;
}

/** What `verify` gives: a body whose signature matched a secret. */
export interface Verified extends Keyed {
  /** The body's fingerprint under the first secret (what a completed key remembers). */
  readonly fingerprint: Fingerprint;
}

/** What `parse` gives: a verified body and its envelope. */
export interface Parsed extends Verified {
  readonly envelope: Envelope;
  /** The body as text (what an inbox stores). */
  readonly text: string;
  /** The envelope's timestamp, in ms since the epoch. */
  readonly timestampMs: number;
  /**
   * The key claimed in the store: the idempotencyKey (scoped to the tenant when there is one),
   * or a stored run's own (delivery-key.ts).
   */
  readonly key: string;
}

/** What `validate` gives: a parsed delivery and the event its handlers get. */
export interface Validated extends Parsed {
  readonly event: WebhookEvent<string>;
}

export type { Claimed } from '../keys/delivery-claims.js';

// The runs' machinery: a delivery's steps as a typed list. `Stages.then` adds a step that takes
// what the step before it gives, so a step that does not is a compile error, and `Stages.run`
// runs them in order, awaiting each promise one gives, until one gives the run's end or the last
// one has run. A step that throws or rejects rejects the run: the receiver answers that as a
// faulty store's failure (receiver.ts), so every failure a step can name, it ends the delivery
// with instead. A step is a plain function (checkRequest, parse), an `async` one (claim,
// dispatch), or gives a promise only when it waits (readBody, findSecrets, verify); only a promise
// (any thenable) is awaited, so a plain value goes on in the same turn (docs/decisions.md says
// what that saves).

/**
 * One step of a run: it takes what the step before it gave (and the facts of the run, the same
 * for every step) and gives what the next step takes, or the run's `End`, now or as a promise.
 */
export type Step<In, Out, End, Facts> = (
  input: In,
  facts: Facts,
) => Out | End | PromiseLike<Out | End>;

/** A step whose types were checked when {@link Stages.then} added it. */
type CheckedStep<Facts> = (input: never, facts: Facts) => unknown;

/** What a step gives the step after it: its value, awaited, without the run's end. */
type Gives<S extends (...args: never[]) => unknown, End> = Exclude<Awaited<ReturnType<S>>, End>;

/**
 * Steps run in order, each taking what the one before gave, until one gives an `End` (told apart
 * by `isEnd`) or the last one has run. Built with {@link Stages.start} and {@link Stages.then}, so
 * a step that does not take what the step before gives is a compile error.
 */
export class Stages<In, Out, End, Facts> {
  readonly #steps: readonly CheckedStep<Facts>[];
  readonly #isEnd: (value: unknown) => value is End;

  private constructor(
    steps: readonly CheckedStep<Facts>[],
    isEnd: (value: unknown) => value is End,
  ) {
    this.#steps = steps;
    this.#isEnd = isEnd;
  }

  /** A run of no step yet over an `In`, whose steps read `Facts`; a value `isEnd` is true of ends it. */
  static start<In, Facts, End>(
    isEnd: (value: unknown) => value is End,
  ): Stages<In, In, End, Facts> {
    return new Stages<In, In, End, Facts>([], isEnd);
  }

  /** This run, then `next` over what its last step gave (a new run: this one is unchanged). */
  then<S extends Step<Out, unknown, End, Facts>>(next: S): Stages<In, Gives<S, End>, End, Facts> {
    return new Stages<In, Gives<S, End>, End, Facts>([...this.#steps, next], this.#isEnd);
  }

  /** Run the steps over `input`: the first end, or what the last step gave (each promise awaited). */
  async run(input: In, facts: Facts): Promise<Out | End> {
    let value: unknown = input;
    for (const step of this.#steps) {
      const given = (step as (input: unknown, facts: Facts) => unknown)(value, facts);
      value = returnedPromise(given) ? await given : given;
      if (this.#isEnd(value)) return value;
    }
    return value as Out;
  }
}

/** A run of steps over one delivery, from `In` to its {@link DeliveryOutcome}. */
export type DeliveryRun<In> = Stages<In, never, DeliveryOutcome, Arrival>;

/** What the steps share: the receiver's options, prepared. */
export interface PipelineConfig {
  /** Where each delivery's secrets come from. */
  secretSource: SecretSource;
  /** The receiver's own secrets, for an error to hide should its cause's message hold one. */
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
  now: () => number;
  /** The handlers of an event name, `onAny`'s included; empty when there are none. */
  handlersOf: (event: string) => readonly AnyHandler[];
  /** Whether the handlers of an event name run for its newest state only (`latestOnly`). */
  latestOnly?: ((event: string) => boolean) | undefined;
  /**
   * How long the record of an entity a delivery handled is kept, for reconciliation; undefined:
   * deliveries record nothing (`recordEntities: false`).
   */
  recordTtlMs?: number | undefined;
  /** Tell `onError` (or the logger) of a failure. */
  reportError: (error: SchoolhooksError) => void;
}

/** The steps of the pipeline, bound to one receiver's configuration, and their runs. */
export class DeliveryPipeline {
  readonly #config: PipelineConfig;
  /** One timer for every delivery whose handlers are still running: they share handlerTimeoutMs. */
  readonly #handlerDeadlines: DeadlineQueue;
  /** Each delivery's one claim and one settle. */
  readonly #claims: DeliveryClaims;
  /** Whether deliveries record the entities they handle, for reconciliation. */
  readonly #recordsEntities: boolean;

  /** An HTTP delivery whose handlers run before the answer. */
  readonly dispatchNow: DeliveryRun<PipelineRequest>;
  /** An HTTP delivery handed to the inbox; workers validate and dispatch it later. */
  readonly handToInbox: DeliveryRun<PipelineRequest>;
  /** A worker's run of a stored body: no age check (retries go on for days). */
  readonly runStored: DeliveryRun<RawBody>;

  constructor(config: PipelineConfig) {
    this.#config = config;
    this.#handlerDeadlines = new DeadlineQueue(config.handlerTimeoutMs);
    this.#claims = new DeliveryClaims(config);
    this.#recordsEntities = config.recordTtlMs !== undefined;
    const { checkRequest, readBody, findSecrets, verify, parse, checkAge, validate } = this;
    const checked = Stages.start<PipelineRequest, Arrival, DeliveryOutcome>(DeliveryOutcome.is)
      .then(checkRequest)
      .then(readBody)
      .then(findSecrets)
      .then(verify)
      .then(parse)
      .then(checkAge);
    this.dispatchNow = checked.then(validate).then(this.claim).then(this.dispatch);
    this.handToInbox = checked.then(this.claimToStore).then(this.handOff);
    this.runStored = Stages.start<RawBody, Arrival, DeliveryOutcome>(DeliveryOutcome.is)
      .then(findSecrets)
      .then(verify)
      .then(parse)
      .then(validate)
      .then(useRunKey)
      .then(this.claimRun)
      .then(this.dispatch);
  }

  /** Step 1, request: 405 for a method other than POST, 415 for a type other than JSON. */
  checkRequest = (request: PipelineRequest): PipelineRequest | DeliveryOutcome => {
    const { method, headers } = request;
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
    return request;
  };

  /**
   * Step 2, body: the raw bytes, read up to maxBodyBytes when the adapter gave a reader; 413
   * beyond it, 500 `body_unavailable` when a body parser took them, 400 when the client broke
   * the stream mid-body. A promise only while a reader reads (docs/decisions.md: what it saves).
   */
  readBody = ({
    headers,
    body,
    rawBodyFix,
  }: PipelineRequest): RawBody | DeliveryOutcome | Promise<RawBody | DeliveryOutcome> => {
    const { maxBodyBytes } = this.#config;
    if (typeof body !== 'function') return this.#usableBody(body, rawBodyFix);
    // A body announced as too large is refused before any of it is read.
    if ((declaredLength(headers) ?? 0) > maxBodyBytes) return tooLarge(maxBodyBytes);
    let reading: Promise<unknown>;
    try {
      reading = Promise.resolve((body as (limit: number) => Promise<unknown>)(maxBodyBytes));
    } catch (cause) {
      // A reader that throws instead of rejecting is a stream that could not be read all the same.
      return unreadable(cause);
    }
    return reading.then((read) => this.#usableBody(read, rawBodyFix), unreadable);
  };

  /** What an adapter gave or its reader read: the raw bytes, or why they cannot be used. */
  #usableBody(input: unknown, rawBodyFix: string | undefined): RawBody | DeliveryOutcome {
    const body = rawBodyOf(input);
    if (body === undefined)
      return DeliveryOutcome.beforeEvent('body_unavailable', bodyTaken(rawBodyFix));
    const { maxBodyBytes } = this.#config;
    return byteLength(body, maxBodyBytes) > maxBodyBytes ? tooLarge(maxBodyBytes) : body;
  }

  /**
   * Step 3, secrets: the verifier of the receiver's secrets, or of the tenant's (looked up, or
   * cached): 404 `unknown_tenant` for a tenant that has none, 503 `secret_unavailable` when the
   * lookup fails, outlasts its bound or gives an unusable secret. The receiver's own secrets are
   * given at once, without a promise (docs/decisions.md: what it saves).
   */
  findSecrets = (
    body: RawBody,
    { tenant, tenantUnread }: Arrival,
  ): Keyed | DeliveryOutcome | Promise<Keyed | DeliveryOutcome> => {
    if (tenantUnread !== undefined) {
      const { cause } = tenantUnread;
      const why = withCauses(
        "the request's tenant could not be read (the `tenant` option threw)",
        cause,
      );
      return DeliveryOutcome.beforeEvent(
        'unknown_tenant',
        new UnknownTenantError(undefined, why, { cause }),
      );
    }
    if (tenant !== undefined && !isTenantName(tenant)) {
      const why = `is not a tenant name (empty, over ${MAX_TENANT_LENGTH} characters, or with U+0000 or a lone surrogate)`;
      return DeliveryOutcome.beforeEvent('unknown_tenant', new UnknownTenantError(tenant, why));
    }
    const source = this.#config.secretSource;
    return source.perTenant
      ? this.#tenantSecrets(body, source, tenant)
      : { body, verifier: source.verifier };
  };

  /** Step 3 for a receiver whose secrets are a lookup: the tenant's verifier, looked up or cached. */
  async #tenantSecrets(
    body: RawBody,
    source: TenantSecrets,
    tenant: string | undefined,
  ): Promise<Keyed | DeliveryOutcome> {
    let verifier: Verifier | undefined;
    try {
      verifier = await source.verifierOf(tenant);
    } catch (cause) {
      return DeliveryOutcome.beforeEvent('secret_unavailable', secretUnavailable(cause, tenant));
    }
    if (verifier === undefined) {
      return DeliveryOutcome.beforeEvent('unknown_tenant', new UnknownTenantError(tenant));
    }
    return { body, verifier };
  }

  /**
   * Step 4, verify: 401 unless the signature matches a secret; the body's fingerprint if it does.
   * A promise only when the verifier gives one (Web Crypto); node:crypto's answers at once.
   */
  verify = (
    { body, verifier }: Keyed,
    { signature }: Arrival,
  ): Verified | DeliveryOutcome | Promise<Verified | DeliveryOutcome> => {
    const verified = (fingerprint: Fingerprint | undefined): Verified | DeliveryOutcome =>
      fingerprint === undefined ? signatureRefused(signature) : { body, verifier, fingerprint };
    const fingerprint = verifier.verify(body, signature);
    return returnedPromise(fingerprint) ? fingerprint.then(verified) : verified(fingerprint);
  };

  /** Step 5, parse: 400 unless the body is JSON with a valid envelope. */
  parse = (
    { body, verifier, fingerprint }: Verified,
    { tenant }: Arrival,
  ): Parsed | DeliveryOutcome => {
    const parsed = parseEnvelope(body);
    if (!parsed.ok) {
      return DeliveryOutcome.beforeEvent('malformed', new MalformedEnvelopeError(parsed.reason));
    }
    const { envelope, text, timestampMs } = parsed;
    const key = deliveryKeyOf(envelope.idempotencyKey, tenant);
    return { body, verifier, fingerprint, envelope, text, timestampMs, key };
  };

  /** Step 6, age: 422 `stale` for a timestamp older than maxEventAgeMs or too far ahead. */
  checkAge = (parsed: Parsed): Parsed | DeliveryOutcome => {
    const { envelope, timestampMs } = parsed;
    if (isWithinAgeWindow(this.#config.now() - timestampMs, this.#config.maxEventAgeMs)) {
      return parsed;
    }
    const why = `${envelope.event} timestamp ${envelope.timestamp} is outside the accepted window`;
    return DeliveryOutcome.failed('stale', envelope, new StaleEventError(why, envelope.timestamp));
  };

  /** Step 7, validate: 422 for a fixed-contract event whose `data` fails its schema. */
  validate = (parsed: Parsed): Validated | DeliveryOutcome => {
    const { envelope } = parsed;
    if (!isFixedContractEvent(envelope.event)) {
      return validatedOf(parsed, envelope, parsed.key);
    }
    const schema = this.#config.schemas?.[envelope.event];
    const validation = validateEventData(envelope.event, envelope.data, schema);
    if (!validation.ok) {
      const error = new PayloadValidationError(envelope.event, validation.issues);
      return DeliveryOutcome.failed('invalid_payload', envelope, error);
    }
    // The schema may give back other data (a replaced schema's defaults or transforms).
    const checked =
      validation.data === envelope.data ? envelope : { ...envelope, data: validation.data };
    return validatedOf(parsed, checked, parsed.key);
  };

  /**
   * Step 8, claim (src/keys/delivery-claims.ts): the delivery's key, with its entity's record
   * (reconciliation) and its entity's version (`latestOnly`), in one store call; or the ending of
   * a key or an entity already taken: 200 `duplicate` (done with this body, or its entity
   * recovered by a reconcile run), 409 `conflict` (done with another body), 409 `in_flight`, 200
   * `superseded` (an older state than the newest applied), 503 when the store fails.
   */
  claim = (
    delivery: Validated,
    { tenant }: Arrival,
  ): Promise<Claimed<Validated> | DeliveryOutcome> =>
    this.#claims.take(delivery, tenant, { records: this.#recordsEntities, event: delivery.event });

  /** Step 8 before an inbox: the key and the entity's record (its version is a worker run's). */
  claimToStore = (
    delivery: Parsed,
    { tenant }: Arrival,
  ): Promise<Claimed<Parsed> | DeliveryOutcome> =>
    this.#claims.take(delivery, tenant, { records: this.#recordsEntities, event: undefined });

  /** Step 8 of a stored run: its run's key and its entity's version (its record was taken when it was stored). */
  claimRun = (
    delivery: Validated,
    { tenant }: Arrival,
  ): Promise<Claimed<Validated> | DeliveryOutcome> =>
    this.#claims.take(delivery, tenant, { records: false, event: delivery.event });

  /**
   * Step 9, dispatch: run the handlers (every one at once) against handlerTimeoutMs. 200
   * `processed` (the claim completed), `ignored` when none is registered, 500 `handler_failed`
   * (the claim released for a retry), 503 `timeout` (they go on; their end completes or releases).
   * With a claim's transaction, the handlers write through it (`ctx.transaction`): completing
   * commits it, so a completion that fails is 503 `store_unavailable`, and a timeout abandons it.
   */
  dispatch = async (claimed: Claimed<Validated>, arrival: Arrival): Promise<DeliveryOutcome> => {
    const { event } = claimed.delivery;
    const handlers = this.#config.handlersOf(event.event);
    if (handlers.length === 0) {
      return this.#claims.completeThen(claimed, DeliveryOutcome.quiet('ignored', event));
    }
    const { observation } = arrival;
    const startedAt = observation ? performance.now() : 0;
    const run = () =>
      runHandlers(
        handlers,
        event,
        this.#handlerDeadlines,
        arrival.attempt,
        arrival.tenant,
        claimed.claim.transaction?.client,
      );
    const outcome = await (observation ? observation.runHandlers(run) : run());
    const observed = (settled: HandlersResult, timedOut: boolean): HandlersResult => {
      observation?.handlersEnded({
        result: settled.ok ? 'succeeded' : 'failed',
        timedOut,
        durationMs: performance.now() - startedAt,
      });
      return settled;
    };
    if (!isTimedOut(outcome)) return this.#handlersEnded(claimed, observed(outcome, false));
    const late = outcome.stillRunning.then((settled) => observed(settled, true));
    return this.#handlersTimedOut(claimed, late);
  };

  /** The handlers ended in time: the claim completed (committed) on success, released on failure. */
  #handlersEnded(claimed: Claimed<Validated>, settled: HandlersResult): Promise<DeliveryOutcome> {
    const { event } = claimed.delivery;
    if (settled.ok) {
      const processed = DeliveryOutcome.quiet('processed', event);
      return claimed.claim.transaction
        ? this.#claims.commitThen(claimed, processed)
        : this.#claims.completeThen(claimed, processed);
    }
    const error = new HandlerError(
      event.event,
      event.idempotencyKey,
      settled.error,
      claimed.delivery.verifier.secrets,
    );
    const failed = DeliveryOutcome.failed('handler_failed', event, error);
    return this.#claims.releaseThen(claimed, failed);
  }

  /** The handlers are still running at handlerTimeoutMs: 503 now; their end completes or releases the claim. */
  #handlersTimedOut(
    claimed: Claimed<Validated>,
    stillRunning: Promise<HandlersResult>,
  ): DeliveryOutcome {
    const { delivery, claim } = claimed;
    const { event } = delivery;
    // Their transaction ends now, rolled back: nothing they write from here on commits.
    claim.transaction?.abandon();
    void this.#settleLate(claimed, stillRunning);
    const { handlerTimeoutMs } = this.#config;
    const error = new HandlerTimeoutError(event.event, event.idempotencyKey, handlerTimeoutMs);
    return DeliveryOutcome.failed('timeout', event, error);
  }

  /** Handlers that outlasted handlerTimeoutMs have ended: complete the claim, or report and release it. */
  async #settleLate(
    claimed: Claimed<Validated>,
    stillRunning: Promise<HandlersResult>,
  ): Promise<void> {
    const settled = await stillRunning;
    if (settled.ok) return this.#claims.complete(claimed);
    const { event, verifier } = claimed.delivery;
    this.#config.reportError(
      new HandlerError(event.event, event.idempotencyKey, settled.error, verifier.secrets),
    );
    return this.#claims.release(claimed);
  }

  /**
   * Step 9 with an inbox, hand off: store the raw body (its text, which gives back its bytes
   * exactly) and its signature in the inbox, then complete the claim: 202 `queued`. When the
   * inbox fails, the claim is released: 503.
   */
  handOff = async (
    claimed: Claimed<Parsed>,
    { signature, observation, tenant }: Arrival,
  ): Promise<DeliveryOutcome> => {
    const { envelope, text } = claimed.delivery;
    const stored: StoredDelivery = {
      body: text,
      // An HTTP delivery without a signature header ended at `verify`.
      signature: signature!,
      event: envelope.event,
      idempotencyKey: envelope.idempotencyKey,
      receivedAt: new Date(this.#config.now()).toISOString(),
    };
    if (tenant !== undefined) stored.tenant = tenant;
    const trace = observation === undefined ? undefined : carrierOf(observation);
    if (trace !== undefined) stored.trace = trace;
    try {
      await this.#config.inbox!.enqueue(stored);
    } catch (cause) {
      const why = withCauses('the inbox failed to store the delivery', cause, this.#config.secrets);
      const error = new InboxUnavailableError(why, { cause });
      return this.#claims.releaseThen(
        claimed,
        DeliveryOutcome.failed('inbox_unavailable', envelope, error),
      );
    }
    return this.#claims.completeThen(claimed, DeliveryOutcome.quiet('queued', envelope));
  };
}

/**
 * Whether an event `ageMs` old (negative: stamped in the future) is accepted: no older than
 * maxEventAgeMs, and no further ahead than the clock skew allowed.
 */
export function isWithinAgeWindow(ageMs: number, maxEventAgeMs: number): boolean {
  return ageMs <= maxEventAgeMs && ageMs >= -RECEIVER_DEFAULTS.futureSkewMs;
}

/** A stored run's step: the delivery's own key was completed when it was stored; its run holds a key of its own. */
function useRunKey(validated: Validated): Validated {
  return validatedOf(validated, validated.event, runKeyOf(validated.key));
}

/**
 * `parsed` with the event its handlers get and the key it claims, written field by field (a
 * speed trick: docs/decisions.md says what it saves). A field added to {@link Parsed} must be
 * added here too.
 */
function validatedOf(parsed: Parsed, event: unknown, key: string): Validated {
  const { body, verifier, fingerprint, envelope, text, timestampMs } = parsed;
  return {
    body,
    verifier,
    fingerprint,
    envelope,
    text,
    timestampMs,
    key,
    // What the checks made sure of (a fixed-contract event validated against its schema).
    event: event as WebhookEvent<string>,
  };
}

/** The client went away or broke the stream mid-body. */
function unreadable(cause: unknown): DeliveryOutcome {
  // A reader that knows what is wrong with the bytes says so (Lambda: a body flagged base64 that is not).
  const error =
    cause instanceof MalformedEnvelopeError
      ? cause
      : new MalformedEnvelopeError('the request body could not be read', { cause });
  return DeliveryOutcome.beforeEvent('malformed', error);
}

/** The adapter gave something that is not the raw bytes: a body parser took them first. */
function bodyTaken(rawBodyFix = ANY_FRAMEWORK_RAW_BODY_FIX): ConfigError {
  return new ConfigError(
    `the raw request body is not available (a body parser consumed it): ${rawBodyFix}`,
  );
}

/** The observation's trace context, or none if the observer fails: it never costs a delivery. */
function carrierOf(observation: DeliveryObservation): TraceCarrier | undefined {
  try {
    return observation.carrier();
  } catch {
    return undefined;
  }
}

/** The lookup's failure as `secret_unavailable` reports it (an unusable secret: its ConfigError). */
function secretUnavailable(cause: unknown, tenant: string | undefined): SchoolhooksError {
  if (cause instanceof SecretUnavailableError || cause instanceof ConfigError) return cause;
  const why = withCauses('the secret lookup failed', cause);
  return new SecretUnavailableError(tenant ?? '', why, { cause });
}

/** The answer of the verify step to a signature that failed, saying why (off the hot path). */
function signatureRefused(signature: string | undefined): DeliveryOutcome {
  return DeliveryOutcome.beforeEvent(
    'invalid_signature',
    new SignatureError(signatureFailureOf(signature)),
  );
}

function rejected(outcome: RequestRejectedError['outcome'], message: string): DeliveryOutcome {
  return DeliveryOutcome.beforeEvent(outcome, new RequestRejectedError(outcome, message));
}

function tooLarge(maxBodyBytes: number): DeliveryOutcome {
  return rejected('too_large', `body exceeds maxBodyBytes (${maxBodyBytes})`);
}

function rawBodyOf(body: unknown): RawBody | undefined {
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
function byteLength(body: RawBody, limit: number): number {
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
