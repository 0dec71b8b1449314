// The platform's rule for a signature is "compare in constant time" (docs/platform.md#signature):
// a compare that stops at the first wrong byte tells an attacker, by its time, how much of a
// forged signature was right. Time itself is too noisy to test, so these tests watch the
// primitive every verification must go through on each crypto path, and make its answer decide
// the verification: node:crypto's `timingSafeEqual` where the runtime has node:crypto, and on
// Web Crypto the constant-time loop of src/utils/crypto.ts for the first secret and `subtle.verify`
// for the others. A compare with `===`, `Buffer.compare` or an early exit fails here.
import { createHmac } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { nodeCrypto } from '../src/utils/crypto.js';
import { verifySignature } from '../src/platform/signature.js';
import type * as CryptoModule from '../src/utils/crypto.js';
import type * as SignatureModule from '../src/platform/signature.js';
import { importWithoutNodeCrypto } from './helpers/web-crypto-only.js';

const SECRET = 'constant-time-secret-0123456789abcdef0123456789abcdef0123456789';
const OTHER = 'another-endpoint-secret-0123456789abcdef0123456789abcdef01234567';
const body = '{"event":"UserSignedIn","idempotencyKey":"k","data":{"user":{"id":1}}}';

/** What the platform sends: lowercase hex HMAC-SHA256 of the body, the secret taken literally. */
function platformSignature(secret: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/** A well-formed signature no secret makes. */
const FORGED = 'ab'.repeat(32);

function bytesOf(hex: string): number[] {
  return Array.from(Buffer.from(hex, 'hex'));
}

afterEach(() => vi.restoreAllMocks());

describe('on node:crypto', () => {
  it('compares the HMAC with the header through timingSafeEqual, once per secret', async () => {
    const compare = vi.spyOn(nodeCrypto!, 'timingSafeEqual');
    expect(await verifySignature(body, platformSignature(SECRET), SECRET)).toBe(true);
    expect(compare).toHaveBeenCalledTimes(1);
    const [actual, expected] = compare.mock.calls[0]! as [Uint8Array, Uint8Array];
    expect(Array.from(actual)).toEqual(bytesOf(platformSignature(SECRET)));
    expect(Array.from(expected)).toEqual(bytesOf(platformSignature(SECRET)));

    // Every secret is compared, whichever matches: the count tells nothing either.
    compare.mockClear();
    expect(await verifySignature(body, platformSignature(SECRET), [SECRET, OTHER])).toBe(true);
    expect(await verifySignature(body, platformSignature(SECRET), [OTHER, SECRET])).toBe(true);
    expect(await verifySignature(body, FORGED, [OTHER, SECRET])).toBe(false);
    expect(compare).toHaveBeenCalledTimes(6);
  });

  it('takes its answer from timingSafeEqual, and from nothing else', async () => {
    const compare = vi.spyOn(nodeCrypto!, 'timingSafeEqual');
    compare.mockReturnValue(false);
    expect(await verifySignature(body, platformSignature(SECRET), SECRET)).toBe(false);
    compare.mockReturnValue(true);
    expect(await verifySignature(body, FORGED, SECRET)).toBe(true);
  });
});

describe('on Web Crypto', () => {
  let web: {
    signature: typeof SignatureModule;
    crypto: typeof CryptoModule;
  };
  beforeAll(async () => {
    // Both from one fresh load, so the signature module uses this copy of src/utils/crypto.ts.
    web = await importWithoutNodeCrypto(async () => ({
      signature: await import('../src/platform/signature.js'),
      crypto: await import('../src/utils/crypto.js'),
    }));
    expect(web.crypto.nodeCrypto).toBeUndefined();
  });

  it('compares the first secret’s HMAC with the header through the constant-time compare', async () => {
    const compare = vi.spyOn(web.crypto.constantTime, 'equal');
    expect(await web.signature.verifySignature(body, platformSignature(SECRET), SECRET)).toBe(true);
    expect(compare).toHaveBeenCalledTimes(1);
    const [actual, expected] = compare.mock.calls[0]!;
    expect(Array.from(actual)).toEqual(bytesOf(platformSignature(SECRET)));
    expect(Array.from(expected)).toEqual(bytesOf(platformSignature(SECRET)));
  });

  it('takes the first secret’s answer from the constant-time compare, and from nothing else', async () => {
    const compare = vi.spyOn(web.crypto.constantTime, 'equal');
    compare.mockReturnValue(false);
    expect(await web.signature.verifySignature(body, platformSignature(SECRET), SECRET)).toBe(
      false,
    );
    compare.mockReturnValue(true);
    expect(await web.signature.verifySignature(body, FORGED, SECRET)).toBe(true);
  });

  it('verifies every other secret with subtle.verify, and takes its answer from it', async () => {
    const verify = vi.spyOn(globalThis.crypto.subtle, 'verify');
    expect(
      await web.signature.verifySignature(body, platformSignature(SECRET), [OTHER, SECRET]),
    ).toBe(true);
    expect(verify).toHaveBeenCalledTimes(1);
    const [algorithm, , signature, data] = verify.mock.calls[0]!;
    expect(algorithm).toBe('HMAC');
    expect(Array.from(new Uint8Array(signature as ArrayBuffer))).toEqual(
      bytesOf(platformSignature(SECRET)),
    );
    expect(new TextDecoder().decode(data as Uint8Array)).toBe(body);

    verify.mockResolvedValue(false);
    expect(
      await web.signature.verifySignature(body, platformSignature(SECRET), [OTHER, SECRET]),
    ).toBe(false);
    verify.mockResolvedValue(true);
    expect(await web.signature.verifySignature(body, FORGED, [OTHER, SECRET])).toBe(true);
  });

  describe('the constant-time compare', () => {
    /** A byte string that records which of its bytes were read. */
    function watched(bytes: number[]): { array: Uint8Array; read: Set<number> } {
      const read = new Set<number>();
      const array = new Proxy(Uint8Array.from(bytes), {
        get(target, property) {
          if (typeof property === 'string' && /^\d+$/.test(property)) read.add(Number(property));
          const value: unknown = Reflect.get(target, property);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      return { array, read };
    }

    const all = Array.from({ length: 32 }, (_, i) => i);
    const signature = bytesOf(platformSignature(SECRET));

    it('reads every byte of both strings, even when the first byte already differs', () => {
      for (const differing of [0, 1, 16, 31]) {
        const a = watched(signature);
        const other = signature.slice();
        other[differing] = other[differing]! ^ 0x80;
        const b = watched(other);
        expect(web.crypto.constantTime.equal(a.array, b.array), `byte ${differing}`).toBe(false);
        expect(
          [...a.read].sort((x, y) => x - y),
          `byte ${differing}`,
        ).toEqual(all);
        expect(
          [...b.read].sort((x, y) => x - y),
          `byte ${differing}`,
        ).toEqual(all);
      }
    });

    it('is true for equal strings only', () => {
      const equal = web.crypto.constantTime.equal;
      expect(equal(Uint8Array.from(signature), Uint8Array.from(signature))).toBe(true);
      for (const index of [0, 15, 31]) {
        for (const bit of [0x01, 0x80]) {
          const other = Uint8Array.from(signature);
          other[index]! ^= bit;
          expect(equal(Uint8Array.from(signature), other), `byte ${index}`).toBe(false);
        }
      }
      expect(equal(Uint8Array.from(signature), Uint8Array.from(signature.slice(0, 31)))).toBe(
        false,
      );
      expect(equal(Uint8Array.from([...signature, 0]), Uint8Array.from(signature))).toBe(false);
      expect(equal(new Uint8Array(0), new Uint8Array(0))).toBe(true);
    });
  });
});
