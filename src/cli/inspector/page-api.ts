/**
 * What the inspector's endpoints send its page, as types: the server builds these values and the
 * page script (`assets/inspector.js`, checked with `// @ts-check` by `tsconfig.inspector.json`)
 * reads them through the same types, so a field renamed on one side is a type error on the other.
 * This module imports nothing but the outcome table's types: the page is checked against the DOM
 * alone, without Node's types.
 * @module
 */

import type { Outcome, OutcomeClass } from '../../receiving/outcome.js';

/** Where a delivery came from. */
export type DeliverySource = 'http' | 'replay' | 'fixture';

/** One issue of a payload that failed its schema, at its path inside `data`. */
export interface InspectorIssue {
  path: (string | number)[];
  code: string;
  message: string;
}

/** What the list (and each server-sent event) says about a delivery. */
export interface DeliverySummary {
  id: number;
  receivedAt: string;
  durationMs: number;
  source: DeliverySource;
  replayOf?: number;
  status: number;
  outcome: Outcome;
  outcomeClass: OutcomeClass;
  event?: string;
  idempotencyKey?: string;
  /** The tenant the delivery's path named, when the receiver serves one tenant per path. */
  tenant?: string;
}

/** A failure reported to onError, as the page shows it. */
export interface ShownError {
  code: string;
  message: string;
}

/** `GET api/deliveries/:id`: one opened delivery. */
export interface DeliveryView extends DeliverySummary {
  method: string;
  path: string;
  /** The request headers; `signature` shortened, credentials of other systems hidden. */
  headers: Record<string, string>;
  /** The raw body decoded as UTF-8, or null when the receiver never read it. */
  body: string | null;
  bodyBytes: number;
  issues: InspectorIssue[];
  errors: ShownError[];
  /** For a 401: why the signature may have failed. Otherwise empty. */
  causes: string[];
  /** Whether the stored bytes can go through the receiver again (not a cut-off 413 body). */
  canReplay: boolean;
  /** A shell command that sends the same bytes to `origin`, signed in the shell that runs it. */
  curl: string;
}

/** `GET api/info`: where the receiver listens and which fixtures the page can send. */
export interface InspectorInfo {
  /** The receiver's path; with tenants, the path each tenant's own is below. */
  receiverPath: string;
  keep: number;
  fixtures: string[];
  /** The tenants' names (never their secrets), when the receiver serves one tenant per path. */
  tenants?: string[];
}

/** `GET api/deliveries` and the stream's `reset` event: every kept delivery, newest first. */
export interface DeliveryList {
  keep: number;
  deliveries: DeliverySummary[];
}

/**
 * What the page reads of the answer to `POST api/send` and `POST api/deliveries/:id/replay` when
 * the delivery went through (the server adds the receiver's answer body as `result`).
 */
export interface ActionDone {
  ok: true;
  delivery: DeliverySummary;
}

/** Any endpoint that refused or found nothing: a stable error code. */
export interface ActionRefused {
  ok: false;
  error: string;
}

/**
 * `GET api/health`: the receiver's health as its watchdog reads it (docs/watchdog.md), for the
 * banner; with tenants, the worst of theirs. Counts and times only.
 */
export interface InspectorHealth {
  status: 'ok' | 'at_risk' | 'failing' | 'silent';
  /** How many deliveries were answered non-2xx and are still retried by the platform. */
  atRisk: number;
  /** When the platform disables the endpoint unless a delivery succeeds (ISO date). */
  disablesAt?: string;
  /** The last delivery answered 2xx (ISO date). */
  lastSuccessAt?: string;
}
