// The outcome table is the one place an outcome's meaning is written: its rows hold together,
// and every consumer (the answer, the log line, a stored run's result, the inspector's class,
// `listen`'s naming of the event) reads the same row.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createInspector, type Inspector } from '../src/cli/inspector/create-inspector.js';
import {
  createReceiver,
  OUTCOME_STATUS,
  OUTCOMES,
  type Logger,
  type Outcome,
  type Receiver,
  type ReceiverOptions,
} from '../src/index.js';
import { OUTCOME_SCENARIOS } from './helpers/outcome-scenarios.js';
import { SECRET, signedRequest } from './helpers/signed.js';

const ALL = Object.keys(OUTCOMES) as Outcome[];

/**
 * The platform's rule (docs/platform.md#the-request): a delivery is done when it is answered
 * 200, 201 or 202; any other answer, a 4xx included, is a failed attempt it sends again.
 */
function platformStopsRetrying(status: number): boolean {
  return status === 200 || status === 201 || status === 202;
}

/**
 * The status the platform must see for each outcome, written out here rather than read from the
 * table under test: a row of src/receiving/outcome.ts changed by mistake (a 422 made 200) fails below.
 */
const STATUS: Record<Outcome, number> = {
  method_not_allowed: 405,
  unsupported_media_type: 415,
  body_unavailable: 500,
  too_large: 413,
  unknown_tenant: 404,
  secret_unavailable: 503,
  invalid_signature: 401,
  malformed: 400,
  stale: 422,
  invalid_payload: 422,
  duplicate: 200,
  conflict: 409,
  in_flight: 409,
  store_unavailable: 503,
  superseded: 200,
  ignored: 200,
  handler_failed: 500,
  timeout: 503,
  queued: 202,
  inbox_unavailable: 503,
  processed: 200,
};

/**
 * The outcomes after which the event is safely taken (processed, stored, or nothing to do), so
 * the platform must stop sending it; after every other one it must send it again.
 */
const TAKEN: readonly Outcome[] = ['duplicate', 'superseded', 'ignored', 'queued', 'processed'];

/** The outcomes whose delivery span is an error: the server's own failures. */
const SPAN_ERRORS: readonly Outcome[] = [
  'body_unavailable',
  'secret_unavailable',
  'store_unavailable',
  'handler_failed',
  'timeout',
  'inbox_unavailable',
];

describe('the outcome table', () => {
  it('has a row for every outcome the platform rules here name, and no other', () => {
    expect([...ALL].sort()).toEqual(Object.keys(STATUS).sort());
  });

  it.each(ALL)(
    '%s: the status, the platform retry, success and span error are right',
    (outcome) => {
      const { status, success, platformRetries, spanError } = OUTCOMES[outcome];
      expect(status).toBe(STATUS[outcome]);
      expect(OUTCOME_STATUS[outcome]).toBe(STATUS[outcome]);
      // The platform stops retrying iff it is answered 200, 201 or 202.
      expect(platformStopsRetrying(STATUS[outcome])).toBe(TAKEN.includes(outcome));
      expect(platformRetries).toBe(!TAKEN.includes(outcome));
      expect(success).toBe(TAKEN.includes(outcome));
      expect(spanError).toBe(SPAN_ERRORS.includes(outcome));
    },
  );

  it('never lets a stored run that succeeded be retried, nor acknowledges a failed one', () => {
    for (const outcome of ALL) {
      const { run, class: shownAs } = OUTCOMES[outcome];
      if (run === 'succeeded') expect(platformStopsRetrying(STATUS[outcome])).toBe(true);
      if (shownAs === 'failed') expect(platformStopsRetrying(STATUS[outcome])).toBe(false);
    }
  });
});

/**
 * The rest of each row, written out: how loudly it is logged (a failure of ours at `error`, a
 * refusal the sender can fix at `warn` or `info`), how the inspector shows it, whether the event
 * was verified, and what an inbox does after a run that ends in it.
 */
const ROW: Record<Outcome, [logLevel: string, shownAs: string, verified: boolean, run: string]> = {
  method_not_allowed: ['info', 'refused', false, 'dead_letter'],
  unsupported_media_type: ['info', 'refused', false, 'dead_letter'],
  body_unavailable: ['error', 'failed', false, 'dead_letter'],
  too_large: ['info', 'refused', false, 'dead_letter'],
  unknown_tenant: ['warn', 'refused', false, 'retry'],
  secret_unavailable: ['error', 'failed', false, 'retry'],
  invalid_signature: ['warn', 'refused', false, 'dead_letter'],
  malformed: ['warn', 'refused', false, 'dead_letter'],
  stale: ['warn', 'refused', true, 'dead_letter'],
  invalid_payload: ['warn', 'refused', true, 'dead_letter'],
  duplicate: ['debug', 'duplicate', true, 'succeeded'],
  conflict: ['error', 'refused', true, 'dead_letter'],
  in_flight: ['info', 'refused', true, 'retry'],
  store_unavailable: ['error', 'failed', true, 'retry'],
  superseded: ['info', 'duplicate', true, 'succeeded'],
  ignored: ['debug', 'processed', true, 'succeeded'],
  handler_failed: ['error', 'failed', true, 'retry'],
  timeout: ['warn', 'failed', true, 'retry'],
  queued: ['info', 'queued', true, 'dead_letter'],
  inbox_unavailable: ['error', 'failed', true, 'dead_letter'],
  processed: ['info', 'processed', true, 'succeeded'],
};

describe('the outcome table, loaded afresh', () => {
  // The table is built when src/receiving/outcome.ts loads: a test that imports it again, after
  // resetModules, is what lets a mutation tool (which changes the module in memory) see a row
  // changed by mistake (docs/maintainers/mutation-testing.md).
  it("holds every row as the platform's rules and this file state them, in pipeline order", async () => {
    vi.resetModules();
    const fresh = await import('../src/receiving/outcome.js');
    expect(Object.keys(fresh.OUTCOMES)).toEqual(Object.keys(STATUS));
    for (const outcome of ALL) {
      const row = fresh.OUTCOMES[outcome];
      const [logLevel, shownAs, verified, run] = ROW[outcome];
      expect([outcome, row]).toEqual([
        outcome,
        {
          status: STATUS[outcome],
          success: TAKEN.includes(outcome),
          platformRetries: !TAKEN.includes(outcome),
          logLevel,
          verified,
          class: shownAs,
          spanError: SPAN_ERRORS.includes(outcome),
          run,
        },
      ]);
      expect([outcome, fresh.OUTCOME_STATUS[outcome]]).toEqual([outcome, STATUS[outcome]]);
    }
    expect(Object.keys(fresh.OUTCOME_STATUS)).toEqual(Object.keys(STATUS));
  });
});

interface LogLine {
  level: keyof Logger;
  fields: Record<string, unknown>;
}

const inspectors: Inspector[] = [];
afterEach(() => {
  for (const inspector of inspectors.splice(0)) inspector.close();
});

/** A receiver whose log lines are kept, answering through an inspector that records them. */
function observed(lines: LogLine[]) {
  let inspector: Inspector | undefined;
  const logger: Logger = {
    debug: (fields) => void lines.push({ level: 'debug', fields }),
    info: (fields) => void lines.push({ level: 'info', fields }),
    warn: (fields) => void lines.push({ level: 'warn', fields }),
    error: (fields) => void lines.push({ level: 'error', fields }),
  };
  const make = (options: Partial<ReceiverOptions> = {}): Receiver => {
    const receiver = createReceiver({ secret: SECRET, logger, ...options });
    receiver.onError(() => {});
    const recorder = createInspector({ receiver, secrets: [SECRET] });
    inspectors.push(recorder);
    inspector = recorder;
    const through: Receiver = {
      ...receiver,
      maxBodyBytes: receiver.maxBodyBytes,
      handle: (request) => recorder.recording({ path: '/' }).handle(request),
      on(name, handler, options) {
        receiver.on(name, handler, options);
        return through;
      },
    };
    return through;
  };
  return { make, inspector: () => inspector! };
}

describe('every consumer reads the outcome table', () => {
  it.each(ALL)('%s: the answer, the log line and the inspector agree with it', async (outcome) => {
    const lines: LogLine[] = [];
    const { make, inspector } = observed(lines);
    const results = await OUTCOME_SCENARIOS[outcome](make);
    const last = results.at(-1)!;
    const rule = OUTCOMES[outcome];

    expect(last.outcome).toBe(outcome);
    // What the platform sees: the literal status, and whether it will send the event again.
    expect(last.status).toBe(STATUS[outcome]);
    expect(platformStopsRetrying(last.status)).toBe(TAKEN.includes(outcome));
    expect(last.body.ok).toBe(TAKEN.includes(outcome));
    // Known once the signature verified: what `listen` names the event by.
    expect(last.body.idempotencyKey !== undefined).toBe(rule.verified);

    const logged = lines.filter((line) => line.fields['outcome'] === outcome);
    expect(logged.length).toBeGreaterThan(0);
    for (const line of logged) expect(line.level).toBe(rule.logLevel);

    const recorded = inspector()
      .log.summaries()
      .find((summary) => summary.outcome === outcome);
    expect(recorded).toMatchObject({ outcome, status: STATUS[outcome], outcomeClass: rule.class });
  });

  it('tells an inbox to retry or dead-letter a stored run as the table says', async () => {
    const stored: Parameters<Receiver['processStored']>[0][] = [];
    // An inbox that only keeps what it is given: the runs below are the workers'.
    const inbox = {
      enqueue: async (delivery: (typeof stored)[number]) => void stored.push(delivery),
    };
    const receiver = createReceiver({ secret: SECRET, inbox });
    receiver.onError(() => {});
    await receiver.handle(signedRequest({ idempotencyKey: 'run-fails' }));
    await receiver.handle(
      signedRequest({
        event: 'PaymentCompleted',
        idempotencyKey: 'run-invalid',
        data: { payment: { id: 'x' } },
      }),
    );
    receiver.on('UserSignedIn', () => {
      throw new Error('crm hiccup');
    });
    const [fails, invalid] = stored;
    const failed = await receiver.processStored(fails!, { attempt: 1 });
    const refused = await receiver.processStored(invalid!, { attempt: 1 });
    expect(failed).toMatchObject({ outcome: 'handler_failed', ok: false, retry: true });
    expect(OUTCOMES.handler_failed.run).toBe('retry');
    expect(refused).toMatchObject({ outcome: 'invalid_payload', ok: false, retry: false });
    expect(OUTCOMES.invalid_payload.run).toBe('dead_letter');
  });
});
