/**
 * One benchmarked Fetch handler on a runtime's own server, started by bench/run.ts (pinned to one
 * core): `<node|bun|deno> server-web.mjs <adapter|hand|same>`. Bun serves it with `Bun.serve`, Deno
 * with `Deno.serve`, Node with @hono/node-server called as `(request) => handler(request)`, so
 * the handler gets a `Request` and nothing else (as a Next.js route on Node does).
 *
 * Bun and Deno have no IPC channel to a Node parent, so this speaks plain text and HTTP: it
 * prints `ready <port>` once it listens, and answers `GET /__bench/stats` with the deliveries it
 * handled and the failures reported; bench/run.ts reads its CPU time from /proc.
 * @module
 */

import {
  adapterHandler,
  handWrittenHandler,
  sameWorkHandler,
  type WebHandler,
} from './web-handlers.js';

/** Deliveries that reached the code after verification (a handler, or the hand-written end). */
let handled = 0;
/** Failures the receiver reported, by code: the run fails if any shows up. */
const failures: Record<string, number> = {};
const countHandled = () => {
  handled++;
};

/** The control route: what bench/run.ts reads between rounds. */
function withStats(handler: WebHandler): WebHandler {
  return (request) => {
    if (request.method === 'GET' && request.url.endsWith('/__bench/stats')) {
      return Promise.resolve(Response.json({ handled, failures }));
    }
    return handler(request);
  };
}

interface Runtimes {
  Bun?: {
    serve(options: { port: number; hostname: string; fetch: WebHandler; development?: boolean }): {
      port: number;
    };
  };
  Deno?: {
    args: string[];
    serve(
      options: { port: number; hostname: string; onListen(address: { port: number }): void },
      handler: WebHandler,
    ): unknown;
  };
}

const { Bun, Deno } = globalThis as Runtimes;
const kind = (Deno ? Deno.args : process.argv.slice(2))[0];
const handlers = {
  adapter: () =>
    adapterHandler(countHandled, (error) => {
      failures[error.code] = (failures[error.code] ?? 0) + 1;
    }),
  hand: () => handWrittenHandler(countHandled),
  same: () => sameWorkHandler(countHandled),
};
if (kind === undefined || !Object.hasOwn(handlers, kind)) {
  throw new Error(`unknown handler ${kind}`);
}
const handler = withStats(handlers[kind as keyof typeof handlers]());
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
