import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConfigError, computeSignature, verifySignature } from '../src/index.js';
import * as onNodeCrypto from '../src/platform/signature.js';
import { createVerifier } from '../src/platform/signature.js';
import { hmacHex, SECRET } from './helpers/signed.js';
import { importWithoutNodeCrypto } from './helpers/web-crypto-only.js';

type SignatureModule = typeof onNodeCrypto;

/** The signature with the hex digit at `index` changed to another one. */
function flipHexDigit(signature: string, index: number): string {
  const digit = (parseInt(signature[index]!, 16) ^ 1).toString(16);
  return signature.slice(0, index) + digit + signature.slice(index + 1);
}

const body = '{"event":"UserSignedUp","data":{"name":"Мария 👩‍🎓"}}';

const paths: [string, () => Promise<SignatureModule>][] = [
  ['node:crypto', () => Promise.resolve(onNodeCrypto)],
  ['Web Crypto', () => importWithoutNodeCrypto(() => import('../src/platform/signature.js'))],
];

for (const [path, load] of paths) {
  describe(`signatures on ${path}`, () => {
    let computeSignature: SignatureModule['computeSignature'];
    let verifySignature: SignatureModule['verifySignature'];
    let createVerifier: SignatureModule['createVerifier'];
    beforeAll(async () => {
      ({ computeSignature, verifySignature, createVerifier } = await load());
    });
    afterEach(() => vi.restoreAllMocks());

    it(`computes and verifies with ${path === 'Web Crypto' ? '' : 'no '}call to crypto.subtle`, async () => {
      const subtleSign = vi.spyOn(globalThis.crypto.subtle, 'sign');
      const subtleVerify = vi.spyOn(globalThis.crypto.subtle, 'verify');
      await computeSignature(body, SECRET);
      await verifySignature(body, hmacHex(body), ['other', SECRET]);
      const calls = subtleSign.mock.calls.length + subtleVerify.mock.calls.length;
      if (path === 'Web Crypto') expect(calls).toBeGreaterThanOrEqual(3);
      else expect(calls).toBe(0);
    });

    it('computes lowercase hex HMAC-SHA256 with the secret taken literally', async () => {
      const signature = await computeSignature(body, SECRET);
      expect(signature).toMatch(/^[0-9a-f]{64}$/);
      expect(signature).toBe(hmacHex(body));
      expect(await computeSignature(new TextEncoder().encode(body), SECRET)).toBe(signature);
    });

    it('verifies a string, a Buffer and a Uint8Array of the same bytes', async () => {
      const signature = hmacHex(body);
      for (const form of [body, Buffer.from(body), new TextEncoder().encode(body)]) {
        expect(await verifySignature(form, signature, SECRET)).toBe(true);
      }
    });

    it('verifies with any secret of a list and rejects one signed by none', async () => {
      expect(await verifySignature(body, hmacHex(body, 'two'), ['one', 'two'])).toBe(true);
      expect(await verifySignature(body, hmacHex(body, 'three'), ['one', 'two'])).toBe(false);
    });

    it('rejects a missing, short, prefixed or non-hex signature and a changed body', async () => {
      const good = hmacHex(body);
      for (const bad of [
        undefined,
        null,
        '',
        good.slice(0, 63),
        `sha256=${good}`,
        `${good}0`,
        'g'.repeat(64),
      ]) {
        expect(await verifySignature(body, bad, SECRET)).toBe(false);
      }
      expect(await verifySignature(`${body} `, good, SECRET)).toBe(false);
    });

    it('rejects a signature with its last hex digit or one in its second half changed', async () => {
      const good = hmacHex(body);
      for (const index of [63, 62, 48, 33, 32]) {
        expect(await verifySignature(body, flipHexDigit(good, index), SECRET)).toBe(false);
      }
      expect(await verifySignature(body, flipHexDigit(good, 63), ['other', SECRET])).toBe(false);
    });

    it('fingerprints a verified body: the first 16 hex digits of its HMAC under the first secret', async () => {
      const verifier = createVerifier(['first', SECRET]);
      expect(await verifier.verify(body, hmacHex(body))).toBe(hmacHex(body, 'first').slice(0, 16));
      expect(await verifier.verify(body, hmacHex(body, 'first'))).toBe(
        hmacHex(body, 'first').slice(0, 16),
      );
      expect(await verifier.verify(body, hmacHex(body, 'third'))).toBeUndefined();
    });

    it('fingerprints a body under every secret but the first, in order', async () => {
      const verifier = createVerifier(['first', 'second', 'third']);
      for (const form of [body, new TextEncoder().encode(body)]) {
        expect(await verifier.otherFingerprints(form)).toEqual([
          hmacHex(body, 'second').slice(0, 16),
          hmacHex(body, 'third').slice(0, 16),
        ]);
      }
      expect(await createVerifier(SECRET).otherFingerprints(body)).toEqual([]);
    });

    it('rejects a body with one of its last bytes changed', async () => {
      const good = hmacHex(body);
      const bytes = new TextEncoder().encode(body);
      for (const index of [bytes.length - 1, bytes.length - 3, bytes.length - 20]) {
        const changed = bytes.slice();
        changed[index]! ^= 1;
        expect(await verifySignature(changed, good, SECRET)).toBe(false);
      }
    });
  });
}

describe('signature inputs', () => {
  it('refuses an empty secret without echoing anything', async () => {
    await expect(computeSignature(body, '')).rejects.toThrow(ConfigError);
    await expect(verifySignature(body, hmacHex(body), [])).rejects.toThrow(ConfigError);
  });

  it('says which rule an empty list or an empty secret breaks', async () => {
    for (const [attempt, message] of [
      [
        () => verifySignature(body, hmacHex(body), []),
        'secret must be a non-empty string or a non-empty list of them',
      ],
      [() => computeSignature(body, ''), 'a webhook secret is empty'],
      [() => computeSignature(body, '  '), 'a webhook secret is whitespace only'],
    ] as const) {
      await expect(attempt()).rejects.toBeInstanceOf(ConfigError);
      await expect(attempt()).rejects.toMatchObject({
        name: 'ConfigError',
        code: 'config',
        message,
      });
    }
    expect(() => createVerifier([SECRET, ''])).toThrow('secret #2 of the list is empty');
  });

  it('refuses a secret of the wrong type without echoing its value', async () => {
    const wrong = 987654321 as unknown as string;
    for (const [attempt, message] of [
      [() => computeSignature(body, wrong), 'a webhook secret must be a string, not number'],
      [
        async () => createVerifier([SECRET, wrong]),
        'secret #2 of the list must be a string, not number',
      ],
    ] as const) {
      const error: unknown = await attempt().then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toBe(message);
      expect(String((error as Error).stack)).not.toContain('987654321');
      expect(String((error as Error).stack)).not.toContain(SECRET.slice(0, 8));
    }
  });
});

describe('createVerifier on node:crypto', () => {
  it('verifies synchronously, so most deliveries finish in one turn', () => {
    const result = createVerifier(SECRET).verify(body, hmacHex(body));
    expect(result).toBe(hmacHex(body).slice(0, 16));
    expect(createVerifier(SECRET).otherFingerprints(body)).toEqual([]);
  });
});
