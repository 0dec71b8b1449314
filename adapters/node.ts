/**
 * The node:http adapter: a request listener for `http.createServer`, `https.createServer` or any
 * server that hands out Node's request and response objects.
 * @module schoolhooks/node
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { nodeBodyReader } from '../src/body.js';
import { sendJson } from './json-answer.js';
import type { Receiver } from '../src/receiver.js';

/** Options of {@link nodeListener}. */
export interface NodeListenerOptions {
  /** The only path answered, query string aside; any other is answered 404. Default: every path. */
  path?: string;
}

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
  { path }: NodeListenerOptions = {},
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const withQuery = `${path}?`;
  return async function schoolhooksListener(req, res) {
    const url = req.url ?? '';
    if (path !== undefined && url !== path && !url.startsWith(withQuery)) {
      return sendJson(res, 404, { ok: false, error: 'not_found' });
    }
    const { status, body } = await receiver.handle({
      method: req.method,
      headers: req.headers,
      body: nodeBodyReader(req),
    });
    sendJson(res, status, body);
  };
}
