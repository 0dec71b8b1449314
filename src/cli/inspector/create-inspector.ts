/**
 * The inspector of `schoolhooks listen --ui`: records every delivery the receiver answers, and
 * serves a page and its JSON endpoints below `/_schoolhooks/` on the receiver's own server.
 * @module
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { PayloadValidationError, SignatureError } from '../../errors.js';
import { FIXED_CONTRACT_EVENTS, isFixedContractEvent } from '../../events/index.js';
import type { Receiver, WebhookRequest, WebhookResult } from '../../receiver.js';
import type { RawBody } from '../../signature.js';
import { createDelivery } from '../../testing/create-delivery.js';
import { loadInspectorAssets } from './assets.js';
import {
  createDeliveryLog,
  summarize,
  type DeliveryLog,
  type DeliverySummary,
  type DeliverySource,
  type InspectorIssue,
  type ReportedError,
  type RecordedDelivery,
} from './delivery-log.js';
import { viewOf } from './delivery-view.js';
import { checkRequest, sendGuardedJson, SECURITY_HEADERS } from './guard.js';

/** Where the page and its endpoints live, on the receiver's port. */
export const INSPECTOR_PREFIX = '/_schoolhooks';

/** True for a request URL the inspector answers rather than the receiver. */
export function isInspectorPath(url: string): boolean {
  return url === INSPECTOR_PREFIX || url.startsWith(`${INSPECTOR_PREFIX}/`);
}

/** Options of {@link createInspector}. */
export interface InspectorOptions {
  /** The receiver deliveries go through; the inspector listens to its onError. */
  receiver: Receiver;
  /** The secrets, only to sign the fixtures the page sends (the first one). Never shown. */
  secrets: readonly string[];
  /** How many deliveries are kept in memory. Default 500. */
  keep?: number;
  /** The path fixtures sent from the page are recorded under. Default `/`. */
  receiverPath?: string;
}

/** Where a request to the receiver came from, as the inspector records it. */
export interface RecordingMeta {
  path: string;
  source?: DeliverySource;
  replayOf?: number;
}

/** What {@link createInspector} returns. */
export interface Inspector {
  /** The deliveries kept. */
  readonly log: DeliveryLog;
  /** The receiver for one request: the same answers, each recorded in the log. */
  recording(meta: RecordingMeta): Receiver;
  /** Answer a request whose URL {@link isInspectorPath} accepts. */
  serve(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** End the live streams, so the server can close. */
  close(): void;
}

/** What onError reported while one delivery was being answered. */
interface Pending {
  issues: InspectorIssue[];
  errors: ReportedError[];
  stored?: RecordedDelivery;
}

/**
 * An inspector of `receiver`'s deliveries.
 *
 * @example
 * ```ts
 * const inspector = createInspector({ receiver, secrets });
 * createServer((req, res) =>
 *   isInspectorPath(req.url ?? '/')
 *     ? void inspector.serve(req, res)
 *     : void nodeListener(inspector.recording({ path: req.url ?? '/' }))(req, res),
 * );
 * ```
 */
export function createInspector({
  receiver,
  secrets,
  keep = 500,
  receiverPath = '/',
}: InspectorOptions): Inspector {
  const assets = loadInspectorAssets();
  const log = createDeliveryLog({ keep });
  const streams = new Set<ServerResponse>();
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

  /** Run `request` through the receiver and store what it was answered. */
  async function answer(
    { path, source = 'http', replayOf }: RecordingMeta,
    request: WebhookRequest,
  ): Promise<{ result: WebhookResult; delivery: DeliverySummary }> {
    const started = Date.now();
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
    if (envelope.event !== undefined) delivery.event = envelope.event;
    const key = result.body.idempotencyKey ?? envelope.idempotencyKey;
    if (key !== undefined) delivery.idempotencyKey = key;
    pending.stored = log.add(delivery);
    return { result, delivery: summarize(pending.stored) };
  }

  function recording(meta: RecordingMeta): Receiver {
    return {
      ...receiver,
      maxBodyBytes: receiver.maxBodyBytes,
      handle: async (request) => (await answer(meta, request)).result,
    };
  }

  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => Promise<void>> = {
    'GET /api/info': async (_req, res) =>
      sendGuardedJson(res, 200, { receiverPath, keep, fixtures: [...FIXED_CONTRACT_EVENTS] }),
    'GET /api/deliveries': async (_req, res) =>
      sendGuardedJson(res, 200, { keep, deliveries: log.summaries() }),
    'GET /api/stream': async (req, res) => stream(req, res),
    'POST /api/send': async (req, res) => {
      const event = (await readJson(req))?.event;
      if (typeof event !== 'string' || !isFixedContractEvent(event)) {
        return sendGuardedJson(res, 400, { ok: false, error: 'unknown_fixture' });
      }
      // Signed here, with the receiver's own first secret: the page never sees it.
      const signed = createDelivery(event, undefined, { secret: secrets[0] ?? '' });
      const { result, delivery } = await answer(
        { path: receiverPath, source: 'fixture' },
        { method: 'POST', headers: signed.headers, body: signed.body },
      );
      sendGuardedJson(res, 200, { ok: true, result: result.body, delivery });
    },
  };

  async function serveDelivery(
    req: IncomingMessage,
    res: ServerResponse,
    id: number,
    action: string | undefined,
  ): Promise<void> {
    const delivery = log.get(id);
    if (!delivery) return sendGuardedJson(res, 404, { ok: false, error: 'not_kept' });
    if (action === undefined && req.method === 'GET') {
      return sendGuardedJson(
        res,
        200,
        viewOf(delivery, `http://${req.headers.host ?? 'localhost'}`),
      );
    }
    if (action === 'replay' && req.method === 'POST') {
      if (delivery.body === undefined || delivery.outcome === 'too_large') {
        return sendGuardedJson(res, 409, { ok: false, error: 'no_body_to_replay' });
      }
      const replayed = await answer(
        { path: delivery.path, source: 'replay', replayOf: id },
        { method: delivery.method, headers: delivery.headers, body: delivery.body },
      );
      return sendGuardedJson(res, 200, {
        ok: true,
        result: replayed.result.body,
        delivery: replayed.delivery,
      });
    }
    sendGuardedJson(res, 405, { ok: false, error: 'method_not_allowed' });
  }

  function stream(req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      connection: 'keep-alive',
    });
    const send = (event: string, data: unknown): void =>
      void res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    // The whole list first, then each change: a reconnecting page starts again from the truth.
    res.write('retry: 1000\n\n');
    send('reset', { keep, deliveries: log.summaries() });
    const stop = log.subscribe(send);
    const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
    ping.unref();
    streams.add(res);
    req.once('close', () => {
      stop();
      clearInterval(ping);
      streams.delete(res);
    });
  }

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://inspector');
    if (url.pathname === INSPECTOR_PREFIX) {
      res.writeHead(308, { location: `${INSPECTOR_PREFIX}/` });
      return void res.end();
    }
    const refusal = checkRequest(req);
    if (refusal) return sendGuardedJson(res, refusal.status, { ok: false, error: refusal.error });
    const path = url.pathname.slice(INSPECTOR_PREFIX.length);
    const asset = assets.get(path === '/' ? 'index.html' : path.slice(1));
    if (asset && (req.method === 'GET' || req.method === 'HEAD')) {
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        'content-type': asset.type,
        'content-length': Buffer.byteLength(asset.content),
      });
      return void res.end(req.method === 'HEAD' ? undefined : asset.content);
    }
    const route = routes[`${req.method} ${path}`];
    if (route) return route(req, res);
    const one = /^\/api\/deliveries\/(\d+)(?:\/(replay))?$/.exec(path);
    if (one) return serveDelivery(req, res, Number(one[1]), one[2]);
    sendGuardedJson(res, 404, { ok: false, error: 'not_found' });
  }

  return {
    log,
    recording,
    serve,
    close() {
      for (const res of streams) res.end();
      streams.clear();
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

/** The JSON body of a small request, or undefined. */
async function readJson(req: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  let text = '';
  for await (const chunk of req) {
    text += String(chunk);
    if (text.length > 4096) return undefined;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
