/**
 * The Fastify adapter: a plugin that answers webhook deliveries on its route.
 * @module schoolhooks/fastify
 */

import type { FastifyPluginAsync } from 'fastify';
import { nodeBodyReader } from '../src/body.js';
import { answerHeaders } from './json-answer.js';
import type { Receiver } from '../src/receiver.js';

/** Options of {@link schoolhooksPlugin}. */
export interface SchoolhooksPluginOptions {
  /** The receiver that answers each delivery. */
  receiver: Receiver;
  /** The route's path, e.g. `/webhooks/school`. */
  path: string;
}

/**
 * Answer webhook deliveries on a Fastify route. The plugin is encapsulated: inside it, the
 * request stream reaches the route unparsed (the signature covers the bytes as sent), read only
 * once the method and content type passed and never past `maxBodyBytes`; the app's other routes
 * keep Fastify's JSON parsing and body limit.
 *
 * @example
 * ```ts
 * import Fastify from 'fastify';
 * import { createReceiver } from 'schoolhooks';
 * import { schoolhooksPlugin } from 'schoolhooks/fastify';
 *
 * const receiver = createReceiver({ secret: process.env.SCHOOL_WEBHOOK_SECRET! });
 * receiver.on('PaymentCompleted', async (event) => grantAccess(event.data.payment));
 *
 * const app = Fastify();
 * await app.register(schoolhooksPlugin, { receiver, path: '/webhooks/school' });
 * ```
 */
export const schoolhooksPlugin: FastifyPluginAsync<SchoolhooksPluginOptions> =
  async function schoolhooksPlugin(app, { receiver, path }) {
    // This scope only: every content type is left unread, for the receiver to judge and read.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_request, _payload, done) => done(null));
    app.all(path, async function schoolhooksRoute(request, reply) {
      const { status, body } = await receiver.handle({
        method: request.method,
        headers: request.headers,
        body: nodeBodyReader(request.raw),
      });
      return reply.code(status).headers(answerHeaders(status)).send(JSON.stringify(body));
    });
  };
