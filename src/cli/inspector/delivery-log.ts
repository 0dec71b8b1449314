/**
 * The inspector's memory: the last `keep` deliveries, in memory only, and what the page is told
 * about each one. Nothing here ever holds a secret; a delivery's signature is kept whole (replay
 * needs it) but only shown shortened.
 * @module
 */

import { OUTCOMES, type Outcome, type OutcomeClass } from '../../receiving/outcome.js';
import type { SignatureFailureReason } from '../../platform/signature-failure.js';
import type { DeliverySource, DeliverySummary, InspectorIssue } from './page-api.js';
import { INSPECTOR_DEFAULTS } from '../../defaults.js';

export type { OutcomeClass };
export type { DeliverySource, DeliverySummary, InspectorIssue };

/** One failure the receiver reported to onError while answering a delivery. */
export interface ReportedError {
  code: string;
  message: string;
  /** For `invalid_signature`: why (`SignatureError.reason`). */
  reason?: SignatureFailureReason;
}

/** A delivery as the inspector stores it. */
export interface RecordedDelivery {
  id: number;
  receivedAt: string;
  durationMs: number;
  source: DeliverySource;
  replayOf?: number;
  method: string;
  /** The request's path and query, as received. */
  path: string;
  /** Every request header, lowercased, the signature whole. */
  headers: Record<string, string>;
  /** The raw bytes the receiver read; undefined when it never read them (405, 415). */
  body: Uint8Array | undefined;
  status: number;
  outcome: Outcome;
  event?: string;
  idempotencyKey?: string;
  /** The tenant the request named (its path), when the receiver serves one tenant per path. */
  tenant?: string;
  issues: InspectorIssue[];
  errors: ReportedError[];
}

/** Told of each delivery added, and of one updated (a failure reported after the answer). */
export type DeliveryListener = (kind: 'delivery' | 'update', summary: DeliverySummary) => void;

/** The last deliveries, oldest first, at most `keep` of them. */
export interface DeliveryLog {
  readonly keep: number;
  /** Store a delivery, giving it the next id; the oldest goes once there are more than `keep`. */
  add(delivery: Omit<RecordedDelivery, 'id'>): RecordedDelivery;
  /** Tell listeners that a stored delivery changed. */
  touch(delivery: RecordedDelivery): void;
  get(id: number): RecordedDelivery | undefined;
  /** Every kept delivery's summary, newest first. */
  summaries(): DeliverySummary[];
  /** Listen for changes; returns the function that stops listening. */
  subscribe(listener: DeliveryListener): () => void;
}

/** The class an outcome is coloured by (the outcome table's `class`). */
export function outcomeClass(outcome: Outcome): OutcomeClass {
  return OUTCOMES[outcome].class;
}

/** The summary of a stored delivery. */
export function summarize(delivery: RecordedDelivery): DeliverySummary {
  const { id, receivedAt, durationMs, source, replayOf, status, outcome } = delivery;
  const summary: DeliverySummary = {
    id,
    receivedAt,
    durationMs,
    source,
    status,
    outcome,
    outcomeClass: outcomeClass(outcome),
  };
  if (replayOf !== undefined) summary.replayOf = replayOf;
  if (delivery.event !== undefined) summary.event = delivery.event;
  if (delivery.idempotencyKey !== undefined) summary.idempotencyKey = delivery.idempotencyKey;
  if (delivery.tenant !== undefined) summary.tenant = delivery.tenant;
  return summary;
}

/**
 * A log of the last `keep` deliveries, in memory.
 *
 * @example
 * ```ts
 * const log = createDeliveryLog({ keep: 500 });
 * const stop = log.subscribe((kind, summary) => send(kind, summary));
 * ```
 */
export function createDeliveryLog({
  keep = INSPECTOR_DEFAULTS.keep,
}: { keep?: number } = {}): DeliveryLog {
  const deliveries = new Map<number, RecordedDelivery>();
  const listeners = new Set<DeliveryListener>();
  let nextId = 1;

  function tell(kind: 'delivery' | 'update', delivery: RecordedDelivery): void {
    const summary = summarize(delivery);
    for (const listener of listeners) listener(kind, summary);
  }

  return {
    keep,
    add(delivery) {
      const stored: RecordedDelivery = { ...delivery, id: nextId++ };
      deliveries.set(stored.id, stored);
      // A Map iterates in insertion order: the first key is the oldest delivery.
      while (deliveries.size > keep) {
        const oldest = deliveries.keys().next().value;
        if (oldest === undefined) break;
        deliveries.delete(oldest);
      }
      tell('delivery', stored);
      return stored;
    },
    touch(delivery) {
      if (deliveries.get(delivery.id) === delivery) tell('update', delivery);
    },
    get: (id) => deliveries.get(id),
    summaries: () => [...deliveries.values()].reverse().map(summarize),
    subscribe(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
  };
}
