/**
 * The transport rule for anything that carries an API key or a session token (docs/platform.md#session-tokens).
 * @module
 */

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * True for an https:// URL, and for http:// on the loopback hosts localhost, 127.0.0.1 and [::1]
 * (local development and tests), where nothing crosses a network.
 */
export function isSecureUrl(url: URL): boolean {
  if (url.protocol === 'https:') return true;
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}
