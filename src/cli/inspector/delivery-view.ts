/**
 * One delivery as the inspector's page shows it: the raw body as text, the headers with the
 * signature shortened, the payload's issues, the likely causes of a 401, and a curl command that
 * sends the same bytes again. Neither a secret nor a signature is ever part of it: the curl
 * command signs the body in the user's shell, with `schoolhooks sign` and the secret in
 * `SCHOOL_WEBHOOK_SECRET` (a signature is a credential for its body: docs/security.md).
 * @module
 */

import { signatureFailure } from '../../platform/signature-failure.js';
import { summarize, type RecordedDelivery } from './delivery-log.js';
import type { DeliveryView } from './page-api.js';

export type { DeliveryView };

/** Headers whose value the page never shows: credentials of some other system. */
const HIDDEN_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
]);

/** The likely causes of a signature that matches no secret, one sentence each. */
export const SIGNATURE_CAUSE_LIST: readonly string[] = signatureFailure('mismatch').causes;

/** `3f1c9a2b…e4d1`: enough to compare by eye, not the whole value. */
export function shortenSignature(signature: string): string {
  return signature.length <= 16 ? signature : `${signature.slice(0, 8)}…${signature.slice(-4)}`;
}

/** `value` quoted for a POSIX shell. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * A curl command that sends `delivery`'s exact bytes to `origin` + its path, signed in the shell
 * that runs it: `schoolhooks sign` reads the secret from `SCHOOL_WEBHOOK_SECRET`, so the command
 * (and the page that shows it) holds no signature, and curl runs only once signing succeeded
 * (without the secret, `sign` says why). It is a single line for a POSIX shell; the body is kept in
 * a variable and sent with `--data-binary` (no newline added), the bytes signed.
 */
export function curlCommand(delivery: RecordedDelivery, origin: string): string {
  const parts = ['curl', '-sS', '-X', delivery.method, shellQuote(`${origin}${delivery.path}`)];
  const type = delivery.headers['content-type'];
  if (type !== undefined) parts.push('-H', shellQuote(`content-type: ${type}`));
  if (delivery.body === undefined) return parts.join(' ');
  parts.push('-H', '"signature: $signature"', '--data-binary', '"$body"');
  const body = shellQuote(new TextDecoder().decode(delivery.body));
  return `body=${body}; signature=$(${SIGN_BODY}) && ${parts.join(' ')}`;
}

/** The shell's signature of `$body`, with the secret in `SCHOOL_WEBHOOK_SECRET`. */
const SIGN_BODY = `printf '%s' "$body" | npx schoolhooks sign`;

/** The page's view of `delivery`; `origin` is where the page was loaded from, for the curl command. */
export function viewOf(delivery: RecordedDelivery, origin: string): DeliveryView {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(delivery.headers)) {
    if (name === 'signature') headers[name] = shortenSignature(value);
    else if (HIDDEN_HEADERS.has(name)) headers[name] = '(hidden)';
    else headers[name] = value;
  }
  return {
    ...summarize(delivery),
    method: delivery.method,
    path: delivery.path,
    headers,
    body: delivery.body === undefined ? null : new TextDecoder().decode(delivery.body),
    bodyBytes: delivery.body?.byteLength ?? 0,
    issues: delivery.issues,
    errors: delivery.errors,
    causes: delivery.outcome === 'invalid_signature' ? causesOf(delivery) : [],
    canReplay: delivery.body !== undefined && delivery.outcome !== 'too_large',
    curl: curlCommand(delivery, origin),
  };
}

/** The likely causes of a signature that failed (`invalid_signature`), from the reason the receiver's SignatureError gave. */
function causesOf(delivery: RecordedDelivery): string[] {
  const reason = delivery.errors.find((error) => error.reason !== undefined)?.reason;
  return reason === undefined ? [] : [...signatureFailure(reason).causes];
}
