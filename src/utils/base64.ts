/**
 * Standard base64 of bytes, on btoa/atob so it runs on Workers, Deno and browsers as well as
 * Node (no Buffer in the core).
 * @module
 */

/** Base64 (with padding) of `bytes`. */
export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  // In slices: String.fromCharCode takes its arguments on the stack.
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/** The bytes of base64 text; throws a DOMException for text that is not base64. */
export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
