/**
 * Why a signature usually fails to verify, for `listen` and `verify` to print.
 * @module
 */

/** The likely causes of a signature that does not verify, one per line. */
export const SIGNATURE_CAUSES = `Likely causes:
  - the secret is wrong: copy the endpoint's secretKey again at Manage > School > Webhooks
    ('Copy signature' copies the secret);
  - a test delivery from an endpoint form that was not saved yet: it is signed with a
    temporary key, not the key the endpoint gets when saved; save it and test again;
  - a proxy or framework changed the body before the receiver saw it (re-serialised JSON,
    changed whitespace or encoding): the signature covers the raw bytes.`;
