// A `signature` header is 64 hex characters (docs/platform.md#signature): the lowercase hex of
// an HMAC-SHA256, which is 32 bytes. A header of any other length, or with a character that is
// not hex, is refused 401 `invalid_signature` as `malformed` on every path, never 503 (which the
// platform would retry five times over an answer that cannot change). Every parity of length
// is tried: an even length above 64 decodes to more than 32 bytes, which a compare that takes
// only equal lengths (node:crypto's timingSafeEqual) throws on, and only the length check keeps
// it from there.
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { nodeListener } from '../src/adapters/node.js';
import * as onNodeCrypto from '../src/index.js';
import { listen, type AdapterServer } from './adapters/suite.js';
import { importWithoutNodeCrypto } from './helpers/web-crypto-only.js';

type Core = typeof onNodeCrypto;

const SECRET = 'length-test-secret-0123456789abcdef0123456789abcdef0123456789ab';

/** What the platform sends as a signature: lowercase hex HMAC-SHA256, the secret taken literally. */
function platformSignature(body: string): string {
  return createHmac('sha256', SECRET).update(body).digest('hex');
}

function envelope(idempotencyKey: string): string {
  return JSON.stringify({
    event: 'UserSignedIn',
    timestamp: new Date().toISOString(),
    idempotencyKey,
    data: { user: { id: 1 } },
  });
}

/**
 * Headers of every wrong length, odd and even, short and long, built from the body's real
 * signature (so a long one starts with the right 64 characters), and 64 characters with one that
 * is not hex.
 */
function wrongHeaders(body: string): [string, string][] {
  const good = platformSignature(body);
  const long = good + platformSignature(`${body} `);
  const lengths = [0, 1, 2, 62, 63, 65, 66, 96, 128, 130];
  return [
    ...lengths.map((length): [string, string] => [
      `${length} hex characters`,
      length <= 64 ? good.slice(0, length) : (long + long).slice(0, length),
    ]),
    ['64 characters, the last one not hex', `${good.slice(0, 63)}g`],
    ['64 characters, the first one not hex', `z${good.slice(1)}`],
    ['64 characters with a space inside', `${good.slice(0, 32)} ${good.slice(33)}`],
    ['the right signature with a prefix', `sha256=${good}`],
  ];
}

const paths: [string, () => Promise<Core>][] = [
  ['node:crypto', () => Promise.resolve(onNodeCrypto)],
  ['Web Crypto', () => importWithoutNodeCrypto(() => import('../src/index.js'))],
];

describe.each(paths)('a signature header of the wrong length, on %s', (_, load) => {
  let core: Core;
  beforeAll(async () => {
    core = await load();
  });

  it('is answered 401 invalid_signature, reason malformed, for every length and parity', async () => {
    const errors: unknown[] = [];
    const receiver = core.createReceiver({ secret: SECRET }).onError((e) => void errors.push(e));
    let ran = 0;
    receiver.on('UserSignedIn', () => void ran++);
    const body = envelope('wrong-length');
    const cases = wrongHeaders(body);
    for (const [name, signature] of cases) {
      const result = await receiver.handle({
        method: 'POST',
        headers: { 'content-type': 'application/json', signature },
        body,
      });
      expect(result.status, name).toBe(401);
      expect(result.outcome, name).toBe('invalid_signature');
      expect(result.body, name).toEqual({ ok: false, outcome: 'invalid_signature' });
    }
    expect(ran).toBe(0);
    expect(errors).toHaveLength(cases.length);
    errors.forEach((error, i) => {
      expect(error, cases[i]![0]).toBeInstanceOf(core.SignatureError);
      expect(error, cases[i]![0]).toMatchObject({ code: 'invalid_signature', reason: 'malformed' });
    });

    // The same body with the signature the platform computes is processed.
    const good = await receiver.handle({
      method: 'POST',
      headers: { 'content-type': 'application/json', signature: platformSignature(body) },
      body,
    });
    expect(good).toMatchObject({ status: 200, outcome: 'processed' });
    expect(ran).toBe(1);
  });

  it('is refused by verifySignature, which never throws for it', async () => {
    const body = envelope('verify-wrong-length');
    for (const [name, signature] of wrongHeaders(body)) {
      await expect(core.verifySignature(body, signature, SECRET), name).resolves.toBe(false);
      await expect(
        core.verifySignature(body, signature, ['another secret', SECRET]),
        name,
      ).resolves.toBe(false);
    }
    await expect(core.verifySignature(body, platformSignature(body), SECRET)).resolves.toBe(true);
  });
});

describe('a signature header of the wrong length over HTTP', () => {
  let server: AdapterServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('is answered 401 invalid_signature by the node:http adapter, for every length and parity', async () => {
    const reasons: unknown[] = [];
    const receiver = onNodeCrypto
      .createReceiver({ secret: SECRET })
      .onError((e) => void reasons.push((e as onNodeCrypto.SignatureError).reason));
    receiver.on('UserSignedIn', () => {});
    server = await listen(createServer(nodeListener(receiver)).listen(0, '127.0.0.1'), '/');
    const body = envelope('http-wrong-length');
    const cases = wrongHeaders(body);
    for (const [name, signature] of cases) {
      const response = await fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', signature },
        body,
      });
      expect(response.status, name).toBe(401);
      expect(await response.json(), name).toEqual({ ok: false, outcome: 'invalid_signature' });
    }
    expect(reasons).toEqual(cases.map(() => 'malformed'));
    const good = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', signature: platformSignature(body) },
      body,
    });
    expect(good.status).toBe(200);
    await good.arrayBuffer();
  });
});
