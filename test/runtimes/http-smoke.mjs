/**
 * The body rules over real HTTP, on the runtime's own server: `Bun.serve` on Bun, `Deno.serve`
 * on Deno, and on Node a server that hands the Fetch handler a `Request` and nothing else
 * (@hono/node-server, as a Next.js route or srvx would). The client is a raw socket (node:net,
 * which all three have), so a body can declare one length and send another, or never end.
 * workerd has no server a script can start: its cases run in `smoke.mjs` only.
 * @module
 */

import { connect } from 'node:net';
import { SECRET, unicodeEnvelope } from './smoke.mjs';

const LIMIT = 64 * 1024;
const PATH = '/webhooks';

/**
 * @typedef {import('./smoke.mjs').CaseResult} CaseResult
 * @typedef {(request: Request) => Promise<Response>} Handler
 * @typedef {{ port: number, close(): Promise<void> }} Listening
 */

/**
 * Serve `handler` on 127.0.0.1 with the runtime's own server.
 * @param {Handler} handler
 * @returns {Promise<Listening>}
 */
async function serve(handler) {
  const { Bun, Deno } = /** @type {{ Bun?: any, Deno?: any }} */ (globalThis);
  if (Bun) {
    const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: handler });
    return { port: server.port, close: async () => server.stop(true) };
  }
  if (Deno) {
    /** @type {(port: number) => void} */
    let listening = () => {};
    const ready = new Promise((resolve) => (listening = resolve));
    const server = Deno.serve(
      {
        port: 0,
        hostname: '127.0.0.1',
        onListen: (/** @type {any} */ { port }) => listening(port),
      },
      handler,
    );
    return { port: /** @type {number} */ (await ready), close: () => server.shutdown() };
  }
  const { createAdaptorServer } = await import('@hono/node-server');
  // `(request) => handler(request)`: the Request alone, no `env.incoming` to read instead.
  const server = createAdaptorServer({ fetch: (/** @type {Request} */ r) => handler(r) });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  return {
    port,
    close: () =>
      new Promise((resolve) => {
        /** @type {any} */ (server).closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/**
 * Write `head` and `parts` on a fresh connection and resolve with the first answer's status and
 * JSON body (or reject after 5 s); `end: false` keeps the request unfinished.
 * @param {number} port
 * @param {string} head
 * @param {Uint8Array[]} parts
 */
function exchange(port, head, parts) {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    /** @type {Uint8Array[]} */
    const received = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('no answer within 5 s'));
    }, 5000);
    const done = (/** @type {unknown} */ answer) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    socket.on('error', () => {}); // a server may reset a socket it stopped reading
    socket.on('connect', async () => {
      socket.write(head);
      for (const part of parts) {
        if (socket.destroyed) return;
        socket.write(part);
        await new Promise((r) => setTimeout(r, 5));
      }
    });
    socket.on('data', (/** @type {Uint8Array} */ data) => {
      received.push(data);
      const text = new TextDecoder().decode(concat(received));
      const answer = parseAnswer(text);
      if (answer !== undefined) done(answer);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      reject(new Error(`the connection closed without an answer`));
    });
  });
}

/** The first HTTP answer in `text` once its whole body arrived, else undefined. */
function parseAnswer(/** @type {string} */ text) {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const head = text.slice(0, end);
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
  const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? NaN);
  let body = text.slice(end + 4);
  if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
    const match = /^([0-9a-f]+)\r\n/i.exec(body);
    if (!match) return undefined;
    body = body.slice(match[0].length, match[0].length + parseInt(match[1] ?? '0', 16));
  } else if (Number.isNaN(length) || new TextEncoder().encode(body).byteLength < length) {
    return undefined;
  }
  try {
    return { status, body: JSON.parse(body) };
  } catch {
    return undefined;
  }
}

function concat(/** @type {Uint8Array[]} */ chunks) {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/** A request head; `length` undefined sends the body chunked. */
function headOf(/** @type {Record<string, string>} */ headers, /** @type {number=} */ length) {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
  lines.push(length === undefined ? 'transfer-encoding: chunked' : `content-length: ${length}`);
  return `POST ${PATH} HTTP/1.1\r\nhost: 127.0.0.1\r\n${lines.join('\r\n')}\r\n\r\n`;
}

/** `bytes` as HTTP chunks, the first ending inside a multi-byte character. */
function chunked(/** @type {Uint8Array} */ bytes, /** @type {boolean} */ last = true) {
  const cut = bytes.findIndex((byte, i) => i > 100 && byte >= 0xc0) + 1;
  const encode = (/** @type {Uint8Array} */ part) =>
    concat([new TextEncoder().encode(`${part.byteLength.toString(16)}\r\n`), part, CRLF]);
  const parts = [encode(bytes.slice(0, cut)), encode(bytes.slice(cut))];
  return last ? [...parts, new TextEncoder().encode('0\r\n\r\n')] : parts;
}
const CRLF = new TextEncoder().encode('\r\n');

/** Lowercase hex HMAC-SHA256 of `body` keyed by {@link SECRET}. */
async function sign(/** @type {Uint8Array} */ body) {
  const key = await crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(SECRET),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, body));
  return Array.from(mac, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/**
 * Run the HTTP cases on this runtime's server; never throws for a failing case.
 * @param {{
 *   createReceiver: typeof import('schoolhooks').createReceiver,
 *   fetchHandler: typeof import('schoolhooks/fetch').fetchHandler,
 *   envelope: import('./smoke.mjs').Envelope,
 * }} options
 * @returns {Promise<CaseResult[]>}
 */
export async function runHttpSmoke({ createReceiver, fetchHandler, envelope }) {
  /** @type {Map<string, unknown>} */
  const received = new Map();
  const receiver = createReceiver({ secret: SECRET, maxBodyBytes: LIMIT });
  receiver.onAny((/** @type {{ idempotencyKey: string, data: unknown }} */ event) => {
    received.set(event.idempotencyKey, event.data);
  });
  const server = await serve(fetchHandler(receiver));

  /** A signed delivery of `data`, as bytes, with its head's headers. */
  async function delivery(/** @type {unknown} */ data) {
    const key = crypto.randomUUID();
    const text = JSON.stringify({
      ...envelope,
      data,
      timestamp: new Date().toISOString(),
      idempotencyKey: key,
    });
    const bytes = new TextEncoder().encode(text);
    const headers = { 'content-type': 'application/json', signature: await sign(bytes) };
    return { key, bytes, headers };
  }
  const unicode = /** @type {{ data: unknown }} */ (unicodeEnvelope(envelope)).data;

  /** @type {[string, () => Promise<void>][]} */
  const cases = [
    ...[true, false].map((declared) => [
      `HTTP: Cyrillic and emoji ${declared ? 'with a Content-Length' : 'chunked'}, split inside a character -> the exact bytes`,
      async () => {
        const { key, bytes, headers } = await delivery(unicode);
        const cut = bytes.findIndex((byte, i) => i > 100 && byte >= 0xc0) + 1;
        const answer = await exchange(
          server.port,
          headOf(headers, declared ? bytes.byteLength : undefined),
          declared ? [bytes.slice(0, cut), bytes.slice(cut)] : chunked(bytes),
        );
        expectAnswer(answer, 200, 'processed');
        const got = JSON.stringify(received.get(key));
        check(got === JSON.stringify(unicode), `the handler got ${String(got).slice(0, 80)}…`);
      },
    ]),
    [
      'HTTP: a Content-Length over maxBodyBytes -> 413 before the client sent the rest',
      async () => {
        const { headers } = await delivery({});
        const answer = await exchange(server.port, headOf(headers, 16 * LIMIT), [
          new Uint8Array(1024).fill(0x20),
        ]);
        expectAnswer(answer, 413, 'too_large');
      },
    ],
    [
      'HTTP: a chunked body past maxBodyBytes -> 413 before the client sent the rest',
      async () => {
        const { headers } = await delivery({});
        const parts = chunked(new Uint8Array(2 * LIMIT).fill(0xd0), false);
        const answer = await exchange(server.port, headOf(headers), parts);
        expectAnswer(answer, 413, 'too_large');
      },
    ],
    [
      'HTTP: bytes sent past the Content-Length are not the body (the server frames it)',
      async () => {
        const { key, bytes, headers } = await delivery(unicode);
        // The declared body, then 2 x maxBodyBytes more on the same request: a lying client.
        // Bun and Deno answer 200 and drop the rest; Node answers 400 to the rest as a request
        // of its own and may close before the 200 goes out. Either way the body is the declared
        // bytes, exactly: the handler gets them and nothing past them.
        const extra = new Uint8Array(2 * LIMIT).fill(0x78);
        const head = headOf(headers, bytes.byteLength);
        const answer = await exchange(server.port, head, [bytes, extra]).catch(() => undefined);
        if (answer !== undefined) expectAnswer(answer, 200, 'processed');
        for (let i = 0; i < 100 && !received.has(key); i++)
          await new Promise((r) => setTimeout(r, 20));
        const got = JSON.stringify(received.get(key));
        check(got === JSON.stringify(unicode), `the handler got ${String(got).slice(0, 80)}…`);
      },
    ],
  ];

  /** @type {CaseResult[]} */
  const results = [];
  try {
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
  } finally {
    await server.close();
  }
  return results;
}

/**
 * @param {unknown} answer
 * @param {number} status
 * @param {string} outcome
 */
function expectAnswer(answer, status, outcome) {
  const { status: got, body } = /** @type {{ status: number, body: { outcome?: string } }} */ (
    answer
  );
  check(
    got === status && body.outcome === outcome,
    `answered ${got} ${JSON.stringify(body)}, expected ${status} ${outcome}`,
  );
}

function check(/** @type {boolean} */ condition, /** @type {string} */ message) {
  if (!condition) throw new Error(message);
}
