import { createHmac } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { fromHex } from '../src/platform/signature.js';
import { importHmacKey, nodeCrypto, randomToken, toHex, webSubtle } from '../src/utils/crypto.js';
import { importWithoutNodeCrypto } from './helpers/web-crypto-only.js';

describe('the crypto chosen when the module loads', () => {
  it('is node:crypto where the runtime has it', () => {
    expect(nodeCrypto?.createHmac).toBeTypeOf('function');
  });

  it('is node:crypto on a fresh load too, and its hex table is whole', async () => {
    // What runs when the module loads (the choice, the table toHex reads), run again here.
    vi.resetModules();
    const fresh = await import('../src/utils/crypto.js');
    vi.resetModules();
    expect(fresh.nodeCrypto).toBe(process.getBuiltinModule('node:crypto'));
    expect(fresh.toHex(Uint8Array.from([0, 9, 10, 15, 16, 171, 255]))).toBe('00090a0f10abff');
  });

  it('is not a node:crypto without createHmac (a partial polyfill): Web Crypto then', async () => {
    const builtin = process.getBuiltinModule.bind(process);
    const partial = vi
      .spyOn(process, 'getBuiltinModule')
      .mockImplementation(((id: string) =>
        id === 'node:crypto' ? { randomUUID: () => 'x' } : builtin(id)) as typeof builtin);
    vi.resetModules();
    try {
      const fresh = await import('../src/platform/signature.js');
      const body = '{"event":"UserSignedIn"}';
      const signature = createHmac('sha256', 'secret').update(body).digest('hex');
      expect(await fresh.computeSignature(body, 'secret')).toBe(signature);
      expect(await fresh.verifySignature(body, signature, 'secret')).toBe(true);
    } finally {
      partial.mockRestore();
      vi.resetModules();
    }
  });

  it('is Web Crypto alone where the runtime has no node:crypto', async () => {
    const loaded = await importWithoutNodeCrypto(() => import('../src/utils/crypto.js'));
    expect(loaded.nodeCrypto).toBeUndefined();
    expect(nodeCrypto).toBeDefined();
  });
});

/** fromHex as each runtime gets it: Buffer's native decoder beside node:crypto, the loop elsewhere. */
const hexDecoders = [
  ['beside node:crypto (Buffer)', async () => fromHex],
  [
    'without node:crypto (its own loop)',
    async () =>
      (await importWithoutNodeCrypto(() => import('../src/platform/signature.js'))).fromHex,
  ],
] as const;

describe('fromHex beside node:crypto', () => {
  afterEach(() => vi.restoreAllMocks());

  it('decodes with Buffer’s native decoder, which the loop is only a stand-in for', () => {
    const from = vi.spyOn(Buffer, 'from');
    const hex = 'ab'.repeat(32);
    expect(Array.from(fromHex(hex) ?? [])).toEqual(new Array(32).fill(0xab));
    expect(from).toHaveBeenCalledWith(hex, 'hex');
  });
});

describe.each(hexDecoders)('fromHex %s', (_, load) => {
  let decode: typeof fromHex;
  beforeAll(async () => {
    decode = await load();
  });

  it('reads every hex digit, in either case', () => {
    expect(Array.from(decode('00090a0f10ff') ?? [])).toEqual([0, 9, 10, 15, 16, 255]);
    expect(Array.from(decode('0A0F') ?? [])).toEqual([10, 15]);
    expect(Array.from(decode('9fAf') ?? [])).toEqual([0x9f, 0xaf]);
  });

  it('refuses the characters on either side of 0-9, a-f and A-F', () => {
    for (const outside of ['/', ':', '@', 'G', '`', 'g']) {
      expect(decode(`${outside}0`), `${outside} as the high digit`).toBeUndefined();
      expect(decode(`0${outside}`), `${outside} as the low digit`).toBeUndefined();
    }
  });

  it('refuses a non-hex character in the last byte as well as the first', () => {
    expect(decode('00'.repeat(31) + '0z')).toBeUndefined();
    expect(decode('z0' + '00'.repeat(31))).toBeUndefined();
  });

  it('refuses an odd number of digits', () => {
    expect(decode('abc')).toBeUndefined();
    expect(decode('a')).toBeUndefined();
  });

  it('refuses a character outside ASCII, and a digit Buffer would read past', () => {
    expect(decode('é0')).toBeUndefined();
    expect(decode('0\u0660')).toBeUndefined();
    expect(decode('00 0')).toBeUndefined();
  });

  it('gives back what toHex wrote', () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    const hex = toHex(bytes);
    expect(hex).toMatch(/^[0-9a-f]{512}$/);
    expect(hex.slice(0, 6)).toBe('000102');
    expect(hex.slice(-4)).toBe('feff');
    expect(Array.from(decode(hex) ?? [])).toEqual(Array.from(bytes));
  });
});

describe('randomToken', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('gives a different UUID every time', () => {
    const tokens = new Set(Array.from({ length: 100 }, () => randomToken()));
    expect(tokens.size).toBe(100);
    for (const token of tokens) expect(token).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('takes Web Crypto’s randomUUID where the runtime has one', () => {
    vi.stubGlobal('crypto', { randomUUID: () => 'from-web-crypto' });
    expect(randomToken()).toBe('from-web-crypto');
  });

  it('falls back to node:crypto where Web Crypto has no randomUUID, or is missing', () => {
    vi.stubGlobal('crypto', {});
    expect(randomToken()).toMatch(/^[0-9a-f-]{36}$/);
    vi.stubGlobal('crypto', undefined);
    expect(randomToken()).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('throws where neither Web Crypto nor node:crypto can give one', async () => {
    const loaded = await importWithoutNodeCrypto(() => import('../src/utils/crypto.js'));
    vi.stubGlobal('crypto', {});
    expect(() => loaded.randomToken()).toThrow('no source of randomness');
  });
});

describe('webSubtle', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('says so when the runtime has no Web Crypto, or one without subtle', () => {
    vi.stubGlobal('crypto', {});
    expect(() => webSubtle()).toThrow('neither node:crypto nor Web Crypto is available');
    vi.stubGlobal('crypto', undefined);
    expect(() => webSubtle()).toThrow('neither node:crypto nor Web Crypto is available');
  });
});

describe('importHmacKey', () => {
  it('imports the secret as a key nothing can export again, for HMAC-SHA256 only', async () => {
    const key = await importHmacKey('whsec_live_0123');
    expect(key.extractable).toBe(false);
    expect(key.algorithm).toMatchObject({ name: 'HMAC', hash: { name: 'SHA-256' } });
    expect([...key.usages].sort()).toEqual(['sign', 'verify']);
    await expect(webSubtle().exportKey('raw', key)).rejects.toThrow();
  });
});
