/**
 * What an ending is answered with: the status and JSON body of an HTTP delivery, or what an
 * inbox does after a worker's run.
 * @module
 */

import type { Ending } from './ending.js';
import { causeMessageOf, type SchoolhooksError } from '../errors.js';
import type { StoredRunResult } from '../inbox/types.js';
import { OUTCOMES, type Outcome } from './outcome.js';

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
  { outcome, error }: Ending,
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
