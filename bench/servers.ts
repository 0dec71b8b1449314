/**
 * The servers the benchmark compares, in the order of the table.
 * @module
 */

/** The path every server answers deliveries on. */
export const BENCH_PATH = '/webhooks/school';

export const SERVER_IDS = [
  'minimal',
  'minimal-same',
  'node',
  'node-unwatched',
  'node-tenant',
  'express',
  'fastify',
  'koa',
  'hono',
  'fetch',
  'node-redis',
  'node-postgres',
  'node-inbox',
  'node-pgboss',
  'node-otel',
  'octokit',
  'octokit-web',
  'express-hand',
  'fastify-hand',
  'koa-hand',
  'hono-hand',
  'hono-floor',
  'fetch-floor',
  'fetch-request',
  'fetch-hand',
  'fetch-same',
  'bun-fetch',
  'bun-hand',
  'bun-same',
  'deno-fetch',
  'deno-hand',
  'deno-same',
] as const;
/**
 * Diagnostic servers, measured only when named in `BENCH_ONLY`: `core` is the minimal receiver's
 * body reading around `receiver.handle()`, to tell the core's cost from an adapter's;
 * `node-baseline` and `node-redis-baseline` are the node adapter of another build
 * (`BENCH_BASELINE`, see bench/README.md) on memoryStore and on redisStore, measured in the same
 * rounds as this one's, to tell whether a change lost speed; `node-lean` and `node-redis-lean` are
 * this build's with `recordEntities: false, watch: false`, the guarantees of the build before the
 * records, to tell what those two cost from what the rest of a change does;
 * `node-unwatched-baseline` is the baseline build's `node-unwatched`, to tell a change of the
 * watchdog's notes from the rest.
 */
export const DIAGNOSTIC_IDS = [
  'core',
  'node-baseline',
  'node-redis-baseline',
  'node-lean',
  'node-redis-lean',
  'node-unwatched-baseline',
] as const;
export type ServerId = (typeof SERVER_IDS)[number] | (typeof DIAGNOSTIC_IDS)[number];
/** The rows served by bench/server-web.ts (see {@link ServerSpec.web}); every other is bench/server.ts's. */
export type WebServerId =
  'fetch-request' | `fetch-${'hand' | 'same'}` | `${'bun' | 'deno'}-${'fetch' | 'hand' | 'same'}`;
/** The rows bench/server.ts starts (`node-baseline` is another build's `node`, and so on). */
export type NodeServerId = Exclude<ServerId, WebServerId | `${string}-baseline`>;

/**
 * The server each of these is measured right after, within a round: every target's two servers
 * side by side, so a ratio compares two windows seconds apart, not up to a minute apart (on a
 * shared host the speed of the machine drifts within a minute). The other pairs already stand
 * side by side in {@link SERVER_IDS}, whose order the tables keep.
 */
const MEASURED_AFTER: Partial<Record<ServerId, ServerId>> = {
  core: 'minimal',
  'node-baseline': 'node',
  'node-redis-baseline': 'node-redis',
  'node-lean': 'node-baseline',
  'node-redis-lean': 'node-redis-baseline',
  'node-unwatched': 'node',
  'node-unwatched-baseline': 'node-unwatched',
  'node-tenant': 'node-unwatched',
  octokit: 'node-tenant',
  // The rows compared with (a) or with each other, in a chain after it: (h) of node:http first.
  'minimal-same': 'octokit',
  'node-otel': 'minimal-same',
  'node-redis': 'node-otel',
  'node-inbox': 'node-redis',
  'node-postgres': 'node-inbox',
  'node-pgboss': 'node-postgres',
  'express-hand': 'express',
  'fastify-hand': 'fastify',
  'koa-hand': 'koa',
  'hono-hand': 'hono',
  'hono-floor': 'hono-hand',
  'octokit-web': 'fetch',
  'fetch-floor': 'octokit-web',
};

/** `ids` in the order a round measures them: each right after the server it is compared with. */
export function measurementOrder(ids: readonly ServerId[]): ServerId[] {
  const after = (id: ServerId) => MEASURED_AFTER[id];
  const placed = (id: ServerId) => ids.includes(after(id)!);
  const order = ids.filter((id) => !placed(id));
  // A chain (hono, hono-hand, hono-floor) is placed link by link, whatever order `ids` gives.
  let pending = ids.filter(placed);
  while (pending.length > 0) {
    const ready = pending.filter((id) => order.includes(after(id)!));
    if (ready.length === 0) throw new Error(`MEASURED_AFTER has a cycle: ${pending.join(', ')}`);
    for (const id of ready) order.splice(order.indexOf(after(id)!) + 1, 0, id);
    pending = pending.filter((id) => !ready.includes(id));
  }
  return order;
}

/** How a server expects a delivery to be signed. */
export type SignatureStyle = 'schoolhooks' | 'octokit';

/** A runtime that serves a Fetch handler of bench/server-web.ts with its own server. */
export type WebRuntime = 'node' | 'bun' | 'deno';

/** One row of the tables. */
export interface ServerSpec {
  label: string;
  style: SignatureStyle;
  /**
   * Absent: a Node server of bench/server.ts, driven over IPC. Present: a Fetch handler of
   * bench/server-web.ts (`adapter` = `fetchHandler`, `hand` = the hand-written one, `same` = the
   * hand-written one doing the adapter's work) on `runtime`'s
   * own server, driven over HTTP (Bun and Deno have no IPC channel to a Node parent).
   */
  web?: { runtime: WebRuntime; handler: 'adapter' | 'hand' | 'same' };
  /**
   * Why this server resets a few connections under load: up to 1 % of requests failing with
   * ECONNRESET is then a known trait of the server, not a problem of the cell.
   */
  knownResets?: string;
}

/**
 * Deno 2.9.5 answers `connection: close` to every request whose body outgrows its first read
 * (denoland/deno#36657), so each delivery opens a connection, and a few of them are reset.
 */
const DENO_RESETS =
  'Deno.serve closes the connection after every body over ~1 kB (denoland/deno#36657)';

export const SERVERS: Record<ServerId, ServerSpec> = {
  minimal: {
    label: '(a) hand-written node:http (raw body + HMAC + JSON.parse)',
    style: 'schoolhooks',
  },
  'minimal-same': {
    label:
      "(h) (a) doing the adapter's work in a straight line (validation, memoryStore lease, handler deadline)",
    style: 'schoolhooks',
  },
  node: { label: '(b) schoolhooks node adapter + memoryStore', style: 'schoolhooks' },
  express: { label: '(b) schoolhooks Express adapter + memoryStore', style: 'schoolhooks' },
  fastify: { label: '(b) schoolhooks Fastify plugin + memoryStore', style: 'schoolhooks' },
  koa: { label: '(b) schoolhooks Koa middleware + memoryStore', style: 'schoolhooks' },
  hono: { label: '(b) schoolhooks Hono adapter + memoryStore', style: 'schoolhooks' },
  fetch: {
    label: '(b) schoolhooks Fetch adapter (on @hono/node-server) + memoryStore',
    style: 'schoolhooks',
  },
  'node-unwatched': {
    label: '(b) node adapter + memoryStore, watch: false (no notes for the watchdog)',
    style: 'schoolhooks',
  },
  'node-tenant': {
    label: '(b) node adapter + memoryStore, secret looked up per tenant (cached)',
    style: 'schoolhooks',
  },
  'node-redis': { label: '(c) schoolhooks node adapter + redisStore', style: 'schoolhooks' },
  'node-postgres': {
    label: '(c) schoolhooks node adapter + postgresStore (one transaction per delivery)',
    style: 'schoolhooks',
  },
  'node-inbox': {
    label: '(c) node adapter + redisStore + bullmqInbox (202 once the job is in Redis)',
    style: 'schoolhooks',
  },
  'node-pgboss': {
    label: '(c) node adapter + postgresStore + pgBossInbox (202 once the job row is committed)',
    style: 'schoolhooks',
  },
  'node-otel': {
    label: '(b) node adapter + memoryStore + openTelemetry (SDK, batch spans, no-op export)',
    style: 'schoolhooks',
  },
  octokit: { label: '(d) @octokit/webhooks node middleware', style: 'octokit' },
  'octokit-web': {
    label: "(d) @octokit/webhooks' Fetch middleware (createWebMiddleware) on @hono/node-server",
    style: 'octokit',
  },
  'express-hand': { label: '(e) hand-written Express 5 (same HMAC check)', style: 'schoolhooks' },
  'fastify-hand': {
    label: '(e) hand-written Fastify 5 (a Buffer body parser, same HMAC check)',
    style: 'schoolhooks',
  },
  'koa-hand': { label: '(e) hand-written Koa 3 (same HMAC check)', style: 'schoolhooks' },
  'hono-hand': {
    label: '(e) hand-written Hono on @hono/node-server (same HMAC check)',
    style: 'schoolhooks',
  },
  'node-baseline': {
    label: '(b) the node adapter + memoryStore of the baseline build (BENCH_BASELINE)',
    style: 'schoolhooks',
  },
  'node-redis-baseline': {
    label: '(c) the node adapter + redisStore of the baseline build (BENCH_BASELINE)',
    style: 'schoolhooks',
  },
  'node-unwatched-baseline': {
    label:
      '(b) the node adapter + memoryStore, watch: false, of the baseline build (BENCH_BASELINE)',
    style: 'schoolhooks',
  },
  'node-lean': {
    label: '(b) node adapter + memoryStore, recordEntities: false, watch: false',
    style: 'schoolhooks',
  },
  'node-redis-lean': {
    label: '(c) node adapter + redisStore, recordEntities: false, watch: false',
    style: 'schoolhooks',
  },
  core: {
    label: "diagnostic: (a)'s body reading + receiver.handle() + memoryStore",
    style: 'schoolhooks',
  },
  'hono-floor': {
    label:
      "(f) (a)'s work in a Hono route on @hono/node-server (body read as the adapters read it)",
    style: 'schoolhooks',
  },
  'fetch-floor': {
    label:
      "(f) (a)'s work in a Fetch handler on @hono/node-server (body read as the adapters read it)",
    style: 'schoolhooks',
  },
  'fetch-request': {
    label:
      '(g) schoolhooks Fetch adapter, Request only (@hono/node-server, `(request) => handler(request)`)',
    style: 'schoolhooks',
    web: { runtime: 'node', handler: 'adapter' },
  },
  'fetch-hand': {
    label:
      '(g) hand-written Fetch handler, same server (arrayBuffer, HMAC, JSON.parse, bounded Set dedup)',
    style: 'schoolhooks',
    web: { runtime: 'node', handler: 'hand' },
  },
  'fetch-same': {
    label:
      "(h) (g)'s handler doing the adapter's work in a straight line (validation, memoryStore lease, handler deadline), same server",
    style: 'schoolhooks',
    web: { runtime: 'node', handler: 'same' },
  },
  'bun-fetch': {
    label: '(g) schoolhooks Fetch adapter on Bun.serve',
    style: 'schoolhooks',
    web: { runtime: 'bun', handler: 'adapter' },
  },
  'bun-hand': {
    label: '(g) hand-written Fetch handler on Bun.serve',
    style: 'schoolhooks',
    web: { runtime: 'bun', handler: 'hand' },
  },
  'bun-same': {
    label: "(h) (g)'s handler doing the adapter's work in a straight line, on Bun.serve",
    style: 'schoolhooks',
    web: { runtime: 'bun', handler: 'same' },
  },
  'deno-fetch': {
    label: '(g) schoolhooks Fetch adapter on Deno.serve',
    style: 'schoolhooks',
    web: { runtime: 'deno', handler: 'adapter' },
    knownResets: DENO_RESETS,
  },
  'deno-hand': {
    label: '(g) hand-written Fetch handler on Deno.serve',
    style: 'schoolhooks',
    web: { runtime: 'deno', handler: 'hand' },
    knownResets: DENO_RESETS,
  },
  'deno-same': {
    label: "(h) (g)'s handler doing the adapter's work in a straight line, on Deno.serve",
    style: 'schoolhooks',
    web: { runtime: 'deno', handler: 'same' },
    knownResets: DENO_RESETS,
  },
};
