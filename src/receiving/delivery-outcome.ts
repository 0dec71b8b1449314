/**
 * How a delivery ended, what it is answered with, and how it is told. A {@link DeliveryOutcome} is made by one of
 * three named constructors, one per what is known by then; {@link answer} gives the status and
 * JSON body of an HTTP delivery's outcome (from the outcome table, outcome.ts), and
 * {@link runResultOf} what an inbox does after a worker's run.
 *
 * {@link Reporting} tells how each delivery ended: to `onError`'s handlers, to the logger, and
 * to telemetry. A logger or an observer that throws never changes a delivery's answer.
 * One line per failure, never two: a failure is told to the `onError` handlers when there are
 * any, else written on its delivery's log line (at `warn` at least). The console, the logger used
 * when none is given, is the fallback for failures nobody else hears, so it prints nothing of a
 * failure an `onError` handler was told of (the handler decides what to print, as with Stripe's
 * and Octokit's error hooks). A logger that is given gets every delivery's line, at its outcome's
 * level (a record of deliveries, not a second report of the failure: with `onError` it carries
 * the outcome, the event and the key, not the error's message).
 * @module
 */

import { causeMessageOf, SignatureError, type SchoolhooksError } from '../errors.js';
import type { StoredRunResult } from '../inbox/types.js';
import { OUTCOMES, type Outcome } from './outcome.js';
import type { ReceiverSettings } from './receiver-settings.js';
import type { Arrival } from './pipeline.js';
import type { DeliveryObservation, Telemetry, TelemetryStart } from '../telemetry/telemetry.js';

/** What names an event once its envelope is read: an envelope, a stored delivery or the event. */
export interface EventRef {
  readonly event: string;
  readonly idempotencyKey: string;
}

/** The outcomes that are no failure: nothing is told to `onError`. */
export type QuietOutcome =
  'duplicate' | 'in_flight' | 'superseded' | 'ignored' | 'queued' | 'processed';

/**
 * How a delivery ended: its outcome, the failure `onError` is told of, and what is known of the
 * event by then (for the log line, telemetry and the answer's `idempotencyKey`).
 */
export class DeliveryOutcome {
  private constructor(
    readonly outcome: Outcome,
    readonly error: SchoolhooksError | undefined,
    readonly event: string | undefined,
    readonly idempotencyKey: string | undefined,
  ) {}

  /** Ended before the envelope was read (request, body, signature, envelope): no event to name. */
  static beforeEvent(outcome: Outcome, error: SchoolhooksError): DeliveryOutcome {
    return new DeliveryOutcome(outcome, error, undefined, undefined);
  }

  /** The event's delivery failed: `error` is told to `onError`. */
  static failed(outcome: Outcome, of: EventRef, error: SchoolhooksError): DeliveryOutcome {
    return new DeliveryOutcome(outcome, error, of.event, of.idempotencyKey);
  }

  /** The event's delivery ended with no failure to tell. */
  static quiet(outcome: QuietOutcome, of: EventRef): DeliveryOutcome {
    return new DeliveryOutcome(outcome, undefined, of.event, of.idempotencyKey);
  }

  /** True for an ending (what ends a run of steps: see `Stages` in pipeline.ts). */
  static is(value: unknown): value is DeliveryOutcome {
    return value instanceof DeliveryOutcome;
  }
}

/** The JSON body of every answer. */
export interface WebhookResponseBody {
  ok: boolean;
  outcome: Outcome;
  idempotencyKey?: string;
}

/** What `Receiver.handle` resolves to: the status and JSON body to answer with. */
export interface WebhookResult {
  status: number;
  outcome: Outcome;
  body: WebhookResponseBody;
}

/** The status and JSON body that answer an outcome. */
export function answer(outcome: Outcome, idempotencyKey: string | undefined): WebhookResult {
  const { status, success } = OUTCOMES[outcome];
  const body: WebhookResponseBody = { ok: success, outcome };
  if (idempotencyKey !== undefined) body.idempotencyKey = idempotencyKey;
  return { status, outcome, body };
}

/** What a stored run came to, for the inbox: done, retry later, or a dead letter now. */
export function runResultOf(
  { outcome, error }: DeliveryOutcome,
  secrets: readonly string[],
): StoredRunResult {
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

/** A handler of failures; what it throws is logged, never rethrown. */
export type ErrorHandler = (error: SchoolhooksError) => unknown;

/** What reporting reads of the receiver's settings. */
type ReportingSettings = Pick<
  ReceiverSettings,
  'log' | 'logIsConsole' | 'levelsOn' | 'secrets' | 'telemetry'
>;

/** `onError`'s handlers, the logger and telemetry of one receiver. */
export class Reporting {
  readonly #settings: ReportingSettings;
  readonly #telemetry: Telemetry | undefined;
  readonly #errorHandlers: ErrorHandler[] = [];

  constructor(settings: ReportingSettings) {
    this.#settings = settings;
    this.#telemetry = settings.telemetry;
  }

  /** Add a handler of every failure. */
  onError(handler: ErrorHandler): void {
    this.#errorHandlers.push(handler);
  }

  /** A failure outside a delivery's ending: to `onError`, or to the log when none listens. */
  report = (error: SchoolhooksError): void => {
    if (this.#errorHandlers.length > 0) this.#tellErrorHandlers(error);
    else this.#settings.log?.warn({ code: error.code, err: error.message }, 'webhook failure');
  };

  /** The observation of a delivery or a run; none if the observer fails (it never costs one). */
  observe(start: TelemetryStart): DeliveryObservation | undefined {
    if (this.#telemetry === undefined) return undefined;
    try {
      return this.#telemetry.start(start);
    } catch (thrown) {
      this.#logThrown(thrown, 'telemetry.start threw');
      return undefined;
    }
  }

  /** Tell, log and observe how an HTTP delivery or an inbox run (a `job`) ended. */
  finish(
    ending: DeliveryOutcome,
    { observation, attempt: runAttempt, tenant }: Arrival,
    startedAt: number,
    kind: 'delivery' | 'job',
  ): void {
    try {
      // An HTTP delivery is the platform's own attempt, of which the receiver knows no number.
      const attempt = kind === 'job' ? runAttempt : undefined;
      this.#tellAndLog(ending, attempt, tenant);
      const { outcome, error, event, idempotencyKey } = ending;
      observation?.end({
        kind,
        outcome,
        status: OUTCOMES[outcome].status,
        event,
        idempotencyKey,
        tenant,
        attempt,
        durationMs: performance.now() - startedAt,
        signatureReason: error instanceof SignatureError ? error.reason : undefined,
      });
    } catch {
      // A logger or an observer that throws must not turn the answer into a crash.
    }
  }

  /** The ending's failure to `onError`, and its line to the log (see the module's rule). */
  #tellAndLog(
    { outcome, error, event, idempotencyKey }: DeliveryOutcome,
    attempt: number | undefined,
    tenant: string | undefined,
  ): void {
    const { log, logIsConsole, levelsOn } = this.#settings;
    const told = error !== undefined && this.#errorHandlers.length > 0;
    if (told) {
      this.#tellErrorHandlers(error);
      // The console is the fallback for failures nobody hears: this one was heard.
      if (logIsConsole) return;
    }
    let level = OUTCOMES[outcome].logLevel;
    const onTheLine = error !== undefined && !told ? error : undefined;
    // A failure nobody else is told of is at warn at least, so the console shows it.
    if (onTheLine !== undefined && (level === 'debug' || level === 'info')) level = 'warn';
    if (!levelsOn[level]) return;
    const fields: Record<string, unknown> = { outcome };
    if (event !== undefined) fields['event'] = event;
    if (idempotencyKey !== undefined) fields['idempotencyKey'] = idempotencyKey;
    if (tenant !== undefined) fields['tenant'] = tenant;
    if (attempt !== undefined) fields['attempt'] = attempt;
    if (onTheLine !== undefined) {
      fields['code'] = onTheLine.code;
      fields['err'] = onTheLine.message;
    }
    log![level](fields, `webhook ${outcome.replaceAll('_', ' ')}`);
  }

  /** Tell every `onError` handler, each called at once, none waiting for another. */
  #tellErrorHandlers(error: SchoolhooksError): void {
    for (const handler of this.#errorHandlers) void this.#tell(handler, error);
  }

  /** Tell one `onError` handler; what it throws (or rejects with) is logged, never rethrown. */
  async #tell(handler: ErrorHandler, error: SchoolhooksError): Promise<void> {
    try {
      await handler(error);
    } catch (thrown) {
      this.#logThrown(thrown, 'onError handler threw');
    }
  }

  #logThrown(thrown: unknown, message: string): void {
    this.#settings.log?.error({ err: causeMessageOf(thrown, this.#settings.secrets) }, message);
  }
}
