/**
 * HMAC-SHA256 webhook signatures: lowercase hex over the raw body bytes, keyed by the endpoint's
 * secretKey taken literally (interface 4.3).
 * @module
 */

import { fromHex, importHmacKey, nodeCrypto, toHex, utf8, webSubtle } from './crypto.js';

/** The raw request body: bytes as received (a Node `Buffer` is a `Uint8Array`), or a string taken as its UTF-8 bytes. */
export type RawBody = Uint8Array | string;

/** Hex characters in a signature header (lowercase hex of an HMAC-SHA256; uppercase accepted). */
const SIGNATURE_LENGTH = 64;

/**
 * Compute the `signature` header value for a body: lowercase hex HMAC-SHA256.
 *
 * The secret is used as the string it is, never hex- or base64-decoded, even when it looks like
 * hex: the platform keys its HMAC with the 64 characters themselves.
 *
 * @example
 * ```ts
 * const signature = await computeSignature(rawBody, process.env.SCHOOL_WEBHOOK_SECRET!);
 * ```
 */
export async function computeSignature(body: RawBody, secret: string): Promise<string> {
  assertSecret(secret);
  const node = nodeCrypto();
  if (node) return node.createHmac('sha256', secret).update(body).digest('hex');
  const key = await importHmacKey(secret);
  const bytes = typeof body === 'string' ? utf8(body) : body;
  return toHex(new Uint8Array(await webSubtle().sign('HMAC', key, bytes as BufferSource)));
}

/**
 * Check a `signature` header against a body, in constant time, with one secret or several (every
 * active endpoint's secretKey: any match verifies). A missing header or one that is not 64 hex
 * characters fails without computing anything.
 *
 * @example
 * ```ts
 * const ok = await verifySignature(rawBody, req.headers.signature, [currentSecret, previousSecret]);
 * ```
 */
export async function verifySignature(
  body: RawBody,
  signature: string | null | undefined,
  secret: string | readonly string[],
): Promise<boolean> {
  return createVerifier(secret)(body, signature);
}

/** A prepared verifier: synchronous where node:crypto exists, a promise on Web Crypto. */
export type Verifier = (
  body: RawBody,
  signature: string | null | undefined,
) => boolean | Promise<boolean>;

/**
 * Prepare the secrets once (key objects, imported Web Crypto keys) and return a verifier.
 * @internal used by the receiver so no request pays for key setup.
 */
export function createVerifier(secret: string | readonly string[]): Verifier {
  const secrets = typeof secret === 'string' ? [secret] : [...secret];
  if (secrets.length === 0) throw new TypeError('at least one secret is required');
  secrets.forEach(assertSecret);
  const node = nodeCrypto();
  if (node) {
    const keys = secrets.map((s) => node.createSecretKey(utf8(s)));
    return function verifyWithNodeCrypto(body, signature) {
      const expected = parseSignature(signature);
      if (!expected) return false;
      let matched = false;
      for (const key of keys) {
        const actual = node.createHmac('sha256', key).update(body).digest();
        // Constant time: the comparison must not tell an attacker how many leading bytes of a
        // forged signature were right.
        if (node.timingSafeEqual(actual, expected)) matched = true;
      }
      return matched;
    };
  }
  let keys: Promise<CryptoKey[]> | undefined;
  return async function verifyWithWebCrypto(body, signature) {
    const expected = parseSignature(signature);
    if (!expected) return false;
    keys ??= Promise.all(secrets.map(importHmacKey));
    const bytes = typeof body === 'string' ? utf8(body) : body;
    let matched = false;
    for (const key of await keys) {
      // subtle.verify compares in constant time.
      if (await webSubtle().verify('HMAC', key, expected as BufferSource, bytes as BufferSource)) {
        matched = true;
      }
    }
    return matched;
  };
}

/** The 32 bytes of a header of exactly 64 hex characters, else undefined. */
function parseSignature(signature: string | null | undefined): Uint8Array | undefined {
  if (typeof signature !== 'string' || signature.length !== SIGNATURE_LENGTH) return undefined;
  return fromHex(signature);
}

function assertSecret(secret: unknown): void {
  if (typeof secret !== 'string' || secret.length === 0) {
    // Never echo the value: it may be a real secret of the wrong type.
    throw new TypeError('a webhook secret must be a non-empty string');
  }
}
