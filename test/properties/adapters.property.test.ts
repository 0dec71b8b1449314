/**
 * Properties of the node:http adapter over real HTTP on loopback, one keep-alive connection: any
 * body is answered below 500, a tampered delivery is never acknowledged, header names are found in
 * any letter case, and a chunked body over the limit is cut off there without being buffered.
 */

import { once } from 'node:events';
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeListener } from '../../src/adapters/node.js';
import { createReceiver, type Receiver, type WebhookRequest } from '../../src/index.js';
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

/** maxBodyBytes of the receiver under test: small, so that bodies over it are cheap to send. */
const LIMIT = 32 * 1024;

/** What the server saw of the last request's body. */
interface BodyProbe {
  /** Bytes the adapter buffered and gave the receiver (undefined: the body was never read). */
  buffered?: number;
  /** The size of each chunk the request stream emitted while the adapter was reading. */
  chunks: number[];
}

let server: Server;
let agent: Agent;
let port: number;
let probe: BodyProbe = { chunks: [] };

/**
 * The receiver, with its body reader wrapped to measure what the adapter reads: the adapter sees
 * an ordinary Receiver, the test sees every chunk and the size of what was buffered.
 */
function probed(receiver: Receiver, req: IncomingMessage, seen: BodyProbe): Receiver {
  return {
    ...receiver,
    handle(request: WebhookRequest) {
      const read = request.body;
      if (typeof read !== 'function') return receiver.handle(request);
      return receiver.handle({
        ...request,
        body: async (limit) => {
          const observe = (chunk: Uint8Array): void => {
            seen.chunks.push(chunk.byteLength);
          };
          // Added in the same tick as the adapter's own listener, so both see every chunk.
          req.on('data', observe);
          try {
            const body = await read(limit);
            seen.buffered = body === undefined ? 0 : Buffer.byteLength(body);
            return body;
          } finally {
            req.off('data', observe);
          }
        },
      });
    },
  };
}

beforeAll(async () => {
  const receiver = createReceiver({ secret: SECRET, maxBodyBytes: LIMIT }).onAny(() => {});
  server = createServer((req, res) => {
    probe = { chunks: [] };
    void nodeListener(probed(receiver, req, probe))(req, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  ({ port } = server.address() as AddressInfo);
  agent = new Agent({ keepAlive: true, maxSockets: 1 });
});

afterAll(async () => {
  agent.destroy();
  server.closeAllConnections();
  server.close();
  await once(server, 'close');
});

/** A body sent whole with its content-length, or in chunks without one (chunked encoding). */
type Body = Uint8Array | string | { chunks: readonly Uint8Array[] };

/** POST one request and read the answer. */
async function post(
  headers: Record<string, string>,
  body: Body,
): Promise<{ status: number; outcome: unknown }> {
  const whole = typeof body === 'string' || body instanceof Uint8Array;
  const req = httpRequest({
    host: '127.0.0.1',
    port,
    path: '/webhooks',
    method: 'POST',
    agent,
    headers: whole ? { ...headers, 'content-length': Buffer.byteLength(body) } : headers,
  });
  const responded = once(req, 'response') as Promise<[IncomingMessage]>;
  // After a 413 the server closes the connection: writing the rest of the body may then fail.
  req.on('error', () => {});
  for (const chunk of whole ? [body] : body.chunks) req.write(chunk);
  req.end();
  const [res] = await responded;
  let text = '';
  for await (const chunk of res) text += String(chunk);
  const parsed = JSON.parse(text) as { outcome?: unknown };
  return { status: res.statusCode ?? 0, outcome: parsed.outcome };
}

describe('the node adapter over HTTP', { timeout: 60_000 }, () => {
  it('never answers 5xx for any body, signed or not, in any content type', async () => {
    await fc.assert(
      fc.asyncProperty(
        hostileBody,
        fc.boolean(),
        fc.option(contentType, { nil: undefined }),
        async (body, signed, type) => {
          const headers: Record<string, string> = signed ? { signature: sign(body) } : {};
          if (type !== undefined) headers['content-type'] = type;
          const { status } = await post(headers, body);
          expect(status).toBeLessThan(500);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('never acknowledges a delivery with a bit flipped in its body or its signature', async () => {
    await fc.assert(
      fc.asyncProperty(
        signableBytes,
        fc.nat(),
        fc.boolean(),
        async (body, position, inSignature) => {
          const mac = Buffer.from(sign(body), 'hex');
          const signature = inSignature
            ? Buffer.from(flipBit(mac, position % 256)).toString('hex')
            : mac.toString('hex');
          const sent = inSignature ? body : flipBit(body, position % (body.byteLength * 8));
          const headers = { 'content-type': 'application/json', signature };
          const { status, outcome } = await post(headers, sent);
          expect(status).toBe(401);
          expect(outcome).toBe('invalid_signature');
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('finds signature and content-type sent in any letter case', async () => {
    await fc.assert(
      fc.asyncProperty(
        fixtureBody,
        fc.mixedCase(fc.constant('Signature')),
        fc.mixedCase(fc.constant('Content-Type')),
        otherHeaders,
        async (body, signatureName, typeName, others) => {
          const headers = Object.fromEntries([
            ...others,
            [typeName, 'application/json'],
            [signatureName, sign(body)],
          ]);
          expect((await post(headers, body)).outcome).toBe('processed');
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('cuts a chunked body over maxBodyBytes off at the limit: 413, nothing more buffered', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 64, max: 8 * 1024 }), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 2 * LIMIT }),
        async (sizes, overshoot) => {
          // Chunks of the given sizes, cycled until the body is `overshoot` bytes over the limit.
          const body: Uint8Array[] = [];
          for (let total = 0; total < LIMIT + overshoot;) {
            const size = Math.min(sizes[body.length % sizes.length]!, LIMIT + overshoot - total);
            body.push(new Uint8Array(size).fill(0x20));
            total += size;
          }
          const headers = { 'content-type': 'application/json', signature: '0'.repeat(64) };
          const { status, outcome } = await post(headers, { chunks: body });
          expect(status).toBe(413);
          expect(outcome).toBe('too_large');
          // The read stops with the chunk that crosses the limit: it buffers nothing after it.
          let crossedAt = 0;
          for (const size of probe.chunks) {
            crossedAt += size;
            if (crossedAt > LIMIT) break;
          }
          expect(crossedAt).toBeGreaterThan(LIMIT);
          expect(probe.buffered).toBeDefined();
          expect(probe.buffered).toBeLessThanOrEqual(crossedAt);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
