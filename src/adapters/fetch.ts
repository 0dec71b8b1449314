/**
 * The Fetch API adapter: a `(request: Request) => Promise<Response>` handler for Bun, Deno,
 * Cloudflare Workers, Next.js route handlers and any server that speaks `Request`/`Response`.
 * @module schoolhooks/fetch
 */

import { defineAdapter } from './adapter-kit.js';
import { fetchRequestBody, fetchRequestHeaders } from './fetch-request-input.js';
import type { Receiver } from '../receiving/receiver.js';

/** Options of {@link fetchHandler}. */
export interface FetchHandlerOptions {
  /**
   * The tenant the request names, when one endpoint serves many schools (docs/tenants.md);
   * required when the receiver's `secret` is a lookup.
   *
   * @example
   * ```ts
   * // /webhooks/school/<tenant>
   * fetchHandler(receiver, { tenant: (request) => new URL(request.url).pathname.split('/')[3] });
   * ```
   */
  tenant?: ((request: Request, env?: unknown) => string | undefined) | undefined;
}

const fetchAdapter = defineAdapter<[request: Request, env?: unknown], Response>({
  rawBodyFix:
    "hand fetchHandler the Request before anything reads its body (request.json(), a framework's " +
    'body parser); if something must read it first, give it request.clone()',
  method: (request) => request.method,
  // On @hono/node-server (`serve({ fetch })`), `env.incoming` is the Node request itself.
  headers: fetchRequestHeaders,
  body: fetchRequestBody,
  write: ({ status, body }, headers) => new Response(JSON.stringify(body), { status, headers }),
});

/**
 * Answer webhook deliveries with a Fetch handler. The body is read from the `Request` only once
 * the method and content type passed, and never past `maxBodyBytes`. A second argument is
 * whatever the server passes next to the request (Workers' bindings, Next.js' context): on
 * @hono/node-server it carries the Node request, which is then read directly.
 *
 * @example
 * ```ts
 * import { createReceiver } from 'schoolhooks';
 * import { fetchHandler } from 'schoolhooks/fetch';
 *
 * const receiver = createReceiver({ secret: process.env.SCHOOL_WEBHOOK_SECRET! });
 * receiver.on('PaymentCompleted', async (event) => grantAccess(event.data.payment));
 *
 * // Next.js App Router: app/webhooks/school/route.ts
 * export const POST = fetchHandler(receiver);
 * // Bun: Bun.serve({ fetch: fetchHandler(receiver) }); Workers: export default { fetch: fetchHandler(receiver) }
 * ```
 */
export function fetchHandler(
  receiver: Receiver,
  options?: FetchHandlerOptions,
): (request: Request, env?: unknown) => Promise<Response> {
  return fetchAdapter(receiver, options);
}
