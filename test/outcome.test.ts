// The outcome table is the one place an outcome's meaning is written: its rows hold together,
// and every consumer (the answer, the log line, a stored run's result, the inspector's class,
// `listen`'s naming of the event) reads the same row.
import { afterEach, describe, expect, it } from 'vitest';
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

describe('the outcome table', () => {
  it.each(ALL)('%s: success, platform retry and span error follow its status', (outcome) => {
    const { status, success, platformRetries, spanError } = OUTCOMES[outcome];
    expect(OUTCOME_STATUS[outcome]).toBe(status);
    expect(success).toBe(status >= 200 && status < 300);
    expect(platformRetries).toBe(![200, 201, 202].includes(status));
    expect(spanError).toBe(status >= 500);
  });

  it('never lets a stored run that succeeded be retried, nor acknowledges a failed one', () => {
    for (const outcome of ALL) {
      const { run, success, class: shownAs } = OUTCOMES[outcome];
      if (run === 'succeeded') expect(success).toBe(true);
      if (shownAs === 'failed') expect(OUTCOMES[outcome].platformRetries).toBe(true);
    }
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
      on(name, handler) {
        receiver.on(name, handler);
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
    expect(last.status).toBe(rule.status);
    expect(last.body.ok).toBe(rule.success);
    // Known once the signature verified: what `listen` names the event by.
    expect(last.body.idempotencyKey !== undefined).toBe(rule.verified);

    const logged = lines.filter((line) => line.fields['outcome'] === outcome);
    expect(logged.length).toBeGreaterThan(0);
    for (const line of logged) expect(line.level).toBe(rule.logLevel);

    const recorded = inspector()
      .log.summaries()
      .find((summary) => summary.outcome === outcome);
    expect(recorded).toMatchObject({ outcome, status: rule.status, outcomeClass: rule.class });
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
