/**
 * The inbox contract: where a receiver stores a verified delivery before it acknowledges it,
 * for workers to run its handlers later (docs/inbox.md).
 * @module
 */

import type { Outcome } from '../receiving/outcome.js';
import type { TraceCarrier } from '../telemetry/telemetry.js';

/**
 * A verified delivery as an inbox keeps it: its raw body and signature, so a worker verifies it
 * again (a job is not trusted because a queue holds it), and what a list of jobs shows.
 */
export interface StoredDelivery {
  /** The raw body, as UTF-8 text, or base64 of the bytes when `encoding` is `base64`. */
  body: string;
  /** `base64` only for a body whose bytes are not valid UTF-8 (text would not give them back). */
  encoding?: 'base64' | undefined;
  /** The `signature` header as received. */
  signature: string;
  /** The envelope's event name. */
  event: string;
  /** The envelope's idempotencyKey: a second enqueue of the same key is a no-op. */
  idempotencyKey: string;
  /**
   * The tenant its route named (many schools on one endpoint): the worker verifies it with that
   * tenant's secrets, and the job is named by the tenant and the key together (`deliveryKeyOf`).
   */
  tenant?: string | undefined;
  /** When the receiver stored it, ISO 8601. */
  receivedAt: string;
  /** The trace context of the delivery, when the receiver has telemetry. */
  trace?: TraceCarrier | undefined;
}

/**
 * Where `createReceiver({ inbox })` stores each verified delivery before answering 202 `queued`.
 * Implement it to plug in another engine (SQS, Cloudflare Queues); its workers hand
 * each stored delivery to `receiver.processStored()`.
 *
 * @example
 * ```ts
 * const sqsInbox: Inbox = {
 *   async enqueue(delivery) {
 *     await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: JSON.stringify(delivery),
 *       MessageDeduplicationId: delivery.idempotencyKey, MessageGroupId: delivery.event }));
 *   },
 * };
 * ```
 */
export interface Inbox {
  /**
   * Store one delivery durably: resolve once it is, reject otherwise. It must settle within a
   * bounded time (the platform waits 15 s for the answer), and storing the same idempotencyKey
   * twice must keep one job.
   */
  enqueue(delivery: StoredDelivery): Promise<void>;
}

/** What a worker's run of one stored delivery came to (see `receiver.processStored`). */
export interface StoredRunResult {
  /** processed, duplicate or ignored when it succeeded; otherwise what failed. */
  outcome: Outcome;
  /** True when the run succeeded (or had nothing left to do): the job is done. */
  ok: boolean;
  /** For a failure: whether a later run may succeed (false: dead-letter it at once). */
  retry: boolean;
  /** For a failure: `outcome: message`, naming the first issue of an invalid payload. */
  reason?: string;
}

/** Options of one run of a stored delivery. */
export interface StoredRunOptions {
  /** The attempt, 1-based; handlers see it as `ctx.attempt`. */
  attempt: number;
}
