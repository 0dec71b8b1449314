import { createHmac, randomUUID } from 'node:crypto';

/** A secret shaped like the platform's: 64 characters that look like hex. */
export const SECRET = 'a3f1c9e27b4d8f60a3f1c9e27b4d8f60a3f1c9e27b4d8f60a3f1c9e27b4d8f60';

/** Sign independently of the code under test: node:crypto, the secret taken literally. */
export function hmacHex(body: string | Uint8Array, secret = SECRET): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

export interface SignedRequest {
  method: string;
  headers: Record<string, string>;
  body: string;
}

/** A signed POST of an envelope; `envelope` fields override the defaults. */
export function signedRequest(
  envelope: Record<string, unknown> = {},
  secret = SECRET,
): SignedRequest & { idempotencyKey: string } {
  const idempotencyKey = (envelope.idempotencyKey as string | undefined) ?? randomUUID();
  const body = JSON.stringify({
    event: 'UserSignedIn',
    timestamp: new Date().toISOString(),
    data: { user: { id: 1 } },
    ...envelope,
    idempotencyKey,
  });
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json', signature: hmacHex(body, secret) },
    body,
    idempotencyKey,
  };
}

/** Sign a raw body as it is. */
export function signedRaw<B extends string | Uint8Array>(
  body: B,
  secret = SECRET,
): { method: string; headers: Record<string, string>; body: B } {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json', signature: hmacHex(body, secret) },
    body,
  };
}

/** A promise with its resolve exposed, to hold a handler in flight. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
