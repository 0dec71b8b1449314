/**
 * The Hono adapter: a route handler, on every runtime Hono runs on.
 * @module schoolhooks/hono
 */

import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { defineAdapter } from './adapter-kit.js';
import { fetchRequestBody, fetchRequestHeaders } from './fetch-request-input.js';
import type { Receiver } from '../receiving/receiver.js';

/** Options of {@link honoHandler}. */
export interface HonoHandlerOptions {
  /**
   * The tenant the route names, when one endpoint serves many schools (docs/tenants.md); required
   * when the receiver's `secret` is a lookup.
   *
   * @example
   * ```ts
   * app.post('/webhooks/school/:tenant', honoHandler(receiver, { tenant: (c) => c.req.param('tenant') }));
   * ```
   */
  tenant?: ((c: Context) => string | undefined) | undefined;
}

const honoAdapter = defineAdapter<[Context], Response>({
  rawBodyFix:
    'route the webhook to honoHandler before any middleware that reads the body ' +
    '(c.req.json(), c.req.text(), a validator): the raw bytes can be read only once',
  method: (c) => c.req.method,
  // On @hono/node-server, the Node request itself: no Fetch Request is built just to be read.
  headers: (c) => fetchRequestHeaders(c.req.raw, c.env),
  body: (c) => fetchRequestBody(c.req.raw, c.env),
  // Every status the receiver answers with carries a body. `c.body` with the one content-type
  // header keeps the headers a plain object, which @hono/node-server writes the fast way
  // (`c.json` would add a `Content-Type` beside it, two keys Hono merges into a `Headers`).
  write: ({ status, body }, headers, c) =>
    c.body(JSON.stringify(body), status as ContentfulStatusCode, headers),
});

/**
 * Answer webhook deliveries on a Hono route. The raw bytes come from `c.req.raw` (on
 * @hono/node-server, from the Node request in `c.env.incoming`), read only once the method and
 * content type passed and never past `maxBodyBytes`; a body already read by an
 * earlier middleware (`c.req.json()`) is answered 500 `body_unavailable`, never re-serialised.
 *
 * @example
 * ```ts
 * import { Hono } from 'hono';
 * import { createReceiver } from 'schoolhooks';
 * import { honoHandler } from 'schoolhooks/hono';
 *
 * const receiver = createReceiver({ secret: process.env.SCHOOL_WEBHOOK_SECRET! });
 * receiver.on('UserSignedUp', async (event) => welcome(event.data.user));
 *
 * const app = new Hono();
 * app.post('/webhooks/school', honoHandler(receiver));
 * ```
 */
export function honoHandler(
  receiver: Receiver,
  options?: HonoHandlerOptions,
): (c: Context) => Promise<Response> {
  return honoAdapter(receiver, options);
}
