/**
 * base64url without padding (RFC 4648 section 5) of UTF-8 text, on btoa/atob so it runs on
 * Workers, Deno and browsers as well as Node.
 * @module
 */

import { fromBase64, toBase64 } from '../utils/base64.js';

const ALPHABET = /^[A-Za-z0-9_-]*$/;

/** The base64url form, without `=` padding, of `text`'s UTF-8 bytes. */
export function encodeBase64Url(text: string): string {
  return toBase64(new TextEncoder().encode(text))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

/**
 * The UTF-8 text encoded in unpadded base64url. Throws a TypeError for other characters
 * (standard base64's `+`, `/`, padding), an impossible length or bytes that are not UTF-8.
 */
export function decodeBase64Url(value: string): string {
  if (!ALPHABET.test(value) || value.length % 4 === 1) {
    throw new TypeError('not unpadded base64url');
  }
  const bytes = fromBase64(value.replace(/-/g, '+').replace(/_/g, '/'));
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new TypeError('base64url data is not UTF-8 text');
  }
}
