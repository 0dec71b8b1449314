/**
 * One benchmarked Fetch handler on a runtime's own server, started by bench/run.ts (pinned to one
 * core): `<node|bun|deno> server-web.mjs <adapter|hand>`. Bun serves it with `Bun.serve`, Deno
 * with `Deno.serve`, Node with @hono/node-server called as `(request) => handler(request)`, so
 * the handler gets a `Request` and nothing else (as a Next.js route on Node does).
 *
 * Bun and Deno have no IPC channel to a Node parent, so this speaks plain text and HTTP: it
 * prints `ready <port>` once it listens, and answers `GET /__bench/stats` with the deliveries it
 * handled and the failures reported; bench/run.ts reads its CPU time from /proc.
 * @module
 */

import { Buffer } from 'node:buffer';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { fetchHandler } from '../adapters/fetch.js';
import { createReceiver } from '../src/index.js';
import { SECRET } from './bodies.js';

type Handler = (request: Request) => Promise<Response>;

/** Deliveries that reached the code after verification (a handler, or the hand-written end). */
let handled = 0;
/** Failures the receiver reported, by code: the run fails if any shows up. */
const failures: Record<string, number> = {};

const JSON_HEADERS = { 'content-type': 'application/json' };
const answer = (status: number, body: string) =>
  new Response(body, { status, headers: JSON_HEADERS });

/** The receiver every schoolhooks row runs: server.ts's `schoolhooksReceiver('memory')`. */
function adapter(): Handler {
  const receiver = createReceiver({
    secret: SECRET,
    maxEventAgeMs: 3_600_000,
    dedupTtlMs: 3_600_000,
  });
  receiver.on(['UserSignedUp', 'PaymentCompleted'], async () => {
    handled++;
  });
  receiver.onError((error) => {
    failures[error.code] = (failures[error.code] ?? 0) + 1;
  });
  return fetchHandler(receiver);
}

/**
 * The fastest honest hand-written Fetch receiver: the body by `arrayBuffer()`, HMAC-SHA256 with
 * node:crypto in constant time, `JSON.parse`, a duplicate told by its idempotencyKey in a Map,
 * then an async handler, as the schoolhooks rows run one.
 */
function handWritten(): Handler {
  const seen = new Map<string, true>();
  const decoder = new TextDecoder();
  const onEvent = async () => {
    handled++;
  };
  return async (request) => {
    if (request.method !== 'POST') return answer(405, '{"ok":false}');
    const body = new Uint8Array(await request.arrayBuffer());
    const signature = request.headers.get('signature');
    if (signature === null || signature.length !== 64) return answer(401, '{"ok":false}');
    const expected = createHmac('sha256', SECRET).update(body).digest();
    if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) {
      return answer(401, '{"ok":false}');
    }
    let envelope: { idempotencyKey?: unknown };
    try {
      envelope = JSON.parse(decoder.decode(body)) as { idempotencyKey?: unknown };
    } catch {
      return answer(400, '{"ok":false}');
    }
    const key = envelope.idempotencyKey;
    if (typeof key !== 'string') return answer(400, '{"ok":false}');
    if (seen.has(key)) return answer(200, '{"ok":true,"duplicate":true}');
    seen.set(key, true);
    await onEvent();
    return answer(200, '{"ok":true}');
  };
}

/** The control route: what bench/run.ts reads between rounds. */
function withStats(handler: Handler): Handler {
  return (request) => {
    if (request.method === 'GET' && request.url.endsWith('/__bench/stats')) {
      return Promise.resolve(Response.json({ handled, failures }));
    }
    return handler(request);
  };
}

interface Runtimes {
  Bun?: {
    serve(options: { port: number; hostname: string; fetch: Handler; development?: boolean }): {
      port: number;
    };
  };
  Deno?: {
    args: string[];
    serve(
      options: { port: number; hostname: string; onListen(address: { port: number }): void },
      handler: Handler,
    ): unknown;
  };
}

const { Bun, Deno } = globalThis as Runtimes;
const kind = (Deno ? Deno.args : process.argv.slice(2))[0];
if (kind !== 'adapter' && kind !== 'hand') throw new Error(`unknown handler ${kind}`);
const handler = withStats(kind === 'adapter' ? adapter() : handWritten());
const ready = (port: number) => console.log(`ready ${port}`);

// A clean exit, so `--cpu-prof` (BENCH_PROFILE, Node and Bun) writes its profile.
if (!Deno) process.on('SIGTERM', () => process.exit(0));

if (Bun) {
  ready(Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: handler, development: false }).port);
} else if (Deno) {
  Deno.serve({ port: 0, hostname: '127.0.0.1', onListen: ({ port }) => ready(port) }, handler);
} else {
  const { createAdaptorServer } = await import('@hono/node-server');
  // The Request alone: no `env.incoming` for the adapter to read instead.
  const server = createAdaptorServer({ fetch: (request: Request) => handler(request) });
  const { Server } = await import('node:http');
  if (server instanceof Server) server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    if (typeof address === 'object' && address !== null) ready(address.port);
  });
}
