/**
 * The servers the benchmark compares, in the order of the table.
 * @module
 */

/** The path every server answers deliveries on. */
export const BENCH_PATH = '/webhooks/school';

export const SERVER_IDS = [
  'minimal',
  'node',
  'express',
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
  'hono-hand',
  'hono-floor',
  'fetch-floor',
] as const;
/**
 * Diagnostic servers, measured only when named in `BENCH_ONLY`: `core` is the minimal receiver's
 * body reading around `receiver.handle()`, to tell the core's cost from an adapter's.
 */
export const DIAGNOSTIC_IDS = ['core'] as const;
export type ServerId = (typeof SERVER_IDS)[number] | (typeof DIAGNOSTIC_IDS)[number];

/** How a server expects a delivery to be signed. */
export type SignatureStyle = 'schoolhooks' | 'octokit';

export const SERVERS: Record<ServerId, { label: string; style: SignatureStyle }> = {
  minimal: {
    label: '(a) hand-written node:http (raw body + HMAC + JSON.parse)',
    style: 'schoolhooks',
  },
  node: { label: '(b) schoolhooks node adapter + memoryStore', style: 'schoolhooks' },
  express: { label: '(b) schoolhooks Express adapter + memoryStore', style: 'schoolhooks' },
  hono: { label: '(b) schoolhooks Hono adapter + memoryStore', style: 'schoolhooks' },
  fetch: {
    label: '(b) schoolhooks Fetch adapter (on @hono/node-server) + memoryStore',
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
  'hono-hand': {
    label: '(e) hand-written Hono on @hono/node-server (same HMAC check)',
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
};
