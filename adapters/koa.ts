/**
 * The Koa adapter: a middleware that answers webhook deliveries on its path.
 * @module schoolhooks/koa
 */

import type { Context, Middleware } from 'koa';
import { nodeBodyReader } from '../src/body.js';
import { answerHeaders } from './json-answer.js';
import type { Receiver, WebhookRequest } from '../src/receiver.js';

/** Options of {@link koaMiddleware}. */
export interface KoaMiddlewareOptions {
  /** The only path answered, query string aside; others go to the next middleware. Default: every path. */
  path?: string;
}

/**
 * Answer webhook deliveries in a Koa app, before or after a body parser. Before one, it reads the
 * request stream, never past `maxBodyBytes`. After one, it verifies `ctx.request.rawBody` when the
 * parser kept the raw text there (`@koa/bodyparser` and `koa-bodyparser` do); a body parsed and
 * not kept is answered 500 `body_unavailable`, never verified against a re-serialisation.
 *
 * @example
 * ```ts
 * import Koa from 'koa';
 * import { createReceiver } from 'schoolhooks';
 * import { koaMiddleware } from 'schoolhooks/koa';
 *
 * const receiver = createReceiver({ secret: process.env.SCHOOL_WEBHOOK_SECRET! });
 * receiver.on('PaymentCompleted', async (event) => grantAccess(event.data.payment));
 *
 * const app = new Koa();
 * app.use(koaMiddleware(receiver, { path: '/webhooks/school' }));
 * ```
 */
export function koaMiddleware(receiver: Receiver, { path }: KoaMiddlewareOptions = {}): Middleware {
  return async function schoolhooksKoaMiddleware(ctx, next) {
    if (path !== undefined && ctx.path !== path) return next();
    const { status, body } = await receiver.handle({
      method: ctx.method,
      headers: ctx.headers,
      body: rawBodyOf(ctx),
    });
    ctx.status = status;
    ctx.set(answerHeaders(status));
    ctx.body = body;
  };
}

function rawBodyOf(ctx: Context): WebhookRequest['body'] {
  // A body parser's copy of the raw text: the bytes as sent, once more encoded as UTF-8.
  const { rawBody } = ctx.request as { rawBody?: unknown };
  if (typeof rawBody === 'string' || rawBody instanceof Uint8Array) return rawBody;
  // No parser ran: read the stream. If one consumed it, the reader says so (body_unavailable).
  return nodeBodyReader(ctx.req);
}
