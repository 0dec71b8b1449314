/**
 * Why a signature failed, and what usually causes it: one classifier, so `onError`, `schoolhooks
 * listen`, the inspector and telemetry always say the same thing. It runs only once a signature
 * has failed: a valid delivery never pays for it.
 * @module
 */

import { parseSignature } from './signature.js';

/**
 * Why a `signature` header failed: `missing` (no header), `malformed` (not 64 hex characters), or
 * `mismatch` (well-formed, but no secret makes it).
 */
export type SignatureFailureReason = 'missing' | 'malformed' | 'mismatch';

/** A failed signature: why, in words, and the likely causes (each a sentence). */
export interface SignatureFailure {
  readonly reason: SignatureFailureReason;
  /** What is wrong, in a few words (`the signature matches no secret`). */
  readonly message: string;
  /** What usually leads to it, most likely first. Never quotes a secret or a signature. */
  readonly causes: readonly string[];
}

const FAILURES: { readonly [R in SignatureFailureReason]: SignatureFailure } = {
  missing: {
    reason: 'missing',
    message: 'the signature header is missing',
    causes: [
      'The request did not come from the platform, or a proxy on the way dropped its signature header.',
    ],
  },
  malformed: {
    reason: 'malformed',
    message: 'the signature header is not 64 hex characters',
    causes: [
      'The platform sends the bare hex HMAC-SHA256 of the body, with no prefix such as sha256=: the request did not come from the platform, or something on the way rewrote the header.',
    ],
  },
  mismatch: {
    reason: 'mismatch',
    message: 'the signature matches no secret',
    causes: [
      "The secret is wrong: copy the endpoint's secretKey again at Manage > School > Webhooks ('Copy signature' copies the secret).",
      "An old secret after a rotation: list every active endpoint's secretKey, the new one included.",
      'A secret with spaces or a line break around it (a copy-paste slip): the key is used exactly as given.',
      'A test delivery from an endpoint form that was not saved yet: it is signed with a temporary key, not the key the endpoint gets when saved; save it and test again.',
      'A body parser re-serialised the body before the receiver saw it (Express: express.json() mounted first): the signature covers the raw bytes as sent.',
      'A proxy re-encoded the body on its way (whitespace, character encoding or compression changed).',
    ],
  },
};

/**
 * Classify a `signature` header that failed to verify: the one place that says why.
 *
 * @example
 * ```ts
 * signatureFailureOf(undefined).reason; // 'missing'
 * signatureFailureOf('sha256=abc').reason; // 'malformed'
 * signatureFailureOf('9f'.repeat(32)).message; // 'the signature matches no secret'
 * ```
 */
export function signatureFailureOf(signature: string | null | undefined): SignatureFailure {
  if (signature === undefined || signature === null) return FAILURES.missing;
  // The verifier's own rule for a well-formed header, so the two never disagree.
  return parseSignature(signature) === undefined ? FAILURES.malformed : FAILURES.mismatch;
}

/** The failure of a reason, e.g. for a `SignatureError` built from a reason alone. */
export function signatureFailure(reason: SignatureFailureReason): SignatureFailure {
  return FAILURES[reason];
}
