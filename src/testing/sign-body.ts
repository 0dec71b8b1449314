/**
 * Signing a body the way the platform does, synchronously, for tests.
 * @module
 */

import { createHmac } from 'node:crypto';

/**
 * The `signature` header the platform would send with `body`: lowercase hex HMAC-SHA256 of the
 * raw bytes, keyed by the endpoint's secretKey taken literally (docs/platform.md#signature), never hex- or
 * base64-decoded.
 *
 * @example
 * ```ts
 * import { signBody } from 'schoolhooks/testing';
 *
 * const body = JSON.stringify(envelope);
 * await receiver.handle({ headers: { signature: signBody(body, secret) }, body });
 * ```
 */
export function signBody(body: string | Uint8Array, secret: string): string {
  if (typeof secret !== 'string' || secret.length === 0) {
    // Never echo the value: it may be a real secret of the wrong type.
    throw new TypeError('a webhook secret must be a non-empty string');
  }
  return createHmac('sha256', secret).update(body).digest('hex');
}
