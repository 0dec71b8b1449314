/**
 * The few crypto primitives the core needs: node:crypto where the runtime has it (fast and
 * synchronous), Web Crypto elsewhere (Workers without Node compatibility, runtimes without
 * `process.getBuiltinModule`). The choice is made
 * once, when this module loads, never per call (as stripe-node chooses its crypto provider).
 * @module
 */

import type * as NodeCrypto from 'node:crypto';

type NodeCryptoModule = typeof NodeCrypto;

interface ProcessWithBuiltins {
  getBuiltinModule?: (id: string) => unknown;
}

/**
 * node:crypto without a static import, so bundles for Workers load without it.
 * `process.getBuiltinModule` exists on Node >= 20.16, Bun and Deno.
 */
function loadNodeCrypto(): NodeCryptoModule | undefined {
  const proc = (globalThis as { process?: ProcessWithBuiltins }).process;
  try {
    const mod = proc?.getBuiltinModule?.('node:crypto');
    return isNodeCrypto(mod) ? mod : undefined;
  } catch {
    return undefined;
  }
}

function isNodeCrypto(mod: unknown): mod is NodeCryptoModule {
  const candidate = mod as Partial<NodeCryptoModule> | undefined;
  return typeof candidate?.createHmac === 'function';
}

/**
 * node:crypto, or undefined where the runtime has none: then every signature goes through Web
 * Crypto. Tests reach the Web Crypto path by loading the modules as such a runtime would
 * (test/helpers/web-crypto-only.ts), not through a switch in here.
 */
export const nodeCrypto: NodeCryptoModule | undefined = loadNodeCrypto();

function subtle(): SubtleCrypto {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (!c?.subtle) throw new Error('neither node:crypto nor Web Crypto is available');
  return c.subtle;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Lowercase hex of bytes. */
export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (const byte of bytes) out += HEX[byte];
  return out;
}

/**
 * The constant-time comparison where the runtime has no node:crypto (whose `timingSafeEqual`
 * serves there): every byte of both strings is read whatever the first difference, so the time
 * taken does not tell an attacker how many leading bytes of a forged signature were right
 * (docs/platform.md#signature). A method of an object, looked up on every call, so a test can
 * watch that each verification goes through it (test/signature-constant-time.test.ts).
 * @internal
 */
export const constantTime = {
  /** Whether two byte strings are equal; false at once only when their lengths differ. */
  equal(a: Uint8Array, b: Uint8Array): boolean {
    if (a.length !== b.length) return false;
    let difference = 0;
    for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
    return difference === 0;
  },
};

const encoder = new TextEncoder();

/** UTF-8 bytes of a string. */
export function utf8(text: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(text);
}

/** A random, unguessable token (lease tokens). */
export function randomToken(): string {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (c?.randomUUID) return c.randomUUID();
  if (nodeCrypto) return nodeCrypto.randomUUID();
  throw new Error('no source of randomness');
}

/** Import an HMAC-SHA256 key for Web Crypto, once per secret. */
export async function importHmacKey(secret: string): Promise<CryptoKey> {
  return subtle().importKey('raw', utf8(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
    'verify',
  ]);
}

/** Web Crypto's subtle, for the HMAC fallback. */
export { subtle as webSubtle };
