/**
 * The Fetch API adapter: a `(request: Request) => Promise<Response>` handler for Bun, Deno,
 * Cloudflare Workers, Next.js route handlers and any server that speaks `Request`/`Response`.
 * @module schoolhooks/fetch
 */

import { fetchRequestInput } from './fetch-request-input.js';
import { answerHeaders } from './json-answer.js';
import type { Receiver } from '../src/receiver.js';

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
): (request: Request, env?: unknown) => Promise<Response> {
  return async function schoolhooksFetchHandler(request, env) {
    // On @hono/node-server (`serve({ fetch })`), `env.incoming` is the Node request itself.
    const { status, body } = await receiver.handle(fetchRequestInput(request, env));
    return new Response(JSON.stringify(body), { status, headers: answerHeaders(status) });
  };
}
