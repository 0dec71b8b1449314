/**
 * HMAC-SHA256 webhook signatures: lowercase hex over the raw body bytes, keyed by the endpoint's
 * secretKey taken literally (docs/platform.md#signature).
 * @module
 */

import {
  constantTime,
  importHmacKey,
  nodeCrypto,
  toHex,
  utf8,
  webSubtle,
} from '../utils/crypto.js';
import { ConfigError } from '../errors.js';

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
  if (nodeCrypto) return nodeCrypto.createHmac('sha256', secret).update(body).digest('hex');
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
  return (await createVerifier(secret).verify(body, signature)) !== undefined;
}

/**
 * A prepared verifier: what it returns for a body whose signature verifies is the body's
 * {@link Fingerprint}, and `undefined` otherwise; synchronous where node:crypto exists, a promise
 * on Web Crypto.
 */
export type VerifyBody = (
  body: RawBody,
  signature: string | null | undefined,
) => Fingerprint | undefined | Promise<Fingerprint | undefined>;

/**
 * What a completed idempotency key remembers of its body: the first 16 hex digits of the body's
 * HMAC under the first configured secret. Verification computes that HMAC anyway, so it costs
 * nothing; it is the same for every retry and every endpoint of one event (the platform resends
 * the same bytes), and differs for any other body.
 */
export type Fingerprint = string;

/** Hex digits of the HMAC kept as a fingerprint: 64 bits. */
const FINGERPRINT_LENGTH = 16;

/**
 * Prepare the secrets once (key objects, imported Web Crypto keys) and return a verifier, and a
 * way to take a body's fingerprint under each other secret (see {@link Verifier.otherFingerprints}).
 * @internal used by the receiver so no request pays for key setup.
 */
export function createVerifier(secret: string | readonly string[]): Verifier {
  const secrets = secretsOf(secret);
  const node = nodeCrypto;
  if (node) {
    const keys = secrets.map((s) => node.createSecretKey(utf8(s)));
    return {
      secrets,
      verify: function verifyWithNodeCrypto(body, signature) {
        const expected = parseSignature(signature);
        if (!expected) return undefined;
        let matched = false;
        let first: Buffer | undefined;
        for (const key of keys) {
          const actual = node.createHmac('sha256', key).update(body).digest();
          first ??= actual;
          // Constant time: the comparison must not tell an attacker how many leading bytes of a
          // forged signature were right.
          if (node.timingSafeEqual(actual, expected)) matched = true;
        }
        return matched ? first!.toString('hex', 0, FINGERPRINT_LENGTH / 2) : undefined;
      },
      otherFingerprints(body) {
        return keys
          .slice(1)
          .map((key) =>
            node.createHmac('sha256', key).update(body).digest('hex').slice(0, FINGERPRINT_LENGTH),
          );
      },
    };
  }
  let keys: Promise<CryptoKey[]> | undefined;
  const sign = async (key: CryptoKey, bytes: Uint8Array): Promise<Uint8Array> =>
    new Uint8Array(await webSubtle().sign('HMAC', key, bytes as BufferSource));
  return {
    secrets,
    verify: async function verifyWithWebCrypto(body, signature) {
      const expected = parseSignature(signature);
      if (!expected) return undefined;
      keys ??= Promise.all(secrets.map(importHmacKey));
      const bytes = typeof body === 'string' ? utf8(body) : body;
      const [firstKey, ...others] = await keys;
      // The first key signs (its HMAC is the fingerprint) and is compared in constant time; the
      // others verify, which subtle.verify does in constant time.
      const first = await sign(firstKey!, bytes);
      let matched = constantTime.equal(first, expected);
      for (const key of others) {
        if (
          await webSubtle().verify('HMAC', key, expected as BufferSource, bytes as BufferSource)
        ) {
          matched = true;
        }
      }
      return matched ? toHex(first.subarray(0, FINGERPRINT_LENGTH / 2)) : undefined;
    },
    async otherFingerprints(body) {
      keys ??= Promise.all(secrets.map(importHmacKey));
      const bytes = typeof body === 'string' ? utf8(body) : body;
      const [, ...others] = await keys;
      const digests = await Promise.all(others.map((key) => sign(key, bytes)));
      return digests.map((digest) => toHex(digest.subarray(0, FINGERPRINT_LENGTH / 2)));
    },
  };
}

/** What {@link createVerifier} prepares: the secrets' keys, and what is done with them. */
export interface Verifier {
  /** The secrets it verifies with: what an error's message must never show. */
  readonly secrets: readonly string[];
  /** Verify a body's signature; its fingerprint when it verifies. */
  verify: VerifyBody;
  /**
   * The body's fingerprints under every secret but the first. A key completed before the secrets
   * were reordered (rotation: `[next, current]`) remembers its fingerprint under another secret,
   * so a retry is only a conflict when none of these matches either.
   */
  otherFingerprints(body: RawBody): Fingerprint[] | Promise<Fingerprint[]>;
}

/**
 * The 32 bytes of a header of exactly 64 hex characters, else undefined.
 * @internal also the rule `signatureFailureOf` tells a malformed header by.
 */
export function parseSignature(signature: string | null | undefined): Uint8Array | undefined {
  if (typeof signature !== 'string' || signature.length !== SIGNATURE_LENGTH) return undefined;
  return fromHex(signature);
}

/** Node's Buffer where node:crypto is (Node, Bun): its hex decoder is native. */
const nodeBuffer = nodeCrypto
  ? (globalThis as { Buffer?: { from(text: string, encoding: 'hex'): Uint8Array } }).Buffer
  : undefined;

/**
 * Bytes of a hex string of even length, or undefined if it is not hex (either case).
 * @internal the decoder of a signature header, exported for its tests.
 */
export function fromHex(hex: string): Uint8Array | undefined {
  if (hex.length % 2 !== 0) return undefined;
  if (nodeBuffer) {
    // Buffer decodes up to the first pair that is not hex: fewer bytes than pairs is not hex.
    const bytes = nodeBuffer.from(hex, 'hex');
    return bytes.length === hex.length / 2 ? bytes : undefined;
  }
  const out = new Uint8Array(hex.length / 2);
  // One pass that checks and decodes: this runs on every signature header.
  for (let i = 0; i < out.length; i++) {
    const high = nibble(hex.charCodeAt(2 * i));
    const low = nibble(hex.charCodeAt(2 * i + 1));
    if ((high | low) < 0) return undefined;
    out[i] = (high << 4) | low;
  }
  return out;
}

/** The value of one hex digit, or -1. */
function nibble(code: number): number {
  if (code >= 48 && code <= 57) return code - 48; // 0-9
  const lower = code | 0x20;
  if (lower >= 97 && lower <= 102) return lower - 87; // a-f, A-F
  return -1;
}

/**
 * The secrets as a list, checked once: each a string with something in it besides whitespace.
 * What it throws names a bad secret by its place in the list only, never by its value (a real
 * secret may stand next to it, or be the bad one).
 * @internal the receiver's start-up check.
 */
export function secretsOf(secret: unknown): string[] {
  if (typeof secret === 'string') {
    assertSecret(secret, 'secret');
    return [secret];
  }
  if (!Array.isArray(secret) || secret.length === 0) {
    throw new ConfigError('secret must be a non-empty string or a non-empty list of them');
  }
  secret.forEach((one: unknown, i) => assertSecret(one, `secret #${i + 1} of the list`));
  return [...(secret as string[])];
}

/**
 * Throws a {@link ConfigError} unless `secret` is a string with something in it besides
 * whitespace; the message names it `name`, never by its value.
 * @internal the one rule for a secret, shared with `signBody` in `schoolhooks/testing`.
 */
export function assertSecret(secret: unknown, name = 'a webhook secret'): asserts secret is string {
  // Never echo the value: it may be a real secret of the wrong type.
  if (typeof secret !== 'string') {
    throw new ConfigError(
      `${name} must be a string, not ${secret === null ? 'null' : typeof secret}`,
    );
  }
  if (secret.trim() === '') {
    throw new ConfigError(`${name} is ${secret === '' ? 'empty' : 'whitespace only'}`);
  }
}

/**
 * The places (1-based) of the secrets with whitespace around them: used exactly as given, they
 * are usually a copy-paste slip, the cause of a 401 that "cannot be".
 */
export function paddedSecrets(secrets: readonly string[]): number[] {
  return secrets.flatMap((one, i) => (one.trim() === one ? [] : [i + 1]));
}
