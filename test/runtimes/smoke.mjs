/**
 * The runtime smoke suite: signed fixture deliveries through `schoolhooks/fetch` on whichever
 * runtime runs it (Node, Bun, Deno, workerd). It is runtime-agnostic on purpose: it uses only the
 * package's `createReceiver` and `fetchHandler`, `Request`/`Response`, `ReadableStream` and
 * `crypto.subtle`, so one list of cases proves the same things everywhere.
 * @module
 */

/** A secret shaped like the platform's: 64 characters that look like hex, used as they are. */
export const SECRET = '5f0c8e2a91d4b7363e6a0f9c2b17d8e45f0c8e2a91d4b7363e6a0f9c2b17d8e4';

/** The secret of an endpoint being rotated out: accepted for as long as it is listed. */
export const PREVIOUS_SECRET = 'Zq7Lm2Rx9Tv4Wb8Nc1Hd6Jf3Kg5Ps0YeUa4Ci8Eo2Gu6Ky0Mw3Oz5Qb7Sd9Uf1Xh';

/**
 * HMAC-SHA256 of this body keyed by {@link SECRET} as 64 UTF-8 characters, computed outside the
 * package (Python's hmac). Keyed by the hex-decoded secret it would be ac41470…bf16 instead.
 */
const KNOWN_ANSWER = {
  body: '{"event":"UserSignedIn","timestamp":"2026-11-01T10:00:00.000Z","idempotencyKey":"kat","data":{}}',
  signature: 'bf565e00f22f59698cef2c4dea625f3c6fa783f028b4fcba467822f82a5992f0',
};

/** Starts the line that carries a runtime's report to the driver, amid anything else printed. */
export const REPORT_PREFIX = 'SMOKE_REPORT ';

const MiB = 1024 * 1024;
/** maxBodyBytes of the receiver that streamed bodies are sent to. */
const SMALL_LIMIT = 64 * 1024;
/** The size of each chunk a streamed body is pulled in. */
const CHUNK = 16 * 1024;
const URL_BASE = 'https://receiver.example/webhooks';

/**
 * @typedef {{ event: string, timestamp?: string, idempotencyKey?: string, data: unknown }} Envelope
 * @typedef {{ name: string, envelope: Envelope }} Fixture an envelope without timestamp or key
 * @typedef {{ valid: Fixture[], invalidPayload: Fixture[] }} Fixtures
 * @typedef {{ name: string, ok: boolean, error?: string }} CaseResult
 * @typedef {{
 *   runtime: string,
 *   crypto: { expected: string, actual: string },
 *   results: CaseResult[],
 *   ok: boolean,
 * }} SmokeReport
 * @typedef {(request: Request) => Promise<Response>} Handler
 */

/**
 * Run every case and report; never throws for a failing case.
 *
 * @param {{
 *   createReceiver: typeof import('schoolhooks').createReceiver,
 *   fetchHandler: typeof import('schoolhooks/fetch').fetchHandler,
 *   fixtures: Fixtures,
 * }} options
 * @returns {Promise<SmokeReport>}
 */
export async function runSmoke({ createReceiver, fetchHandler, fixtures }) {
  const verifyCalls = countSubtleVerify();
  try {
    /** @type {string[]} */
    const dispatched = [];
    /** @type {Map<string, unknown>} */
    const received = new Map();
    const receiver = createReceiver({ secret: [PREVIOUS_SECRET, SECRET] });
    receiver.onAny((/** @type {{ idempotencyKey: string, data: unknown }} */ event) => {
      dispatched.push(event.idempotencyKey);
      received.set(event.idempotencyKey, event.data);
    });
    const send = fetchHandler(receiver);
    const small = createReceiver({ secret: SECRET, maxBodyBytes: SMALL_LIMIT });
    small.onAny(() => {});
    const sendSmall = fetchHandler(small);

    /** @type {[string, () => Promise<void>][]} */
    const cases = [
      [
        'signs with the secret taken literally (known answer)',
        async () => {
          const signature = await sign(KNOWN_ANSWER.body, SECRET);
          check(signature === KNOWN_ANSWER.signature, `signature ${signature}`);
        },
      ],
      ...fixtures.valid.map(({ name, envelope }) => [
        `${name} fixture -> 200 processed`,
        async () => {
          const delivery = await deliver(envelope);
          await expectAnswer(await post(send, delivery), 200, 'processed', delivery.key);
          check(dispatched.includes(delivery.key), 'the onAny handler did not run');
        },
      ]),
      [
        'the same delivery again -> 200 duplicate',
        async () => {
          const delivery = await deliver(firstEnvelope(fixtures));
          await expectAnswer(await post(send, delivery), 200, 'processed', delivery.key);
          await expectAnswer(await post(send, delivery), 200, 'duplicate', delivery.key);
          const runs = dispatched.filter((key) => key === delivery.key).length;
          check(runs === 1, `the handler ran ${runs} times`);
        },
      ],
      [
        'signed with the previous secret of a rotation -> 200 processed',
        async () => {
          const delivery = await deliver(firstEnvelope(fixtures), { secret: PREVIOUS_SECRET });
          await expectAnswer(await post(send, delivery), 200, 'processed', delivery.key);
        },
      ],
      [
        'a forged signature (another secret) -> 401 invalid_signature',
        async () => {
          const delivery = await deliver(firstEnvelope(fixtures), { secret: 'f'.repeat(64) });
          await expectAnswer(await post(send, delivery), 401, 'invalid_signature');
        },
      ],
      [
        'keyed by the hex-decoded secret -> 401 invalid_signature',
        async () => {
          const delivery = await deliver(firstEnvelope(fixtures), { secret: hexBytes(SECRET) });
          await expectAnswer(await post(send, delivery), 401, 'invalid_signature');
        },
      ],
      [
        'a body changed after signing -> 401 invalid_signature',
        async () => {
          const delivery = await deliver(firstEnvelope(fixtures));
          const body = delivery.body.replace('"data":{', '"data":{"injected":true,');
          check(body !== delivery.body, 'the body was not changed');
          await expectAnswer(await post(send, { ...delivery, body }), 401, 'invalid_signature');
        },
      ],
      [
        'a body 1 byte over 1 MiB with its content-length -> 413 too_large',
        async () => {
          const delivery = await deliver(padded(firstEnvelope(fixtures), MiB + 1));
          const headers = { ...delivery.headers, 'content-length': String(MiB + 1) };
          await expectAnswer(await post(send, { ...delivery, headers }), 413, 'too_large');
        },
      ],
      [
        'a body 1 byte over 1 MiB without a content-length -> 413 too_large',
        async () => {
          const delivery = await deliver(padded(firstEnvelope(fixtures), MiB + 1));
          await expectAnswer(await post(send, delivery), 413, 'too_large');
        },
      ],
      [
        'a body of exactly maxBodyBytes -> 200 processed',
        async () => {
          const delivery = await deliver(padded(firstEnvelope(fixtures), SMALL_LIMIT));
          await expectAnswer(await post(sendSmall, delivery), 200, 'processed', delivery.key);
        },
      ],
      [
        'a streamed body of 16x maxBodyBytes -> 413, read no further than the limit',
        async () => {
          let pulled = 0;
          const stream = new ReadableStream(
            {
              pull(controller) {
                if (pulled >= 16 * SMALL_LIMIT) return controller.close();
                controller.enqueue(new Uint8Array(CHUNK).fill(0x20));
                pulled += CHUNK;
              },
            },
            { highWaterMark: 0 },
          );
          const headers = { 'content-type': 'application/json', signature: '0'.repeat(64) };
          // `duplex` is required by Node's Request for a stream body and ignored elsewhere.
          const init = { method: 'POST', headers, body: stream, duplex: 'half' };
          await expectAnswer(await sendSmall(new Request(URL_BASE, init)), 413, 'too_large');
          // One chunk past the limit ends the read; a runtime may queue a chunk or two ahead.
          const bound = SMALL_LIMIT + 4 * CHUNK;
          check(pulled <= bound, `pulled ${pulled} bytes of the body, more than ${bound}`);
        },
      ],
      [
        'a streamed body declaring a Content-Length over maxBodyBytes -> 413, none of it read',
        async () => {
          const body = counted([new Uint8Array(SMALL_LIMIT + 1).fill(0x20)]);
          const headers = {
            'content-type': 'application/json',
            signature: '0'.repeat(64),
            'content-length': String(SMALL_LIMIT + 1),
          };
          const init = { method: 'POST', headers, body: body.stream, duplex: 'half' };
          await expectAnswer(await sendSmall(new Request(URL_BASE, init)), 413, 'too_large');
          check(body.pulled() === 0, `pulled ${body.pulled()} bytes of a body refused unread`);
        },
      ],
      ...[true, false].map((declared) => [
        `Cyrillic and emoji split inside a character, ${declared ? 'with' : 'without'} a Content-Length -> the exact bytes`,
        async () => {
          const delivery = await deliver(unicodeEnvelope(firstEnvelope(fixtures)));
          const bytes = new TextEncoder().encode(delivery.body);
          const headers = declared
            ? { ...delivery.headers, 'content-length': String(bytes.byteLength) }
            : delivery.headers;
          const init = {
            method: 'POST',
            headers,
            body: counted(splitInsideACharacter(bytes)).stream,
          };
          const request = new Request(URL_BASE, { ...init, duplex: 'half' });
          await expectAnswer(await send(request), 200, 'processed', delivery.key);
          const data = JSON.stringify(received.get(delivery.key));
          const sent = JSON.stringify(JSON.parse(delivery.body).data);
          check(data === sent, `the handler got ${data.slice(0, 80)}…`);
        },
      ]),
      [
        'a Request whose Content-Length understates a body over maxBodyBytes -> 413',
        async () => {
          const body = counted([new Uint8Array(2 * SMALL_LIMIT).fill(0x20)]);
          const headers = { ...(await headersFor('{}', SECRET)), 'content-length': '2' };
          const init = { method: 'POST', headers, body: body.stream, duplex: 'half' };
          await expectAnswer(await sendSmall(new Request(URL_BASE, init)), 413, 'too_large');
        },
      ],
      ...fixtures.invalidPayload.map(({ name, envelope }) => [
        `${name} -> 422 invalid_payload`,
        async () => {
          const delivery = await deliver(envelope);
          await expectAnswer(await post(send, delivery), 422, 'invalid_payload', delivery.key);
        },
      ]),
      [
        'a body that is not JSON -> 400 malformed',
        async () => {
          const body = 'event=UserSignedUp';
          const delivery = { body, headers: await headersFor(body, SECRET) };
          await expectAnswer(await post(send, delivery), 400, 'malformed');
        },
      ],
      [
        'a timestamp 73 hours old -> 422 stale',
        async () => {
          const timestamp = new Date(Date.now() - 73 * 3_600_000).toISOString();
          const delivery = await deliver({ ...firstEnvelope(fixtures), timestamp });
          await expectAnswer(await post(send, delivery), 422, 'stale', delivery.key);
        },
      ],
    ];

    /** @type {CaseResult[]} */
    const results = [];
    for (const [name, run] of cases) {
      try {
        await run();
        results.push({ name, ok: true });
      } catch (error) {
        results.push({
          name,
          ok: false,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }

    // node:crypto wherever the runtime has it (docs/maintainers/benchmarks.md: 15x faster), Web Crypto elsewhere; the
    // deliveries above went through whichever path the package chose.
    const expected = hasNodeCrypto() ? 'node:crypto' : 'web-crypto';
    const actual = verifyCalls.count > 0 ? 'web-crypto' : 'node:crypto';
    results.push({
      name: `verified with ${expected}`,
      ok: actual === expected,
      ...(actual !== expected && { error: `verified with ${actual}` }),
    });
    return {
      runtime: describeRuntime(),
      crypto: { expected, actual },
      results,
      ok: results.every((result) => result.ok),
    };
  } finally {
    verifyCalls.restore();
  }
}

/** Lowercase hex HMAC-SHA256 of `body`; a string key is taken as its UTF-8 bytes, as it is. */
async function sign(/** @type {string} */ body, /** @type {string | Uint8Array} */ secret) {
  const raw = typeof secret === 'string' ? new TextEncoder().encode(secret) : secret;
  const key = await crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
  ]);
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(body)));
  return Array.from(mac, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

async function headersFor(/** @type {string} */ body, /** @type {string | Uint8Array} */ secret) {
  return { 'content-type': 'application/json', signature: await sign(body, secret) };
}

/**
 * The envelope with a fresh idempotencyKey, stamped now unless it has a timestamp, serialised and
 * signed.
 * @param {Envelope} envelope
 * @param {{ secret?: string | Uint8Array }} [options]
 */
async function deliver(envelope, { secret = SECRET } = {}) {
  const key = crypto.randomUUID();
  const body = JSON.stringify({
    ...envelope,
    timestamp: envelope.timestamp ?? new Date().toISOString(),
    idempotencyKey: key,
  });
  return { key, body, headers: await headersFor(body, secret) };
}

/**
 * @param {Handler} handler
 * @param {{ body: string, headers: Record<string, string> }} delivery
 */
function post(handler, { body, headers }) {
  return handler(new Request(URL_BASE, { method: 'POST', headers, body }));
}

/**
 * @param {Response} response
 * @param {number} status
 * @param {string} outcome
 * @param {string} [idempotencyKey]
 */
async function expectAnswer(response, status, outcome, idempotencyKey) {
  const text = await response.text();
  check(response.status === status, `answered ${response.status} ${text}, expected ${status}`);
  check(
    response.headers.get('content-type')?.startsWith('application/json') === true,
    `content-type ${response.headers.get('content-type')}`,
  );
  const body = JSON.parse(text);
  check(body.outcome === outcome, `outcome ${body.outcome}, expected ${outcome}`);
  check(body.ok === status < 300, `ok ${body.ok} with status ${status}`);
  if (idempotencyKey !== undefined) {
    check(body.idempotencyKey === idempotencyKey, `idempotencyKey ${body.idempotencyKey}`);
  }
}

/**
 * A stream of `chunks` pulled one at a time (nothing is queued ahead), and how many bytes of it
 * were pulled.
 * @param {Uint8Array[]} chunks
 */
function counted(chunks) {
  let pulled = 0;
  let next = 0;
  const stream = new ReadableStream(
    {
      pull(controller) {
        const chunk = chunks[next++];
        if (chunk === undefined) return controller.close();
        pulled += chunk.byteLength;
        controller.enqueue(chunk);
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, pulled: () => pulled };
}

/** `bytes` in three chunks, the first ending inside a multi-byte UTF-8 character. */
function splitInsideACharacter(/** @type {Uint8Array} */ bytes) {
  const cut = bytes.findIndex((byte, i) => i > 100 && byte >= 0xc0) + 1;
  check(cut > 0, 'the body has no multi-byte character');
  return [bytes.slice(0, cut), bytes.slice(cut, cut + 500), bytes.slice(cut + 500)];
}

/** The envelope with Cyrillic and emoji (one a sequence of several code points) in its data. */
export function unicodeEnvelope(/** @type {Envelope} */ envelope) {
  const data = /** @type {Record<string, unknown>} */ (envelope.data);
  return { ...envelope, data: { ...data, note: 'Пётр Иванов 👩‍🏫, курс «Основы» ✅🎉 '.repeat(30) } };
}

/**
 * The envelope stamped now, padded inside `data` so that {@link deliver} serialises it to exactly
 * `size` bytes (its key is a UUID, always 36 characters).
 */
function padded(/** @type {Envelope} */ envelope, /** @type {number} */ size) {
  const timestamp = new Date().toISOString();
  const data = /** @type {Record<string, unknown>} */ (envelope.data);
  const unpadded = { ...envelope, timestamp, data: { ...data, padding: '' } };
  const base = new TextEncoder().encode(
    JSON.stringify({ ...unpadded, idempotencyKey: crypto.randomUUID() }),
  ).byteLength;
  check(base <= size, `the envelope is already ${base} bytes`);
  return { ...unpadded, data: { ...data, padding: ' '.repeat(size - base) } };
}

function firstEnvelope(/** @type {Fixtures} */ fixtures) {
  const [first] = fixtures.valid;
  if (first === undefined) throw new Error('no fixtures were given');
  return first.envelope;
}

function hexBytes(/** @type {string} */ hex) {
  return Uint8Array.from(hex.match(/../g) ?? [], (pair) => parseInt(pair, 16));
}

function check(/** @type {boolean} */ condition, /** @type {string} */ message) {
  if (!condition) throw new Error(message);
}

/** Count the receiver's Web Crypto verifications, to tell which crypto path it took. */
function countSubtleVerify() {
  const subtle = crypto.subtle;
  const verify = subtle.verify;
  const counter = {
    count: 0,
    restore() {
      subtle.verify = verify;
    },
  };
  subtle.verify = function countedVerify(...args) {
    counter.count++;
    return verify.apply(subtle, args);
  };
  return counter;
}

/** Whether `node:crypto` is reachable the way the package looks for it. */
function hasNodeCrypto() {
  const proc = globalThis.process;
  if (typeof proc?.getBuiltinModule !== 'function') return false;
  try {
    return typeof proc.getBuiltinModule('node:crypto')?.createHmac === 'function';
  } catch {
    return false;
  }
}

function describeRuntime() {
  if (typeof globalThis.Deno === 'object') return `Deno ${globalThis.Deno.version.deno}`;
  if (typeof globalThis.Bun === 'object') return `Bun ${globalThis.Bun.version}`;
  if (globalThis.navigator?.userAgent === 'Cloudflare-Workers') return 'workerd';
  return `Node ${globalThis.process?.versions?.node}`;
}
