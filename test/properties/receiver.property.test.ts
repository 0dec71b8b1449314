/**
 * Properties of `receiver.handle` over thousands of generated requests: a tampered body or
 * signature never verifies, hostile input never throws nor answers 5xx, and headers are found in
 * any letter case and any header shape.
 */

import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createReceiver,
  OUTCOME_STATUS,
  type HeadersInput,
  type Receiver,
  type ReceiverOptions,
  type SchoolhooksError,
  type WebhookResult,
} from '../../src/index.js';
import {
  contentType,
  fixtureBody,
  flipBit,
  hostileBody,
  otherHeaders,
  RUNS,
  SECRET,
  sign,
  signableBytes,
} from './arbitraries.js';
import { importWithoutNodeCrypto } from '../helpers/web-crypto-only.js';

const JSON_HEADERS = { 'content-type': 'application/json' };

/** A receiver with a memory store and a handler that never fails, and the errors it reported. */
function setup(options: Partial<ReceiverOptions> = {}): {
  receiver: Receiver;
  errors: SchoolhooksError[];
} {
  const errors: SchoolhooksError[] = [];
  const receiver = createReceiver({ secret: SECRET, ...options })
    .onAny(() => {})
    .onError((error) => {
      errors.push(error);
    });
  return { receiver, errors };
}

/** The status agrees with the outcome table, and `ok` with the status. */
function expectConsistent(result: WebhookResult): void {
  expect(result.status).toBe(OUTCOME_STATUS[result.outcome]);
  expect(result.body.outcome).toBe(result.outcome);
  expect(result.body.ok).toBe(result.status >= 200 && result.status < 300);
}

/** `createReceiver` as loaded on each crypto path. */
const receiverFactories: [string, () => Promise<typeof createReceiver>][] = [
  ['node:crypto', () => Promise.resolve(createReceiver)],
  [
    'Web Crypto',
    async () => (await importWithoutNodeCrypto(() => import('../../src/index.js'))).createReceiver,
  ],
];

describe.each(receiverFactories)('signatures, verified with %s', (_path, load) => {
  let create: typeof createReceiver;
  beforeAll(async () => {
    create = await load();
  });

  function tamperSetup(): Receiver {
    return create({ secret: SECRET }).onAny(() => {});
  }

  it('never verifies a signed body with any single bit flipped', async () => {
    const receiver = tamperSetup();
    await fc.assert(
      fc.asyncProperty(signableBytes, fc.nat(), async (body, position) => {
        const signature = sign(body);
        const tampered = flipBit(body, position % (body.byteLength * 8));
        const headers = { ...JSON_HEADERS, signature };
        const result = await receiver.handle({ method: 'POST', headers, body: tampered });
        expect(result.outcome).toBe('invalid_signature');
        expect(result.status).toBe(401);
        // The untouched body verifies: the property is not met by refusing everything.
        const control = await receiver.handle({ method: 'POST', headers, body });
        expect(control.outcome).not.toBe('invalid_signature');
      }),
      { numRuns: RUNS },
    );
  });

  it('never verifies a signature with any of its 256 bits flipped', async () => {
    const receiver = tamperSetup();
    await fc.assert(
      fc.asyncProperty(fixtureBody, fc.integer({ min: 0, max: 255 }), async (body, bit) => {
        const mac = Buffer.from(sign(body), 'hex');
        const signature = Buffer.from(flipBit(mac, bit)).toString('hex');
        const headers = { ...JSON_HEADERS, signature };
        const result = await receiver.handle({ method: 'POST', headers, body });
        expect(result.status).toBe(401);
      }),
      { numRuns: RUNS },
    );
  });

  it('verifies a bit-flipped hex signature only when the flip just changed a letter’s case', async () => {
    const receiver = tamperSetup();
    await fc.assert(
      fc.asyncProperty(fixtureBody, fc.integer({ min: 0, max: 64 * 8 - 1 }), async (body, bit) => {
        const hex = sign(body);
        const index = bit >> 3;
        const flipped = String.fromCharCode(hex.charCodeAt(index) ^ (1 << (bit & 7)));
        const signature = hex.slice(0, index) + flipped + hex.slice(index + 1);
        // 'a'..'f' with bit 5 flipped is 'A'..'F': hex is case-insensitive, the value unchanged.
        const sameValue = /^[0-9a-fA-F]$/.test(flipped) && signature.toLowerCase() === hex;
        const headers = { ...JSON_HEADERS, signature };
        const result = await receiver.handle({ method: 'POST', headers, body });
        expect(result.status).toBe(sameValue ? 200 : 401);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('hostile input', () => {
  it('never throws and never answers 5xx for any body, signed or not', async () => {
    // A small limit, so that some of the bodies are over it.
    const { receiver, errors } = setup({ maxBodyBytes: 4096 });
    const outcomes = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        hostileBody,
        fc.boolean(),
        fc.option(contentType, { nil: undefined }),
        async (body, signed, type) => {
          const headers: Record<string, string> = signed ? { signature: sign(body) } : {};
          if (type !== undefined) headers['content-type'] = type;
          const result = await receiver.handle({ method: 'POST', headers, body });
          expect(result.status).toBeLessThan(500);
          expectConsistent(result);
          outcomes.add(result.outcome);
        },
      ),
      { numRuns: RUNS },
    );
    // Nothing failed inside the receiver (that is reported as a 503 with a StoreUnavailableError).
    expect(errors.filter((error) => error.code === 'store_unavailable')).toEqual([]);
    // The generated bodies reached every step, not only the signature check.
    expect([...outcomes].sort()).toEqual(
      expect.arrayContaining([
        'invalid_payload',
        'invalid_signature',
        'malformed',
        'processed',
        'stale',
        'too_large',
        'unsupported_media_type',
      ]),
    );
  });

  it('never throws and never answers 5xx for any JSON, signed', async () => {
    const { receiver } = setup();
    await fc.assert(
      fc.asyncProperty(fc.json(), async (body) => {
        const headers = { ...JSON_HEADERS, signature: sign(body) };
        const result = await receiver.handle({ method: 'POST', headers, body });
        expect(result.status).toBeLessThan(500);
        expectConsistent(result);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('headers in any letter case', () => {
  const shapes: Record<string, (pairs: [string, string][], arrays: boolean[]) => HeadersInput> = {
    'a plain object': (pairs) => Object.fromEntries(pairs),
    // Node's request headers: a prototype-less object; `headersDistinct` gives arrays.
    'Node-style headers': (pairs, arrays) => {
      const headers = Object.create(null) as Record<string, string | string[]>;
      pairs.forEach(([name, value], index) => {
        headers[name] = arrays[index % arrays.length] === true ? [value] : value;
      });
      return headers;
    },
    'Fetch Headers': (pairs) => new Headers(pairs),
  };

  for (const [shape, build] of Object.entries(shapes)) {
    it(`finds signature and content-type in ${shape}`, async () => {
      const { receiver } = setup();
      await fc.assert(
        fc.asyncProperty(
          fixtureBody,
          fc.mixedCase(fc.constant('signature')),
          fc.mixedCase(fc.constant('content-type')),
          fc.oneof(contentType, fc.constant('text/plain')),
          otherHeaders,
          fc.boolean(),
          fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }),
          async (body, signatureName, typeName, type, others, othersFirst, arrays) => {
            const ours: [string, string][] = [
              [typeName, type],
              [signatureName, sign(body)],
            ];
            const headers = build(
              othersFirst ? [...others, ...ours] : [...ours, ...others],
              arrays,
            );
            const result = await receiver.handle({ method: 'POST', headers, body });
            // A content type that is not JSON is refused (415), which shows it was found too.
            const isJson = /^application\/json\s*(;|$)/i.test(type.trim());
            expect(result.outcome).toBe(isJson ? 'processed' : 'unsupported_media_type');
          },
        ),
        { numRuns: RUNS },
      );
    });
  }
});
