/**
 * The inspector's recording of deliveries: each request goes through the receiver as it would
 * anyway, and what it was answered, with the payload issues and failures `onError` reported
 * while answering it, is stored in the delivery log.
 * @module
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import type { PayloadValidationError, SignatureError } from '../../errors.js';
import {
  readTenant,
  type Receiver,
  type WebhookRequest,
  type WebhookResult,
} from '../../receiving/receiver.js';
import type { RawBody } from '../../platform/signature.js';
import {
  summarize,
  type DeliveryLog,
  type DeliverySummary,
  type InspectorIssue,
  type RecordedDelivery,
  type ReportedError,
} from './delivery-log.js';
import type { DeliverySource } from './page-api.js';

/** Where a request to the receiver came from, as the inspector records it. */
export interface RecordingMeta {
  path: string;
  source?: DeliverySource;
  replayOf?: number;
}

/** What {@link createDeliveryRecorder} returns. */
export interface DeliveryRecorder {
  /** Run `request` through the receiver and store what it was answered. */
  answer(
    meta: RecordingMeta,
    request: WebhookRequest,
  ): Promise<{ result: WebhookResult; delivery: DeliverySummary }>;
  /** The receiver for one request: the same answers, each recorded in the log. */
  recording(meta: RecordingMeta): Receiver;
}

/** What onError reported while one delivery was being answered. */
interface Pending {
  issues: InspectorIssue[];
  errors: ReportedError[];
  stored?: RecordedDelivery;
}

/** A recorder of `receiver`'s answers into `log`; it registers an onError of its own. */
export function createDeliveryRecorder(receiver: Receiver, log: DeliveryLog): DeliveryRecorder {
  // onError is not told which delivery it is about: the delivery's async context is.
  const answering = new AsyncLocalStorage<Pending>();

  receiver.onError((error) => {
    const pending = answering.getStore();
    if (!pending) return;
    // By code, not instanceof: the receiver may come from another copy of the package.
    if (error.code === 'invalid_payload' && 'issues' in error) {
      for (const issue of (error as PayloadValidationError).issues) {
        pending.issues.push({
          path: issue.path.map((key) => (typeof key === 'number' ? key : String(key))),
          code: issue.code,
          message: issue.message,
        });
      }
    }
    const reported: ReportedError = { code: error.code, message: error.message };
    if (error.code === 'invalid_signature' && 'reason' in error) {
      reported.reason = (error as SignatureError).reason;
    }
    pending.errors.push(reported);
    // A failure after the answer (a handler that went on past the timeout) updates the row.
    if (pending.stored) log.touch(pending.stored);
  });

  async function answer(
    { path, source = 'http', replayOf }: RecordingMeta,
    request: WebhookRequest,
  ): Promise<{ result: WebhookResult; delivery: DeliverySummary }> {
    const started = Date.now();
    // Read once here: the row shows it, and the receiver gets the string.
    request = { ...request, tenant: readTenant(request.tenant) };
    let raw: RawBody | undefined;
    const { body } = request;
    if (typeof body === 'function') {
      request = { ...request, body: async (limit: number) => (raw = await body(limit)) };
    } else if (typeof body === 'string' || body instanceof Uint8Array) {
      raw = body;
    }
    const pending: Pending = { issues: [], errors: [] };
    const result = await answering.run(pending, () => receiver.handle(request));
    const bytes = typeof raw === 'string' ? new TextEncoder().encode(raw) : raw;
    const envelope = envelopeOf(bytes);
    const delivery: Omit<RecordedDelivery, 'id'> = {
      receivedAt: new Date(started).toISOString(),
      durationMs: Date.now() - started,
      source,
      method: request.method ?? 'POST',
      path,
      headers: plainHeaders(request.headers),
      // A copy: the bytes of a replay or a reused buffer must not change under the log.
      body: bytes === undefined ? undefined : Uint8Array.from(bytes),
      status: result.status,
      outcome: result.outcome,
      issues: pending.issues,
      errors: pending.errors,
    };
    if (replayOf !== undefined) delivery.replayOf = replayOf;
    if (typeof request.tenant === 'string') delivery.tenant = request.tenant;
    if (envelope.event !== undefined) delivery.event = envelope.event;
    const key = result.body.idempotencyKey ?? envelope.idempotencyKey;
    if (key !== undefined) delivery.idempotencyKey = key;
    pending.stored = log.add(delivery);
    return { result, delivery: summarize(pending.stored) };
  }

  return {
    answer,
    recording(meta) {
      return {
        ...receiver,
        maxBodyBytes: receiver.maxBodyBytes,
        handle: async (request) => (await answer(meta, request)).result,
      };
    },
  };
}

/** The event name and idempotencyKey of a body, when it is a JSON object that names them. */
function envelopeOf(bytes: Uint8Array | undefined): { event?: string; idempotencyKey?: string } {
  if (bytes === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return {};
  }
  if (typeof parsed !== 'object' || parsed === null) return {};
  const { event, idempotencyKey } = parsed as Record<string, unknown>;
  const found: { event?: string; idempotencyKey?: string } = {};
  if (typeof event === 'string') found.event = event;
  if (typeof idempotencyKey === 'string') found.idempotencyKey = idempotencyKey;
  return found;
}

/** Any header input as a plain object of lowercased names. */
function plainHeaders(headers: WebhookRequest['headers']): Record<string, string> {
  const plain: Record<string, string> = {};
  if (typeof (headers as { forEach?: unknown }).forEach === 'function' && !Array.isArray(headers)) {
    (headers as Headers).forEach((value, name) => (plain[name.toLowerCase()] = value));
    return plain;
  }
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === 'string') plain[name.toLowerCase()] = value;
    else if (Array.isArray(value)) plain[name.toLowerCase()] = value.join(', ');
  }
  return plain;
}
