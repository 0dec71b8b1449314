import { serve } from '@hono/node-server';
import type { Server } from 'node:http';
import { Readable } from 'node:stream';
import { afterEach, beforeAll, describe, expect, expectTypeOf, it, vi } from 'vitest';
import { fetchHandler } from '../../src/adapters/fetch.js';
import { createReceiver, type Receiver, type SchoolhooksError } from '../../src/index.js';
import { createTestDelivery, SECRET, sign, signedHeaders } from '../helpers/deliveries.js';
import { importWithoutNodeCrypto } from '../helpers/web-crypto-only.js';
import {
  adapterSuite,
  expectAnswer,
  expectOwnFix,
  listen,
  post,
  sendRaw,
  tenantOfPath,
  type AdapterServer,
} from './suite.js';

/** The tenant of a Request's URL `/webhooks/school/<tenant>`, as a Worker or a Bun server reads it. */
const tenant = (request: Request) => tenantOfPath(new URL(request.url).pathname);

adapterSuite(
  'fetch on @hono/node-server',
  (receiver) =>
    listen(serve({ fetch: fetchHandler(receiver), hostname: '127.0.0.1', port: 0 }) as Server),
  {
    tenants: {
      serve: (receiver) => {
        const fetch = fetchHandler(receiver, { tenant });
        return listen(
          serve({ fetch, hostname: '127.0.0.1', port: 0 }) as Server,
          '/webhooks/school',
        );
      },
      withoutTenant: (receiver) => fetchHandler(receiver),
    },
  },
);

// Called with the Request alone, as Bun, Deno and Workers do: the body comes from the Request.
const requestOnly = (receiver: Receiver, path = '/webhooks', options = {}) => {
  const handle = fetchHandler(receiver, options);
  const fetch = (request: Request) => handle(request);
  return listen(serve({ fetch, hostname: '127.0.0.1', port: 0 }) as Server, path);
};

adapterSuite(
  'fetch reading the Fetch Request (no env.incoming)',
  (receiver) => requestOnly(receiver),
  {
    tenants: {
      serve: (receiver) => requestOnly(receiver, '/webhooks/school', { tenant }),
      withoutTenant: (receiver) => fetchHandler(receiver),
    },
  },
);

const WEBHOOK_URL = 'http://localhost/webhooks';

async function answerOf(response: Response) {
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    body: (await response.json()) as unknown,
  };
}

describe('fetchHandler on @hono/node-server', () => {
  let server: AdapterServer | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await server?.close();
  });

  it('reads the Node request it is given as env.incoming: no web stream is built', async () => {
    const toWeb = vi.spyOn(Readable, 'toWeb');
    const receiver = createReceiver({ secret: SECRET }).onAny(() => {});
    server = await listen(
      serve({ fetch: fetchHandler(receiver), hostname: '127.0.0.1', port: 0 }) as Server,
    );
    const delivery = createTestDelivery();
    expectAnswer(await post(server.url, delivery), 200, {
      ok: true,
      outcome: 'processed',
      idempotencyKey: delivery.idempotencyKey,
    });
    expect(toWeb).not.toHaveBeenCalled();
  });
});

describe('fetchHandler behind code that read the body first', () => {
  let server: AdapterServer | undefined;
  afterEach(() => server?.close());

  it('answers 500 body_unavailable over HTTP, naming its own fix', async () => {
    const errors: SchoolhooksError[] = [];
    const handle = fetchHandler(
      createReceiver({ secret: SECRET }).onError((error) => void errors.push(error)),
    );
    const fetch = async (request: Request) => {
      await request.text(); // an app's own body parsing, ahead of the handler
      return handle(request);
    };
    server = await listen(serve({ fetch, hostname: '127.0.0.1', port: 0 }) as Server);
    expectAnswer(await post(server.url, createTestDelivery()), 500, {
      ok: false,
      outcome: 'body_unavailable',
    });
    expectOwnFix(errors[0], 'fetch');
  });
});

/**
 * How the Fetch adapter reads a `Request` that comes alone (Next.js, srvx, any Request-only server),
 * on @hono/node-server 2.x over real HTTP: what the server built is watched, not assumed.
 */
describe('fetchHandler on a Request-only server: the body fast path', () => {
  let server: AdapterServer | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await server?.close();
  });

  /** Serves `receiver` with a Fetch handler that records how each Request's body was read. */
  async function start(receiver: Receiver) {
    const handle = fetchHandler(receiver);
    const reads = { arrayBuffer: 0, webStreams: 0 };
    const toWeb = Readable.toWeb.bind(Readable);
    vi.spyOn(Readable, 'toWeb').mockImplementation((stream) => {
      reads.webStreams++;
      return toWeb(stream);
    });
    const fetch = (request: Request) => {
      const arrayBuffer = request.arrayBuffer.bind(request);
      // The server's Request defines arrayBuffer read-only on its prototype: shadow it here.
      Object.defineProperty(request, 'arrayBuffer', {
        value: () => {
          reads.arrayBuffer++;
          return arrayBuffer();
        },
      });
      return handle(request);
    };
    server = await listen(serve({ fetch, hostname: '127.0.0.1', port: 0 }) as Server);
    return { url: server.url, reads };
  }

  /** A delivery whose text is Cyrillic and emoji, so a byte read twice or cut in two shows. */
  function unicodeDelivery() {
    const data = { user: { id: 1, name: 'Пётр Иванов 👩‍🏫', note: 'курс «Основы» ✅🎉'.repeat(40) } };
    return { data, ...createTestDelivery('UserSignedIn', data) };
  }

  it('reads a body with a Content-Length by arrayBuffer(), to the exact bytes', async () => {
    const seen: unknown[] = [];
    const { url, reads } = await start(
      createReceiver({ secret: SECRET }).onAny((event) => void seen.push(event.data)),
    );
    const delivery = unicodeDelivery();
    const answer = await sendRaw(url, {
      headers: { ...delivery.headers, 'content-length': Buffer.byteLength(delivery.body) },
      // Split inside a multi-byte character: the server joins the bytes, not the characters.
      chunks: splitInsideACharacter(delivery.body),
    });
    expectAnswer(answer, 200, {
      ok: true,
      outcome: 'processed',
      idempotencyKey: delivery.idempotencyKey,
    });
    expect(seen).toEqual([delivery.data]);
    expect(reads).toEqual({ arrayBuffer: 1, webStreams: 0 });
  });

  it('reads a chunked body with a stream reader, to the exact bytes', async () => {
    const seen: unknown[] = [];
    const { url, reads } = await start(
      createReceiver({ secret: SECRET }).onAny((event) => void seen.push(event.data)),
    );
    const delivery = unicodeDelivery();
    const answer = await sendRaw(url, {
      headers: delivery.headers,
      chunks: splitInsideACharacter(delivery.body),
    });
    expectAnswer(answer, 200, {
      ok: true,
      outcome: 'processed',
      idempotencyKey: delivery.idempotencyKey,
    });
    expect(seen).toEqual([delivery.data]);
    expect(reads).toEqual({ arrayBuffer: 0, webStreams: 1 });
  });

  it('answers 413 to a Content-Length over the limit before reading any of it', async () => {
    const { url, reads } = await start(createReceiver({ secret: SECRET, maxBodyBytes: 1024 }));
    const body = JSON.stringify({ padding: 'я'.repeat(4096) });
    const answer = await sendRaw(url, {
      headers: { ...signedHeaders(body), 'content-length': Buffer.byteLength(body) },
      chunks: [body.slice(0, 100)],
      // The client never sends the rest: the answer cannot have waited for it.
      end: false,
    });
    expectAnswer(answer, 413, { ok: false, outcome: 'too_large' });
    expect(reads).toEqual({ arrayBuffer: 0, webStreams: 0 });
  });

  it('answers 413 to a chunked body once past the limit, read as a stream, never whole', async () => {
    const { url, reads } = await start(createReceiver({ secret: SECRET, maxBodyBytes: 1024 }));
    const body = JSON.stringify({ padding: '😀'.repeat(4096) });
    const answer = await sendRaw(url, {
      headers: signedHeaders(body),
      chunks: [body.slice(0, 1500)],
      end: false,
    });
    expectAnswer(answer, 413, { ok: false, outcome: 'too_large' });
    expect(reads).toEqual({ arrayBuffer: 0, webStreams: 1 });
  });
});

/** `text` as UTF-8 in three chunks, the first ending in the middle of a multi-byte character. */
function splitInsideACharacter(text: string): Uint8Array[] {
  const bytes = Buffer.from(text);
  const cut = bytes.findIndex((byte, i) => i > 100 && byte >= 0xc0) + 1;
  return [bytes.subarray(0, cut), bytes.subarray(cut, cut + 500), bytes.subarray(cut + 500)];
}

describe('fetchHandler called with a Request', () => {
  it('processes a delivery and answers JSON', async () => {
    const handle = fetchHandler(createReceiver({ secret: SECRET }).onAny(() => {}));
    const delivery = createTestDelivery();
    const response = await handle(new Request(WEBHOOK_URL, { method: 'POST', ...delivery }));
    expectAnswer(await answerOf(response), 200, {
      ok: true,
      outcome: 'processed',
      idempotencyKey: delivery.idempotencyKey,
    });
  });

  it('answers 413 to a streamed body over the limit without reading all of it', async () => {
    const handle = fetchHandler(createReceiver({ secret: SECRET, maxBodyBytes: 1024 }));
    let pulls = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls++;
        controller.enqueue(new Uint8Array(512));
      },
    });
    const request = new Request(WEBHOOK_URL, {
      method: 'POST',
      headers: { 'content-type': 'application/json', signature: 'a'.repeat(64) },
      body,
      duplex: 'half',
    } as RequestInit);
    expectAnswer(await answerOf(await handle(request)), 413, { ok: false, outcome: 'too_large' });
    // An endless body: reading stopped just past the limit.
    expect(pulls).toBeLessThan(6);
  });

  it('answers 400 malformed when the body stream breaks', async () => {
    const handle = fetchHandler(createReceiver({ secret: SECRET }));
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.error(new Error('connection reset'));
      },
    });
    const request = new Request(WEBHOOK_URL, {
      method: 'POST',
      headers: { 'content-type': 'application/json', signature: 'a'.repeat(64) },
      body,
      duplex: 'half',
    } as RequestInit);
    expectAnswer(await answerOf(await handle(request)), 400, { ok: false, outcome: 'malformed' });
  });

  it('answers 500 body_unavailable when the body was already read', async () => {
    const handle = fetchHandler(createReceiver({ secret: SECRET }));
    const delivery = createTestDelivery();
    const request = new Request(WEBHOOK_URL, { method: 'POST', ...delivery });
    await request.text();
    expectAnswer(await answerOf(await handle(request)), 500, {
      ok: false,
      outcome: 'body_unavailable',
    });
  });
});

describe('fetchHandler on Web Crypto alone (Bun, Deno, Workers)', () => {
  let server: AdapterServer | undefined;
  let createWebCryptoReceiver: typeof createReceiver;
  beforeAll(async () => {
    ({ createReceiver: createWebCryptoReceiver } = await importWithoutNodeCrypto(
      () => import('../../src/index.js'),
    ));
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await server?.close();
  });

  async function start() {
    // The first (here the only) secret's HMAC is computed with subtle.sign: it is the fingerprint.
    const verify = vi.spyOn(globalThis.crypto.subtle, 'sign');
    const receiver = createWebCryptoReceiver({ secret: SECRET }).onAny(() => {});
    server = await listen(
      serve({ fetch: fetchHandler(receiver), hostname: '127.0.0.1', port: 0 }) as Server,
    );
    return { url: server.url, verify };
  }

  it('answers 200 processed, verified by crypto.subtle', async () => {
    const { url, verify } = await start();
    const delivery = createTestDelivery();
    expectAnswer(await post(url, delivery), 200, {
      ok: true,
      outcome: 'processed',
      idempotencyKey: delivery.idempotencyKey,
    });
    expect(verify).toHaveBeenCalled();
  });

  it('answers 401 invalid_signature to a wrong signature', async () => {
    const { url, verify } = await start();
    const delivery = createTestDelivery();
    const headers = { ...delivery.headers, signature: sign(delivery.body, 'another secret') };
    expectAnswer(await post(url, { body: delivery.body, headers }), 401, {
      ok: false,
      outcome: 'invalid_signature',
    });
    expect(verify).toHaveBeenCalled();
  });
});

describe('the types of schoolhooks/fetch', () => {
  it('takes a Request and what the server passes beside it, and resolves to a Response', () => {
    expectTypeOf(fetchHandler).returns.toEqualTypeOf<
      (request: Request, env?: unknown) => Promise<Response>
    >();
    // A user's code, compiled and never run.
    const compiles = (receiver: Receiver) => {
      const handle = fetchHandler(receiver);
      // Workers' (request, env, ctx) and Next.js' (request, context) calls.
      void handle(new Request('http://localhost/'), { BINDING: 1 });
      // @ts-expect-error a Request, not a URL
      void handle('http://localhost/');
    };
    expectTypeOf(compiles).toBeFunction();
  });

  it('takes a `tenant` read from the Request, or from what the server passes beside it', () => {
    const compiles = (receiver: Receiver) => {
      fetchHandler(receiver, { tenant: (request) => new URL(request.url).pathname.split('/')[3] });
      fetchHandler(receiver, {
        tenant: (_request, env) => (env as { params?: { tenant?: string } }).params?.tenant,
      });
      // @ts-expect-error a tenant is a string, not a number
      fetchHandler(receiver, { tenant: () => 7 });
      // @ts-expect-error the request is a Fetch Request, not a URL
      fetchHandler(receiver, { tenant: (url: URL) => url.pathname });
    };
    expectTypeOf(compiles).toBeFunction();
  });
});
