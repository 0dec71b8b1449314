/**
 * The fingerprint a completed key remembers, to tell a retry of the same event from a different
 * event that reuses its idempotencyKey.
 * @module
 */

import stableStringify from 'fast-json-stable-stringify';
import { sha256Hex } from './crypto.js';

/**
 * SHA-256 of the envelope serialised with sorted keys: the same for every retry and every
 * endpoint of one event, whatever whitespace or key order the platform uses on the wire.
 */
export function fingerprintEnvelope(envelope: unknown): Promise<string> {
  return sha256Hex(stableStringify(envelope));
}
