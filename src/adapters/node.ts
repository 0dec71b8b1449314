/**
 * The node:http adapter: a request listener for `http.createServer`, `https.createServer` or any
 * server that hands out Node's request and response objects.
 * @module schoolhooks/node
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { answerHeaders, defineAdapter, sendJson } from './adapter-kit.js';
import { nodeBodyReader } from '../receiving/request.js';
import type { Receiver } from '../receiving/receiver.js';

/** Options of {@link nodeListener}. */
export interface NodeListenerOptions {
  /** The only path answered, query string aside; any other is answered 404. Default: every path. */
  path?: string;
  /**
   * The tenant the request names, when one endpoint serves many schools (docs/tenants.md);
   * required when the receiver's `secret` is a lookup.
   *
   * @example
   * ```ts
   * // /webhooks/school/<tenant>
   * nodeListener(receiver, { tenant: (req) => req.url?.split('?')[0]?.split('/')[3] });
   * ```
   */
  tenant?: ((req: IncomingMessage) => string | undefined) | undefined;
}

const nodeAdapter = defineAdapter<[IncomingMessage, ServerResponse], void>({
  rawBodyFix:
    'let nothing read the request stream before nodeListener (a body parser, a `data` listener); ' +
    'on a Next.js Pages Router route, export const config = { api: { bodyParser: false } }',
  method: (req) => req.method,
  headers: (req) => req.headers,
  body: (req) => nodeBodyReader(req),
  write: ({ status, body }, headers, _req, res) => sendJson(res, status, headers, body),
});

const ANSWERED = Promise.resolve();

/**
 * Answer webhook deliveries with a node:http request listener.
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http';
 * import { createReceiver } from 'schoolhooks';
 * import { nodeListener } from 'schoolhooks/node';
 *
 * const receiver = createReceiver({ secret: process.env.SCHOOL_WEBHOOK_SECRET! });
 * receiver.on('CourseCompleted', async (event) => congratulate(event.data.user));
 *
 * createServer(nodeListener(receiver, { path: '/webhooks/school' })).listen(3000);
 * ```
 */
export function nodeListener(
  receiver: Receiver,
  { path, tenant }: NodeListenerOptions = {},
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const answer = nodeAdapter(receiver, { tenant });
  if (path === undefined) return answer;
  const withQuery = `${path}?`;
  return function schoolhooksListener(req, res) {
    const url = req.url ?? '';
    if (url === path || url.startsWith(withQuery)) return answer(req, res);
    sendJson(res, 404, answerHeaders(404), { ok: false, error: 'not_found' });
    return ANSWERED;
  };
}
