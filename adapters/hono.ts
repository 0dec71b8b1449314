/**
 * The Hono adapter: a route handler, on every runtime Hono runs on.
 * @module schoolhooks/hono
 */

import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { fetchRequestInput } from './fetch-request-input.js';
import { closingHeaders } from './json-answer.js';
import type { Receiver } from '../src/receiver.js';

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
export function honoHandler(receiver: Receiver): (c: Context) => Promise<Response> {
  return async function schoolhooksHonoHandler(c) {
    // On @hono/node-server, the Node request itself: no Fetch Request is built just to be read.
    const { status, body } = await receiver.handle(fetchRequestInput(c.req.raw, c.env));
    // Every status the receiver answers with carries a body. Hono sets the JSON content type
    // itself: naming it again would make two keys of one header, which Hono merges in a
    // `Headers` object, and @hono/node-server then writes the answer the slow way.
    return c.json(body, status as ContentfulStatusCode, closingHeaders(status));
  };
}
