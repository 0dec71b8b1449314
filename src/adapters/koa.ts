/**
 * The Koa adapter: a middleware that answers webhook deliveries on its path.
 * @module schoolhooks/koa
 */

import type { Context, Middleware } from 'koa';
import { defineAdapter } from './adapter-kit.js';
import { nodeBodyReader } from '../receiving/request.js';
import type { Receiver, WebhookRequest } from '../receiving/receiver.js';

/** Options of {@link koaMiddleware}. */
export interface KoaMiddlewareOptions {
  /** The only path answered, query string aside; others go to the next middleware. Default: every path. */
  path?: string;
  /**
   * The tenant the request names, when one endpoint serves many schools (docs/tenants.md);
   * required when the receiver's `secret` is a lookup.
   *
   * @example
   * ```ts
   * // with @koa/router
   * router.post('/webhooks/school/:tenant', koaMiddleware(receiver, { tenant: (ctx) => ctx.params.tenant }));
   * ```
   */
  tenant?: ((ctx: Context) => string | undefined) | undefined;
}

const koaAdapter = defineAdapter<[Context], void>({
  rawBodyFix:
    'mount koaMiddleware before any body parser, or use a parser that keeps the raw text as ' +
    'ctx.request.rawBody (@koa/bodyparser, koa-bodyparser)',
  method: (ctx) => ctx.method,
  headers: (ctx) => ctx.headers,
  body: rawBodyOf,
  write: ({ status, body }, headers, ctx) => {
    ctx.status = status;
    ctx.set(headers);
    ctx.body = body;
  },
});

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
export function koaMiddleware(
  receiver: Receiver,
  { path, tenant }: KoaMiddlewareOptions = {},
): Middleware {
  const answer = koaAdapter(receiver, { tenant });
  if (path === undefined) return answer;
  return function schoolhooksKoaMiddleware(ctx, next) {
    return ctx.path === path ? answer(ctx) : next();
  };
}

function rawBodyOf(ctx: Context): WebhookRequest['body'] {
  // A body parser's copy of the raw text: the bytes as sent, once more encoded as UTF-8.
  const { rawBody } = ctx.request as { rawBody?: unknown };
  if (typeof rawBody === 'string' || rawBody instanceof Uint8Array) return rawBody;
  // No parser ran: read the stream. If one consumed it, the reader says so (body_unavailable).
  return nodeBodyReader(ctx.req);
}
