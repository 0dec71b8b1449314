/**
 * Signing a body the way the platform does, synchronously, for tests.
 * @module
 */

import { createHmac } from 'node:crypto';
import { assertSecret } from '../platform/signature.js';
import type { SimulatedRequest } from './endpoint-config.js';

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
  assertSecret(secret);
  return createHmac('sha256', secret).update(body).digest('hex');
}

/** The POST the simulated platform sends: `body` signed with `secret`. */
export function signedRequest(body: string, secret: string): SimulatedRequest {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json', signature: signBody(body, secret) },
    body,
  };
}
