/**
 * Fastify's route parameters against the longest tenant name: its router answers 414 to a
 * parameter over `maxParamLength` (100 by default) before any route runs, so the deliveries of a
 * school whose name is longer would never reach the receiver (docs/frameworks/fastify.md).
 * @module
 */

import type { FastifyInstance } from 'fastify';
import { MAX_TENANT_LENGTH } from '../keys/delivery-key.js';
import { ConfigError } from '../errors.js';

/** Fastify's own `maxParamLength`, when the app sets none. */
const FASTIFY_MAX_PARAM_LENGTH = 100;

/**
 * Refuse, with a `ConfigError` that says what to set, a route with a parameter (`:tenant`) on an
 * app whose router lets through no parameter as long as the longest tenant name.
 */
export function checkParamLength(app: FastifyInstance, path: string): void {
  if (!/(?:^|[^:]):(?!:)/.test(path)) return; // `::` is a colon, not a parameter
  const { maxParamLength, routerOptions } = app.initialConfig;
  // routerOptions comes with Fastify's defaults filled in: its 100 may stand for the older,
  // top-level option's value.
  const routed = routerOptions?.maxParamLength;
  const limit =
    routed !== undefined && routed !== FASTIFY_MAX_PARAM_LENGTH
      ? routed
      : (maxParamLength ?? FASTIFY_MAX_PARAM_LENGTH);
  if (limit >= MAX_TENANT_LENGTH) return;
  throw new ConfigError(
    `the route ${path} has a parameter, and this app's router answers 414 to one over ${limit} ` +
      `characters, before any route runs: a tenant name of up to ${MAX_TENANT_LENGTH} would never ` +
      `reach the receiver. Create the app with Fastify({ routerOptions: { maxParamLength: ` +
      `${MAX_TENANT_LENGTH} } }) (docs/frameworks/fastify.md)`,
  );
}
