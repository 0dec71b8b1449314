/**
 * How the CLI reaches a user's Redis or Postgres (`inbox`, `reconcile`): fast, without retrying,
 * and naming the server in a failure without its user or password.
 * @module
 */

import type { Redis, RedisOptions } from 'ioredis';
import { CliFailure, messageOf } from './command.js';

/** How long the CLI waits to connect before it gives up. */
export const CONNECT_TIMEOUT_MS = 5000;

/**
 * A connected client of `url`, made by `RedisClient` (ioredis's class, loaded by the caller):
 * connect fails after {@link CONNECT_TIMEOUT_MS}, and nothing is retried.
 */
export async function connectRedis(
  RedisClient: new (url: string, options: RedisOptions) => Redis,
  url: string,
): Promise<Redis> {
  const client = new RedisClient(url, {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    client.disconnect();
    // ioredis names the host and port, never the URL's password.
    throw new CliFailure(`cannot reach Redis at ${withoutCredentials(url)}: ${messageOf(error)}`);
  }
  return client;
}

/**
 * The URL without its user, password or query (where a password may be given too):
 * `redis://***@host:6379/0`.
 */
export function withoutCredentials(url: string | URL): string {
  return String(url)
    .replace(/\/\/[^/@\s]*@/, '//***@')
    .replace(/[?#].*$/s, '');
}
