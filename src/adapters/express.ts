/**
 * The Express adapter: a middleware that answers webhook deliveries on its route.
 * @module schoolhooks/express
 */

import type { Request, RequestHandler, Response } from 'express';
import { defineAdapter, sendJson, type AdapterOptions } from './adapter-kit.js';
import { nodeBodyReader } from '../receiving/request.js';
import type { Receiver, WebhookRequest } from '../receiving/receiver.js';

/** What body parsers leave on a request; `rawBody` is set by {@link rawBodySaver}. */
interface ParsedRequest {
  body?: unknown;
  rawBody?: unknown;
}

/** Options of {@link expressMiddleware}. */
export interface ExpressMiddlewareOptions {
  /**
   * The tenant the route names, when one endpoint serves many schools (docs/tenants.md); required
   * when the receiver's `secret` is a lookup. Express 5 types `req.params` values as
   * `string | string[]` (a `*wildcard` is a list): a list names no tenant (404 `unknown_tenant`).
   *
   * @example
   * ```ts
   * app.post('/webhooks/school/:tenant', expressMiddleware(receiver, { tenant: (req) => req.params.tenant }));
   * ```
   */
  tenant?: ((req: Request) => string | readonly string[] | undefined) | undefined;
}

const expressAdapter = defineAdapter<[Request, Response], void>({
  rawBodyFix:
    'mount expressMiddleware before express.json(), or keep the raw bytes: ' +
    "express.json({ verify: rawBodySaver }) with rawBodySaver from 'schoolhooks/express', " +
    "or express.raw({ type: 'application/json' }) on the webhook route",
  method: (req) => req.method,
  headers: (req) => req.headers,
  body: rawBodyOf,
  write: ({ status, body }, headers, _req, res) => sendJson(res, status, headers, body),
});

/**
 * Answer webhook deliveries on an Express route. Mount it before any JSON body parser, or keep
 * the raw bytes with {@link rawBodySaver}: the signature covers the bytes as sent, so a body that
 * was parsed and thrown away is answered 500 `body_unavailable` (and a ConfigError naming the fix
 * goes to onError), never verified against a re-serialisation.
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { createReceiver } from 'schoolhooks';
 * import { expressMiddleware } from 'schoolhooks/express';
 *
 * const receiver = createReceiver({ secret: process.env.SCHOOL_WEBHOOK_SECRET! });
 * receiver.on('PaymentCompleted', async (event) => grantAccess(event.data.payment));
 *
 * const app = express();
 * app.post('/webhooks/school', expressMiddleware(receiver)); // before app.use(express.json())
 * app.use(express.json());
 * ```
 */
export function expressMiddleware(
  receiver: Receiver,
  options?: ExpressMiddlewareOptions,
): RequestHandler {
  // A list goes through as it is: the receiver takes only a string as a tenant.
  return expressAdapter(receiver, options as AdapterOptions<[Request, Response]>);
}

/**
 * The `verify` option of `express.json()` for apps that parse JSON before the webhook route: it
 * keeps the raw bytes as `req.rawBody`, which {@link expressMiddleware} then verifies.
 *
 * @example
 * ```ts
 * app.use(express.json({ verify: rawBodySaver }));
 * app.post('/webhooks/school', expressMiddleware(receiver));
 * ```
 */
export function rawBodySaver(req: object, _res: unknown, buf: Uint8Array): void {
  (req as ParsedRequest).rawBody = buf;
}

function rawBodyOf(req: Request): WebhookRequest['body'] {
  const { rawBody, body } = req as ParsedRequest;
  if (rawBody instanceof Uint8Array) return rawBody; // express.json({ verify: rawBodySaver })
  if (body instanceof Uint8Array) return body; // express.raw({ type: 'application/json' })
  // No parser ran: read the stream. If one consumed it, the reader says so (body_unavailable).
  return nodeBodyReader(req);
}
