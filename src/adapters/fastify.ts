/**
 * The Fastify adapter: a plugin that answers webhook deliveries on its route.
 * @module schoolhooks/fastify
 */

import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { defineAdapter } from './adapter-kit.js';
import { nodeBodyReader } from '../receiving/request.js';
import type { Receiver } from '../receiving/receiver.js';
import { checkParamLength } from './fastify-param-length.js';

/** Options of {@link schoolhooksPlugin}. */
export interface SchoolhooksPluginOptions {
  /** The receiver that answers each delivery. */
  receiver: Receiver;
  /** The route's path, e.g. `/webhooks/school` (or `/webhooks/school/:tenant`). */
  path: string;
  /**
   * The tenant the route names, when one endpoint serves many schools (docs/tenants.md); required
   * when the receiver's `secret` is a lookup. On a path with a parameter, the app's
   * `routerOptions.maxParamLength` must let every tenant name through (256; Fastify's default is
   * 100, and it answers 414 to a longer parameter): registering on a smaller one is a `ConfigError`.
   *
   * @example
   * ```ts
   * const app = Fastify({ routerOptions: { maxParamLength: 256 } });
   * await app.register(schoolhooksPlugin, {
   *   receiver,
   *   path: '/webhooks/school/:tenant',
   *   tenant: (request) => (request.params as { tenant?: string }).tenant,
   * });
   * ```
   */
  tenant?: ((request: FastifyRequest) => string | undefined) | undefined;
}

const fastifyAdapter = defineAdapter<[FastifyRequest, FastifyReply], FastifyReply>({
  rawBodyFix:
    'answer the webhook route with schoolhooksPlugin from schoolhooks/fastify ' +
    '(await app.register(schoolhooksPlugin, { receiver, path })), not with a route of your own ' +
    "behind Fastify's JSON parser, and let no hook read request.raw before it",
  method: (request) => request.method,
  headers: (request) => request.headers,
  body: (request) => nodeBodyReader(request.raw),
  write: ({ status, body }, headers, _request, reply) =>
    reply.code(status).headers(headers).send(JSON.stringify(body)),
});

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
  async function schoolhooksPlugin(app, { receiver, path, tenant }) {
    if (tenant !== undefined) checkParamLength(app, path);
    // This scope only: every content type is left unread, for the receiver to judge and read.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_request, _payload, done) => done(null));
    app.all(path, fastifyAdapter(receiver, { tenant }));
  };
