/**
 * The likely causes of a failed signature as the CLI prints them, from the receiver's own
 * classifier (`signatureFailureOf`), so `listen`, `verify` and the receiver say the same.
 * @module
 */

import { signatureFailure, type SignatureFailure } from '../platform/signature-failure.js';

/** `Likely causes:` and one cause a line. */
export function causesText({ causes }: SignatureFailure): string {
  return `Likely causes:\n${causes.map((cause) => `  - ${cause}`).join('\n')}`;
}

/** The likely causes of a well-formed signature that matches no secret, one per line. */
export const SIGNATURE_CAUSES = causesText(signatureFailure('mismatch'));
