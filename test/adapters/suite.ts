/**
 * One integration suite for every adapter: each case starts a real server on 127.0.0.1, sends
 * real HTTP requests, and checks the status and JSON body of every row of the status table of docs/receiving.md.
 */

import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { request as httpRequest, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ConfigError,
  createReceiver,
  InboxUnavailableError,
  MalformedEnvelopeError,
  memoryInbox,
  memoryStore,
  PayloadValidationError,
  SecretUnavailableError,
  StoreUnavailableError,
  UnknownTenantError,
  type IdempotencyStore,
  type Inbox,
  type Receiver,
  type ReceiverOptions,
  type SchoolhooksError,
  type SecretLookup,
} from '../../src/index.js';
import {
  createTestDelivery,
  deferred,
  fixtureDelivery,
  fixtureFileDelivery,
  SECRET,
  sign,
  signedHeaders,
  type Delivery,
} from '../helpers/deliveries.js';

/** A server running one adapter on loopback. */
export interface AdapterServer {
  /** Where the adapter answers. */
  readonly url: string;
  close(): Promise<void>;
}

/** Start a real server whose webhook route is answered by `receiver` through one adapter. */
export type ServeAdapter = (receiver: Receiver) => Promise<AdapterServer>;

/** What came back: the status, the content type and the parsed JSON body. */
export interface Answer {
  status: number;
  contentType: string | null;
  body: unknown;
}

const MiB = 1024 * 1024;

/** Wait until `server` listens on loopback and describe it; `close` drops open connections. */
export async function listen(server: Server, path = '/webhooks'): Promise<AdapterServer> {
  if (!server.listening) await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    close: () =>
      new Promise((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** Send a request with the global fetch. */
export async function post(
  url: string,
  { body, headers }: { body?: BodyInit; headers?: Record<string, string> },
  method = 'POST',
): Promise<Answer> {
  const response = await fetch(url, { method, ...(headers && { headers }), ...(body && { body }) });
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    body: JSON.parse(await response.text()),
  };
}

/** How {@link sendRaw} sends. */
export interface RawSend {
  method?: string;
  headers: Record<string, string | number>;
  /** Written one by one; without a content-length header they go out chunked. */
  chunks: readonly (string | Uint8Array)[];
  /** A pause after each chunk, for a slow client. */
  pauseMs?: number;
  /** false: never finish the request, to prove the answer did not wait for the rest of it. */
  end?: boolean;
}

/** Send a request with node:http, chunk by chunk; resolves with the answer, or fails after 5 s. */
export function sendRaw(
  url: string,
  { method = 'POST', headers, chunks, pauseMs = 0, end = true }: RawSend,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest(url, { method, headers, agent: false });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error('no answer within 5 s'));
    }, 5000);
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => {
        answered = true;
        clearTimeout(timer);
        if (!end) req.destroy();
        resolve({
          status: res.statusCode ?? 0,
          contentType: res.headers['content-type'] ?? null,
          body: JSON.parse(Buffer.concat(parts).toString('utf8')),
        });
      });
    });
    // Once answered, a server that drops the rest of an unfinished body may reset the socket.
    req.on('error', (error) => {
      if (answered) return;
      clearTimeout(timer);
      reject(error);
    });
    void (async () => {
      for (const chunk of chunks) {
        if (answered || req.destroyed) return;
        req.write(chunk);
        if (pauseMs > 0) await sleep(pauseMs);
      }
      if (end && !req.destroyed) req.end();
    })();
  });
}

/** Check the status, the JSON content type and the whole body of an answer. */
export function expectAnswer(answer: Answer, status: number, body: Record<string, unknown>): void {
  expect(answer.contentType).toMatch(/^application\/json\b/);
  expect({ status: answer.status, body: answer.body }).toEqual({ status, body });
}

/**
 * The export each adapter's raw-body fix names, and no other adapter's fix does: the ConfigError
 * of a `body_unavailable` answer must tell a developer what to do on their own framework, and
 * advice for another (express.json() on a Fastify app) sends them the wrong way.
 */
const FIX_NAMES = {
  express: 'expressMiddleware',
  fastify: 'schoolhooksPlugin',
  nestjs: 'NestFactory.create(AppModule, { rawBody: true })',
  koa: 'koaMiddleware',
  hono: 'honoHandler',
  fetch: 'fetchHandler',
  node: 'nodeListener',
} as const;

/** Check that `error` is the ConfigError of `body_unavailable`, naming `framework`'s fix alone. */
export function expectOwnFix(
  error: SchoolhooksError | undefined,
  framework: keyof typeof FIX_NAMES,
): void {
  expect(error).toBeInstanceOf(ConfigError);
  expect(error?.message).toMatch(/^the raw request body is not available/);
  expect(error?.message).toContain(FIX_NAMES[framework]);
  for (const [other, name] of Object.entries(FIX_NAMES)) {
    if (other !== framework) expect(error?.message).not.toContain(name);
  }
}

const processed = (delivery: Delivery) => ({
  ok: true,
  outcome: 'processed',
  idempotencyKey: delivery.idempotencyKey,
});

/** A delivery whose data carries `bytes` of padding. */
function largeDelivery(bytes: number): Delivery {
  return createTestDelivery('UserSignedIn', { user: { id: 1 }, padding: 'x'.repeat(bytes) });
}

/**
 * How an adapter serves many schools on one endpoint: a route with the tenant in its
 * path, read by the adapter's `tenant` option.
 */
export interface TenantRoutes {
  /**
   * Start a real server whose routes `<url>/<tenant>` (`/webhooks/school/:tenant`, or the
   * framework's equivalent) are answered by `receiver` through the adapter, made with a `tenant`
   * option that reads the tenant from the route.
   */
  serve(receiver: Receiver): Promise<AdapterServer>;
  /**
   * Make the adapter (with its app, where a plugin or a module makes it) without a `tenant`
   * option: for a receiver whose secret is a lookup, this must throw a ConfigError (or reject).
   */
  withoutTenant(receiver: Receiver): unknown;
}

/**
 * The tenant of a path `/webhooks/school/<tenant>` (percent-decoded, query string aside), for the
 * adapters whose framework has no route parameters; undefined for any other path.
 */
export function tenantOfPath(url: string | undefined): string | undefined {
  const match = /^\/webhooks\/school\/([^/?]+)(?:\?|$)/.exec(url ?? '');
  if (!match) return undefined;
  try {
    return decodeURIComponent(match[1]!);
  } catch {
    return undefined; // not percent-encoding: no tenant of ours
  }
}

/** What a platform does with a body before the adapter sees it, and how it serves tenants. */
export interface SuiteOptions {
  /** The adapter's tenant routes: every adapter must serve them. */
  tenants: TenantRoutes;
  /**
   * The adapter is handed whole bodies only (Lambda: API Gateway or the ALB reads the request
   * first; Nest: its parser does). The cases that leave a body unfinished or cut it off test how
   * an adapter reads a stream, which it does not: they do not apply.
   */
  wholeBodies?: boolean;
  /**
   * The framework parses JSON before the adapter (Nest, with `rawBody: true`, its limit set to
   * maxBodyBytes): it refuses a body over its limit, one that is not JSON, or one of a content
   * type it has no parser for, with an answer of its own, so only the status of those refusals
   * is checked.
   */
  frameworkRefusals?: boolean;
}

/** Run the whole suite against one adapter. */
export function adapterSuite(
  name: string,
  serve: ServeAdapter,
  { tenants, wholeBodies = false, frameworkRefusals = false }: SuiteOptions,
): void {
  /** A case that leaves a body unfinished: registered only for adapters that read the stream. */
  const streamIt = wholeBodies ? () => {} : it;

  /** A refusal before the body is verified: the framework's own answer, or the receiver's. */
  function expectRefused(answer: Answer, status: number, outcome: string): void {
    if (frameworkRefusals) expect(answer.status).toBe(status);
    else expectAnswer(answer, status, { ok: false, outcome });
  }

  describe(`${name} adapter on a real server`, () => {
    const servers: AdapterServer[] = [];
    afterEach(async () => {
      await Promise.all(servers.splice(0).map((server) => server.close()));
    });

    async function start(
      options: Omit<ReceiverOptions, 'secret'> = {},
      setup: (receiver: Receiver) => void = () => {},
    ): Promise<{ url: string; errors: SchoolhooksError[] }> {
      const errors: SchoolhooksError[] = [];
      const receiver = createReceiver({ secret: SECRET, ...options });
      receiver.onError((error) => {
        errors.push(error);
      });
      setup(receiver);
      const server = await serve(receiver);
      servers.push(server);
      return { url: server.url, errors };
    }

    describe('the status table', () => {
      it('answers 405 method_not_allowed to a GET', async () => {
        const { url } = await start();
        expectAnswer(await post(url, {}, 'GET'), 405, { ok: false, outcome: 'method_not_allowed' });
      });

      streamIt('answers 405 to a PUT before reading its body', async () => {
        const { url } = await start();
        const answer = await sendRaw(url, {
          method: 'PUT',
          headers: { ...signedHeaders('{}'), 'content-length': 5 * MiB },
          chunks: [new Uint8Array(64 * 1024)],
          end: false,
        });
        expectAnswer(answer, 405, { ok: false, outcome: 'method_not_allowed' });
      });

      it('answers 415 unsupported_media_type to a text/plain body before reading it', async () => {
        const { url } = await start();
        const delivery = createTestDelivery();
        const headers = { ...delivery.headers, 'content-type': 'text/plain' };
        expectRefused(await post(url, { ...delivery, headers }), 415, 'unsupported_media_type');
        if (wholeBodies) return;
        const unfinished = await sendRaw(url, {
          headers,
          chunks: [delivery.body.slice(0, 10)],
          end: false,
        });
        expectAnswer(unfinished, 415, { ok: false, outcome: 'unsupported_media_type' });
      });

      it('answers 413 too_large to a body over maxBodyBytes', async () => {
        const { url } = await start({ maxBodyBytes: 1024 });
        expectRefused(await post(url, largeDelivery(1024)), 413, 'too_large');
      });

      it.each([
        ['missing', undefined],
        ['not 64 hex characters', 'abc123'],
        ['signed with another secret', 'other'],
      ])('answers 401 invalid_signature when the signature is %s', async (_case, signature) => {
        const { url, errors } = await start();
        const delivery = createTestDelivery();
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (signature === 'other') headers.signature = sign(delivery.body, 'another secret');
        else if (signature !== undefined) headers.signature = signature;
        expectAnswer(await post(url, { body: delivery.body, headers }), 401, {
          ok: false,
          outcome: 'invalid_signature',
        });
        expect(errors.map((error) => error.code)).toEqual(['invalid_signature']);
      });

      it.each([
        ['a body that is not JSON', 'not json'],
        ['an envelope without idempotencyKey', JSON.stringify({ event: 'A', data: {} })],
      ])('answers 400 malformed to %s', async (_case, body) => {
        const { url } = await start();
        expectRefused(await post(url, { body, headers: signedHeaders(body) }), 400, 'malformed');
      });

      it('answers 422 stale to an event older than maxEventAgeMs', async () => {
        const { url } = await start();
        const timestamp = new Date(Date.now() - 73 * 3600_000).toISOString();
        const delivery = createTestDelivery('UserSignedIn', {}, { timestamp });
        expectAnswer(await post(url, delivery), 422, {
          ok: false,
          outcome: 'stale',
          idempotencyKey: delivery.idempotencyKey,
        });
      });

      it('answers 422 invalid_payload to a UserSignedUp without user', async () => {
        const { url, errors } = await start();
        const delivery = fixtureDelivery('UserSignedUp', (data) => delete data.user);
        expectAnswer(await post(url, delivery), 422, {
          ok: false,
          outcome: 'invalid_payload',
          idempotencyKey: delivery.idempotencyKey,
        });
        expect(errors[0]).toBeInstanceOf(PayloadValidationError);
      });

      it('answers 200 processed and hands the handler the parsed event', async () => {
        const amounts: number[] = [];
        const { url } = await start({}, (receiver) =>
          receiver.on('PaymentCompleted', (event) => {
            amounts.push(event.data.payment.invoice.totalAmount);
          }),
        );
        const delivery = fixtureDelivery('PaymentCompleted');
        expectAnswer(await post(url, delivery), 200, processed(delivery));
        expect(amounts).toEqual([
          (JSON.parse(delivery.body) as { data: { payment: { invoice: { totalAmount: number } } } })
            .data.payment.invoice.totalAmount,
        ]);
      });

      it('answers 200 duplicate to a retry of a processed event', async () => {
        let runs = 0;
        const { url } = await start({}, (receiver) => receiver.onAny(() => void runs++));
        const delivery = createTestDelivery();
        expectAnswer(await post(url, delivery), 200, processed(delivery));
        expectAnswer(await post(url, delivery), 200, {
          ok: true,
          outcome: 'duplicate',
          idempotencyKey: delivery.idempotencyKey,
        });
        expect(runs).toBe(1);
      });

      it('answers 409 conflict to the same key with a different body', async () => {
        const { url } = await start({}, (receiver) => receiver.onAny(() => {}));
        const first = createTestDelivery('UserSignedIn', { user: { id: 1 } });
        const other = createTestDelivery('UserSignedIn', { user: { id: 2 } }, first);
        expectAnswer(await post(url, first), 200, processed(first));
        expectAnswer(await post(url, other), 409, {
          ok: false,
          outcome: 'conflict',
          idempotencyKey: first.idempotencyKey,
        });
      });

      it('answers 409 in_flight while a handler still runs the same key', async () => {
        const started = deferred();
        const gate = deferred();
        const { url } = await start({}, (receiver) =>
          receiver.onAny(async () => {
            started.resolve();
            await gate.promise;
          }),
        );
        const delivery = createTestDelivery();
        const first = post(url, delivery);
        await started.promise;
        expectAnswer(await post(url, delivery), 409, {
          ok: false,
          outcome: 'in_flight',
          idempotencyKey: delivery.idempotencyKey,
        });
        gate.resolve();
        expectAnswer(await first, 200, processed(delivery));
      });

      it('answers 503 store_unavailable when the store cannot claim', async () => {
        const store: IdempotencyStore = {
          ...memoryStore(),
          claim: () => Promise.reject(new Error('connection refused')),
        };
        const { url, errors } = await start({ store }, (receiver) => receiver.onAny(() => {}));
        const delivery = createTestDelivery();
        expectAnswer(await post(url, delivery), 503, {
          ok: false,
          outcome: 'store_unavailable',
          idempotencyKey: delivery.idempotencyKey,
        });
        expect(errors[0]).toBeInstanceOf(StoreUnavailableError);
      });

      it('answers 200 ignored to an event nobody handles', async () => {
        const { url } = await start();
        const delivery = createTestDelivery();
        expectAnswer(await post(url, delivery), 200, {
          ok: true,
          outcome: 'ignored',
          idempotencyKey: delivery.idempotencyKey,
        });
      });

      it('answers 500 handler_failed when a handler throws, and processes the retry', async () => {
        let runs = 0;
        const { url } = await start({}, (receiver) =>
          receiver.onAny(() => {
            if (++runs === 1) throw new Error('database down');
          }),
        );
        const delivery = createTestDelivery();
        expectAnswer(await post(url, delivery), 500, {
          ok: false,
          outcome: 'handler_failed',
          idempotencyKey: delivery.idempotencyKey,
        });
        expectAnswer(await post(url, delivery), 200, processed(delivery));
        expect(runs).toBe(2);
      });

      it('answers 503 timeout while handlers outlive handlerTimeoutMs', async () => {
        const gate = deferred();
        const { url } = await start({ handlerTimeoutMs: 50 }, (receiver) =>
          receiver.onAny(() => gate.promise),
        );
        const delivery = createTestDelivery();
        expectAnswer(await post(url, delivery), 503, {
          ok: false,
          outcome: 'timeout',
          idempotencyKey: delivery.idempotencyKey,
        });
        gate.resolve();
      });

      it('answers 200 processed when the store fails to record completion', async () => {
        const inner = memoryStore();
        const store: IdempotencyStore = {
          ...inner,
          settle: (claim, how) =>
            how === 'complete'
              ? Promise.reject(new Error('connection reset'))
              : inner.settle(claim, how),
        };
        const { url, errors } = await start({ store }, (receiver) => receiver.onAny(() => {}));
        const delivery = createTestDelivery();
        expectAnswer(await post(url, delivery), 200, processed(delivery));
        expect(errors[0]).toBeInstanceOf(StoreUnavailableError);
      });
    });

    describe('the status table with an inbox', () => {
      it('answers 202 queued once stored, and the worker runs the handler later', async () => {
        const inbox = memoryInbox({ backoffMs: 1 });
        const effects: string[] = [];
        const receiver = createReceiver({ secret: SECRET, inbox }).onAny((event) => {
          effects.push(event.idempotencyKey);
        });
        const server = await serve(receiver);
        servers.push(server);
        const delivery = createTestDelivery();
        expectAnswer(await post(server.url, delivery), 202, {
          ok: true,
          outcome: 'queued',
          idempotencyKey: delivery.idempotencyKey,
        });
        expect(effects).toEqual([]);
        expectAnswer(await post(server.url, delivery), 200, {
          ok: true,
          outcome: 'duplicate',
          idempotencyKey: delivery.idempotencyKey,
        });
        const worker = inbox.work(receiver);
        await inbox.idle();
        await worker.close();
        expect(effects).toEqual([delivery.idempotencyKey]);
      });

      it('answers 503 inbox_unavailable when the inbox cannot store, and queues the retry', async () => {
        let down = true;
        const inbox: Inbox = {
          enqueue: () => (down ? Promise.reject(new Error('Redis is down')) : Promise.resolve()),
        };
        const { url, errors } = await start({ inbox });
        const delivery = createTestDelivery();
        expectAnswer(await post(url, delivery), 503, {
          ok: false,
          outcome: 'inbox_unavailable',
          idempotencyKey: delivery.idempotencyKey,
        });
        expect(errors[0]).toBeInstanceOf(InboxUnavailableError);
        down = false;
        expectAnswer(await post(url, delivery), 202, {
          ok: true,
          outcome: 'queued',
          idempotencyKey: delivery.idempotencyKey,
        });
      });
    });

    describe('payloads the platform really sends (tolerant readers)', () => {
      // Payloads as production shapes them: the platform's documented PaymentCompleted without
      // invoice.meta, a phone-only student, a Telegram-only user, a digital product without a
      // course, entities without archivedAt, a payment without acquiring or logs; and every
      // event carrying nothing but its spine.
      const files = [
        ...readdirSync(new URL('../../fixtures/variants/', import.meta.url)).map(
          (file) => `variants/${file}`,
        ),
        ...readdirSync(new URL('../../fixtures/sparse/', import.meta.url)).map(
          (file) => `sparse/${file}`,
        ),
      ].sort();

      it('has the payloads of the issue among them', () => {
        expect(files).toEqual(
          expect.arrayContaining([
            'variants/payment-completed-without-invoice-meta.json',
            'variants/user-signed-up-phone-only.json',
            'variants/user-tg-connected-telegram-only.json',
            'variants/product-enrolled-via-payment-digital-product.json',
            'variants/course-completed-without-archived-at.json',
            'variants/payment-completed-without-acquiring-or-logs.json',
          ]),
        );
      });

      it.each(files)('answers 200 processed to %s', async (file) => {
        const seen: string[] = [];
        const { url, errors } = await start({}, (receiver) =>
          receiver
            .on('PaymentCompleted', (event) => {
              // A handler reads what may be missing with a default of its own.
              seen.push(event.data.payment.invoice.user.email ?? 'no email');
            })
            .onAny((event) => void seen.push(event.event)),
        );
        const delivery = fixtureFileDelivery(file);
        expectAnswer(await post(url, delivery), 200, processed(delivery));
        expect(errors).toEqual([]);
        expect(seen).toContain((JSON.parse(delivery.body) as { event: string }).event);
        if (file === 'sparse/PaymentCompleted.json') expect(seen).toContain('no email');
      });
    });

    describe('bodies', () => {
      it('processes a 5 MB body when maxBodyBytes allows 8 MiB', async () => {
        const { url } = await start({ maxBodyBytes: 8 * MiB }, (receiver) =>
          receiver.onAny(() => {}),
        );
        const delivery = largeDelivery(5 * MiB);
        expectAnswer(await post(url, delivery), 200, processed(delivery));
      });

      streamIt(
        'answers 413 to a 5 MB body with content-length before the client sent it',
        async () => {
          const { url } = await start();
          const delivery = largeDelivery(5 * MiB);
          const answer = await sendRaw(url, {
            headers: { ...delivery.headers, 'content-length': Buffer.byteLength(delivery.body) },
            chunks: [delivery.body.slice(0, 256 * 1024)],
            end: false,
          });
          expectAnswer(answer, 413, { ok: false, outcome: 'too_large' });
        },
      );

      streamIt(
        'answers 413 to a chunked 5 MB body once past the limit, without waiting for the rest',
        async () => {
          const { url } = await start();
          const delivery = largeDelivery(5 * MiB);
          const answer = await sendRaw(url, {
            headers: delivery.headers,
            chunks: [delivery.body.slice(0, 2 * MiB)],
            end: false,
          });
          expectAnswer(answer, 413, { ok: false, outcome: 'too_large' });
        },
      );

      it('answers 413 to a whole 5 MB body sent with fetch', async () => {
        const { url } = await start();
        expectRefused(await post(url, largeDelivery(5 * MiB)), 413, 'too_large');
      });

      it('answers 413 to a complete chunked body over the limit', async () => {
        const { url } = await start({ maxBodyBytes: 1024 });
        const { body, headers } = largeDelivery(2048);
        const chunks = [body.slice(0, 700), body.slice(700, 1400), body.slice(1400)];
        expectRefused(await sendRaw(url, { headers, chunks }), 413, 'too_large');
      });

      it('processes a body trickled in by a slow client', async () => {
        const { url } = await start({}, (receiver) => receiver.onAny(() => {}));
        const delivery = createTestDelivery();
        const size = Math.ceil(delivery.body.length / 8);
        const chunks = Array.from({ length: 8 }, (_, i) =>
          delivery.body.slice(i * size, (i + 1) * size),
        );
        const answer = await sendRaw(url, { headers: delivery.headers, chunks, pauseMs: 40 });
        expectAnswer(answer, 200, processed(delivery));
      });

      it('reads header names in any letter case', async () => {
        const { url } = await start({}, (receiver) => receiver.onAny(() => {}));
        const delivery = createTestDelivery();
        const headers = {
          'Content-Type': 'Application/JSON; charset=utf-8',
          SIGNATURE: delivery.headers.signature ?? '',
        };
        const answer = await sendRaw(url, { headers, chunks: [delivery.body] });
        expectAnswer(answer, 200, processed(delivery));
      });
      streamIt(
        'closes the connection once it answered 413 to a body that keeps arriving',
        async () => {
          const { url } = await start({ maxBodyBytes: 1024 });
          const { hostname, port, pathname } = new URL(url);
          const socket = connect(Number(port), hostname);
          socket.on('error', () => {}); // the server may reset a socket still being written to
          await once(socket, 'connect');
          let response = '';
          let closed = false;
          socket.on('data', (data: Buffer) => (response += data.toString('latin1')));
          socket.once('close', () => (closed = true));
          socket.write(
            `POST ${pathname} HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\n` +
              `signature: ${'a'.repeat(64)}\r\ntransfer-encoding: chunked\r\n\r\n`,
          );
          // A client that never stops sending: only the server can end this connection.
          const chunk = `1000\r\n${'x'.repeat(0x1000)}\r\n`;
          for (let i = 0; i < 500 && !closed; i++) {
            if (!socket.destroyed) socket.write(chunk);
            await sleep(10);
          }
          socket.destroy();
          expect(response).toMatch(/^HTTP\/1\.1 413 /);
          expect(response).toMatch(/\r\nconnection: close\r\n/i);
          expect(closed).toBe(true);
        },
      );

      streamIt('reports a body cut off by a client that went away, and stays up', async () => {
        const { url, errors } = await start({}, (receiver) => receiver.onAny(() => {}));
        const delivery = createTestDelivery();
        const client = httpRequest(url, { method: 'POST', headers: delivery.headers });
        client.on('error', () => {});
        client.write(delivery.body.slice(0, 20));
        await vi.waitFor(() => expect(client.socket?.writableLength).toBe(0));
        client.destroy();
        await vi.waitFor(() => expect(errors[0]).toBeInstanceOf(MalformedEnvelopeError));
        expect(errors[0]?.message).toMatch(/could not be read/);
        expectAnswer(await post(url, delivery), 200, processed(delivery));
      });
    });

    describe('concurrency', () => {
      it('processes 100 concurrent deliveries of distinct keys', async () => {
        let runs = 0;
        const { url } = await start({}, (receiver) => receiver.onAny(() => void runs++));
        const deliveries = Array.from({ length: 100 }, () => createTestDelivery());
        await Promise.all(
          deliveries.map(async (delivery) =>
            expectAnswer(await post(url, delivery), 200, processed(delivery)),
          ),
        );
        expect(runs).toBe(100);
      });

      it('runs the handler once for 50 concurrent copies of one delivery', async () => {
        let runs = 0;
        const { url } = await start({}, (receiver) =>
          receiver.onAny(async () => {
            runs++;
            await sleep(20);
          }),
        );
        const delivery = createTestDelivery();
        const answers = await Promise.all(Array.from({ length: 50 }, () => post(url, delivery)));
        const answered = answers.map(
          (answer) => `${answer.status} ${(answer.body as { outcome: string }).outcome}`,
        );
        expect(answered.filter((line) => line === '200 processed')).toHaveLength(1);
        for (const line of answered) {
          expect(['200 processed', '200 duplicate', '409 in_flight']).toContain(line);
        }
        expect(runs).toBe(1);
      });
    });

    tenantCases(tenants, servers);
  });
}

const SECRET_A = 'a1'.repeat(32);
const SECRET_B = 'b2'.repeat(32);

/** The schools the tenant cases' lookup knows, by the tenant their route names. */
const SCHOOLS: ReadonlyMap<string, string> = new Map([
  ['school-a', SECRET_A],
  ['school-b', SECRET_B],
]);

/** The tenant cases of one adapter: a secret per school, looked up by the route's tenant. */
function tenantCases(tenants: TenantRoutes, servers: AdapterServer[]): void {
  describe('many schools on one endpoint (the `tenant` option)', () => {
    /** A receiver whose secret is `lookup` (counted), served on the adapter's tenant routes. */
    async function startTenants(lookup: SecretLookup = ({ tenant }) => SCHOOLS.get(tenant)) {
      const asked: string[] = [];
      const errors: SchoolhooksError[] = [];
      const seen: string[] = [];
      const receiver = createReceiver({
        secret: (request) => {
          asked.push(request.tenant);
          return lookup(request);
        },
      })
        .onAny((event, ctx) => void seen.push(`${ctx.tenant} ${event.idempotencyKey}`))
        .onError((error) => void errors.push(error));
      const server = await tenants.serve(receiver);
      servers.push(server);
      const at = (tenant: string) => `${server.url}/${encodeURIComponent(tenant)}`;
      return { at, asked, errors, seen };
    }

    it("processes a delivery signed with a school's secret on its route, 401 on another's", async () => {
      const { at, errors, seen } = await startTenants();
      const delivery = createTestDelivery(
        'UserSignedIn',
        { user: { id: 1 } },
        { secret: SECRET_A },
      );
      expectAnswer(await post(at('school-b'), delivery), 401, {
        ok: false,
        outcome: 'invalid_signature',
      });
      expect(errors.map((error) => error.code)).toEqual(['invalid_signature']);
      expect(seen).toEqual([]);
      expectAnswer(await post(at('school-a'), delivery), 200, processed(delivery));
      // Handlers see the tenant the route named.
      expect(seen).toEqual([`school-a ${delivery.idempotencyKey}`]);
    });

    it('answers 404 unknown_tenant to a tenant the lookup does not know', async () => {
      const { at, asked, errors, seen } = await startTenants();
      const delivery = createTestDelivery(
        'UserSignedIn',
        { user: { id: 1 } },
        { secret: SECRET_A },
      );
      expectAnswer(await post(at('school-z'), delivery), 404, {
        ok: false,
        outcome: 'unknown_tenant',
      });
      expect(asked).toEqual(['school-z']);
      expect(errors[0]).toBeInstanceOf(UnknownTenantError);
      expect((errors[0] as UnknownTenantError).tenant).toBe('school-z');
      expect(seen).toEqual([]);
    });

    it('answers 503 secret_unavailable while the lookup fails, and processes the retry', async () => {
      let down = true;
      const { at, asked, errors, seen } = await startTenants(({ tenant }) => {
        if (down) throw new Error('vault sealed');
        return SCHOOLS.get(tenant);
      });
      const delivery = createTestDelivery(
        'UserSignedIn',
        { user: { id: 1 } },
        { secret: SECRET_B },
      );
      expectAnswer(await post(at('school-b'), delivery), 503, {
        ok: false,
        outcome: 'secret_unavailable',
      });
      expect(errors[0]).toBeInstanceOf(SecretUnavailableError);
      expect(errors[0]?.message).toBe(
        'the secret lookup of tenant "school-b" failed: vault sealed',
      );
      down = false;
      expectAnswer(await post(at('school-b'), delivery), 200, processed(delivery));
      expect(asked).toEqual(['school-b', 'school-b']);
      expect(seen).toEqual([`school-b ${delivery.idempotencyKey}`]);
    });

    it('costs at most 2 lookups for 60 concurrent deliveries for one unknown tenant', async () => {
      const { at, asked } = await startTenants(async () => {
        await sleep(30);
        return undefined;
      });
      const deliveries = Array.from({ length: 60 }, () =>
        createTestDelivery('UserSignedIn', { user: { id: 1 } }, { secret: SECRET_A }),
      );
      const answers = await Promise.all(deliveries.map((each) => post(at('school-x'), each)));
      for (const answer of answers) {
        expectAnswer(answer, 404, { ok: false, outcome: 'unknown_tenant' });
      }
      expect(asked.length).toBeGreaterThanOrEqual(1);
      expect(asked.length).toBeLessThanOrEqual(2);
    });

    it('runs one idempotencyKey once per tenant: twice under two tenants, once under one', async () => {
      const { at, asked, seen } = await startTenants();
      const event = {
        idempotencyKey: `same-${Math.random()}`,
        timestamp: new Date().toISOString(),
      };
      const forA = createTestDelivery(
        'UserSignedIn',
        { user: { id: 1 } },
        { ...event, secret: SECRET_A },
      );
      const forB = createTestDelivery(
        'UserSignedIn',
        { user: { id: 1 } },
        { ...event, secret: SECRET_B },
      );
      expect(forA.body).toBe(forB.body);
      expectAnswer(await post(at('school-a'), forA), 200, processed(forA));
      expectAnswer(await post(at('school-b'), forB), 200, processed(forB));
      expectAnswer(await post(at('school-a'), forA), 200, {
        ok: true,
        outcome: 'duplicate',
        idempotencyKey: forA.idempotencyKey,
      });
      expect(seen).toEqual([
        `school-a ${event.idempotencyKey}`,
        `school-b ${event.idempotencyKey}`,
      ]);
      expect(asked).toEqual(['school-a', 'school-b']);
    });

    it('throws a ConfigError when made without `tenant` for a receiver whose secret is a lookup', async () => {
      const receiver = createReceiver({ secret: ({ tenant }) => SCHOOLS.get(tenant) });
      const made = (async () => tenants.withoutTenant(receiver))();
      await expect(made).rejects.toBeInstanceOf(ConfigError);
      await expect(made).rejects.toMatchObject({
        code: 'config',
        message: expect.stringMatching(/pass it a `tenant` option/),
      });
    });
  });
}
