/**
 * One benchmarked server, started by bench/run.ts in its own process (pinned to one core):
 * `node --import tsx bench/server.ts <id> [redis namespace]`. It listens on an ephemeral port of
 * 127.0.0.1, reports `{ type: 'ready', port }` over IPC, and answers `mark` / `stats` messages
 * with the deliveries it handled and the CPU time it used since the last mark.
 * @module
 */

import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { BENCH_PATH, DIAGNOSTIC_IDS, type NodeServerId, SERVER_IDS, SERVERS } from './servers.js';
import { BENCH_RECEIVER_OPTIONS, SECRET } from './bodies.js';
import { getHeader } from '../src/receiving/request.js';
import { sameWork } from './same-work.js';
import { HOUR } from '../src/platform/platform-contract.js';
import type { ReceiverOptions } from '../src/receiving/receiver.js';

const [id, namespace = 'bench'] = process.argv.slice(2) as [NodeServerId, string?];
if (![...SERVER_IDS, ...DIAGNOSTIC_IDS].includes(id) || SERVERS[id].web) {
  throw new Error(`unknown server ${id} (the Fetch rows run bench/server-web.ts)`);
}

/** Deliveries that reached the code after verification (a handler, or the hand-written end). */
let handled = 0;
/** Failures the receiver reported, by code: the run fails if any shows up. */
const failures: Record<string, number> = {};

// ---------------------------------------------------------------------------------------------
// The hand-written receivers: raw body, HMAC-SHA256 in constant time, JSON.parse, 200.

/** A hand-written check, as a seller would write it: the secret string, node:crypto. */
function verifyAndParse(body: Buffer, signature: unknown): boolean {
  if (typeof signature !== 'string' || signature.length !== 64) return false;
  const expected = createHmac('sha256', SECRET).update(body).digest();
  const given = Buffer.from(signature, 'hex');
  if (given.length !== 32 || !timingSafeEqual(expected, given)) return false;
  try {
    JSON.parse(body.toString('utf8'));
  } catch {
    return false;
  }
  handled++;
  return true;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

const OK = '{"ok":true}';
const REJECTED = '{"ok":false}';

async function minimalServer(): Promise<Server> {
  return createServer((req, res) => {
    readBody(req).then(
      (body) => {
        const ok = verifyAndParse(body, req.headers['signature']);
        const json = ok ? OK : REJECTED;
        res.writeHead(ok ? 200 : 401, {
          'content-type': 'application/json',
          'content-length': json.length,
        });
        res.end(json);
      },
      () => res.destroy(),
    );
  });
}

/** (a) doing the adapter's work in a straight line (bench/same-work.ts): the (h) row of node:http. */
async function minimalSameWork(): Promise<Server> {
  const receive = sameWork(() => {
    handled++;
  });
  return createServer((req, res) => {
    readBody(req)
      .then((body) => receive(body, getHeader(req.headers, 'signature')))
      .then(
        ({ status, json }) => {
          res.writeHead(status, {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(json),
          });
          res.end(json);
        },
        () => res.destroy(),
      );
  });
}

async function expressHandWritten(): Promise<Server> {
  const { default: express } = await import('express');
  const app = express();
  app.post(BENCH_PATH, async (req, res) => {
    const body = await readBody(req);
    if (verifyAndParse(body, req.headers['signature'])) res.json({ ok: true });
    else res.status(401).json({ ok: false });
  });
  return createServer(app);
}

/**
 * Fastify's own way to a raw body: a content-type parser that keeps the bytes as a Buffer
 * (`parseAs: 'buffer'`), then the same check in the route.
 */
async function fastifyHandWritten(): Promise<Server> {
  const { default: Fastify } = await import('fastify');
  const app = Fastify();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) =>
    done(null, body),
  );
  app.post(BENCH_PATH, async (request, reply) => {
    const ok = verifyAndParse(request.body as Buffer, request.headers['signature']);
    return reply.code(ok ? 200 : 401).send(ok ? { ok: true } : { ok: false });
  });
  await app.ready();
  return app.server;
}

async function koaHandWritten(): Promise<Server> {
  const { default: Koa } = await import('koa');
  const app = new Koa();
  app.use(async (ctx, next) => {
    if (ctx.method !== 'POST' || ctx.path !== BENCH_PATH) return next();
    const ok = verifyAndParse(await readBody(ctx.req), ctx.get('signature'));
    ctx.status = ok ? 200 : 401;
    ctx.body = ok ? { ok: true } : { ok: false };
  });
  return createServer(app.callback());
}

async function honoHandWritten(): Promise<Server> {
  const { Hono } = await import('hono');
  const app = new Hono();
  app.post(BENCH_PATH, async (c) => {
    const body = Buffer.from(await c.req.arrayBuffer());
    if (verifyAndParse(body, c.req.header('signature'))) return c.json({ ok: true });
    return c.json({ ok: false }, 401);
  });
  return honoServer(app.fetch);
}

/** (a)'s work as a Fetch handler on @hono/node-server, the body read from the Node request. */
async function fetchFloorHandler(request: Request, env: unknown): Promise<Response> {
  const { incoming } = env as { incoming: IncomingMessage };
  const ok = verifyAndParse(await readBody(incoming), request.headers.get('signature'));
  return new Response(ok ? OK : REJECTED, {
    status: ok ? 200 : 401,
    headers: { 'content-type': 'application/json' },
  });
}

async function honoFloor(): Promise<Server> {
  const { Hono } = await import('hono');
  const app = new Hono();
  app.post(BENCH_PATH, async (c) => {
    const { incoming } = c.env as { incoming: IncomingMessage };
    const ok = verifyAndParse(await readBody(incoming), c.req.header('signature'));
    return c.json({ ok }, ok ? 200 : 401);
  });
  return honoServer(app.fetch);
}

// ---------------------------------------------------------------------------------------------
// @octokit/webhooks' node middleware: verifies and parses, validates and dedups nothing.

/** octokit's receiver with the counting handler, and its two middlewares. */
async function octokitWebhooks() {
  const octokit = await import('@octokit/webhooks');
  const webhooks = new octokit.Webhooks({ secret: SECRET });
  // Async, as the schoolhooks servers' handler is (and as users write them).
  webhooks.on('push', async () => {
    handled++;
  });
  webhooks.onError(() => {
    failures['octokit'] = (failures['octokit'] ?? 0) + 1;
  });
  return { octokit, webhooks };
}

async function octokitServer(): Promise<Server> {
  const { octokit, webhooks } = await octokitWebhooks();
  const middleware = octokit.createNodeMiddleware(webhooks, { path: BENCH_PATH });
  return createServer((req, res) => void middleware(req, res));
}

/** @octokit/webhooks' Fetch middleware (`createWebMiddleware`), on @hono/node-server. */
async function octokitWebServer(): Promise<Server> {
  const { octokit, webhooks } = await octokitWebhooks();
  return honoServer(octokit.createWebMiddleware(webhooks, { path: BENCH_PATH }));
}

// ---------------------------------------------------------------------------------------------
// schoolhooks: the core with a handler for both events (so each is validated, claimed, run and
// completed), behind each adapter.

/**
 * The guarantees a row may switch off (both on by default, as for users): the watchdog's notes,
 * and the entities' records for reconciliation. Both off, a receiver does what one of the build
 * before the records (`ab05fea`) did.
 */
type Guarantees = Pick<ReceiverOptions, 'watch' | 'recordEntities'>;

async function schoolhooksReceiver(
  store: StoreKind,
  telemetry = false,
  secret: ReceiverOptions['secret'] = BENCH_RECEIVER_OPTIONS.secret,
  guarantees: Guarantees = {},
) {
  const { createReceiver } = await import('../src/index.js');
  let storeOption = {};
  const telemetryOption = telemetry ? { telemetry: await recordingTelemetry() } : {};
  if (store === 'postgres' || store === 'postgres+inbox') {
    const { default: pg } = await import('pg');
    const { postgresStore } = await import('../src/stores/postgres.js');
    // Each delivery in flight holds a connection until its commit: one per load connection.
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 100 });
    storeOption = { store: postgresStore({ pool, table: postgresBenchTable(namespace) }) };
    if (store === 'postgres+inbox') storeOption = { ...storeOption, inbox: await countedPgBoss() };
  } else if (store !== 'memory') {
    const { Redis } = await import('ioredis');
    const { redisStore } = await import('../src/stores/redis.js');
    // ioredis's defaults (enableAutoPipelining measured no better here: the two commands of a
    // delivery are sequential, and concurrent deliveries rarely send in the same tick).
    const client = new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
    storeOption = { store: redisStore({ client, prefix: REDIS_PREFIX, namespace }) };
    if (store === 'redis+inbox')
      storeOption = { ...storeOption, inbox: await countedInbox(client) };
  }
  const receiver = createReceiver({
    ...BENCH_RECEIVER_OPTIONS,
    secret,
    ...guarantees,
    ...storeOption,
    ...telemetryOption,
  });
  // An async handler, as users write them: every delivery takes the path that races
  // handlerTimeoutMs.
  receiver.on(['UserSignedUp', 'PaymentCompleted'], async () => {
    handled++;
  });
  receiver.onError((error) => {
    failures[error.code] = (failures[error.code] ?? 0) + 1;
  });
  return receiver;
}

/** Where the benchmark runs postgresStore: `DATABASE_URL`, default the local test database. */
const DATABASE_URL = process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * The table of one server's run: `schoolhooks_bench_` and a hash of its namespace (a valid
 * identifier whatever the namespace); bench/run.ts drops them at the end.
 */
function postgresBenchTable(namespace: string): string {
  return `schoolhooks_bench_${createHash('sha256').update(namespace).digest('hex').slice(0, 16)}`;
}

type StoreKind = 'memory' | 'redis' | 'redis+inbox' | 'postgres' | 'postgres+inbox';

/** Keys the benchmark writes to Redis start with this; bench/run.ts deletes them at the end. */
const REDIS_PREFIX = 'schoolhooks-bench:';

/**
 * The HTTP side of an inbox: every delivery stored as a BullMQ job (no worker runs here); the
 * jobs are counted as they are stored, as the other servers count handler runs.
 */
async function countedInbox(client: Redis) {
  const { bullmqInbox } = await import('../src/inbox/bullmq.js');
  const inbox = bullmqInbox({
    connection: client,
    queueName: `inbox-${namespace}`,
    // Under REDIS_PREFIX, so bench/run.ts deletes the jobs with the store's keys.
    prefix: `${REDIS_PREFIX}bull`,
    keepCompletedMs: HOUR,
  });
  return {
    async enqueue(delivery: Parameters<typeof inbox.enqueue>[0]) {
      await inbox.enqueue(delivery);
      handled++;
    },
  };
}

/**
 * The HTTP side of a pgBossInbox: every delivery stored as a pg-boss job row (no worker runs
 * here), in a pg-boss schema named like the store's table, which bench/run.ts drops at the end.
 */
async function countedPgBoss() {
  const { pgBossInbox } = await import('../src/inbox/pg-boss.js');
  const inbox = pgBossInbox({
    connectionString: DATABASE_URL,
    schema: postgresBenchTable(`${namespace}:pg-boss`),
    queueName: 'bench',
    keepCompletedMs: HOUR,
  });
  await inbox.start();
  return {
    async enqueue(delivery: Parameters<typeof inbox.enqueue>[0]) {
      await inbox.enqueue(delivery);
      handled++;
    },
  };
}

async function nodeAdapter(
  store: StoreKind,
  telemetry = false,
  guarantees: Guarantees = {},
): Promise<Server> {
  const { nodeListener } = await import('../src/adapters/node.js');
  const receiver = await schoolhooksReceiver(store, telemetry, undefined, guarantees);
  return createServer(nodeListener(receiver, { path: BENCH_PATH }));
}

/**
 * (b) for an integration serving many schools: the route `/webhooks/<tenant>` names the school
 * (the load posts to /webhooks/school, so the tenant is `school`), and its secret comes from an
 * async lookup, as from a database, cached after the first delivery (docs/tenants.md).
 */
async function nodeTenantAdapter(): Promise<Server> {
  const { nodeListener } = await import('../src/adapters/node.js');
  const { secret } = BENCH_RECEIVER_OPTIONS;
  const lookup = async ({ tenant }: { tenant: string }) =>
    tenant === 'school' ? secret : undefined;
  const receiver = await schoolhooksReceiver('memory', false, lookup);
  const tenant = (req: IncomingMessage) => req.url?.split('?')[0]?.split('/')[2];
  return createServer(nodeListener(receiver, { tenant }));
}

/**
 * openTelemetry() on the SDK as a service would run it: every span recorded and batched, every
 * metric aggregated; the exporters drop what they get, so the cost measured is ours and the
 * SDK's, not a collector's.
 */
async function recordingTelemetry() {
  const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const { MeterProvider, PeriodicExportingMetricReader, AggregationTemporality } =
    await import('@opentelemetry/sdk-metrics');
  const { openTelemetry } = await import('../src/telemetry/otel/index.js');
  const { ExportResultCode } = await import('@opentelemetry/core');
  const done = (callback: (result: { code: number }) => void) =>
    callback({ code: ExportResultCode.SUCCESS });
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [
      new BatchSpanProcessor({
        export: (_spans, callback) => done(callback),
        shutdown: async () => {},
      }),
    ],
  });
  const meterProvider = new MeterProvider({
    readers: [
      new PeriodicExportingMetricReader({
        exporter: {
          export: (_metrics, callback) => done(callback),
          forceFlush: async () => {},
          shutdown: async () => {},
          selectAggregationTemporality: () => AggregationTemporality.CUMULATIVE,
        },
        exportIntervalMillis: 1_000,
      }),
    ],
  });
  return openTelemetry({ tracerProvider, meterProvider });
}

/** No adapter: (a)'s body reading, then the core. */
async function coreOnly(): Promise<Server> {
  const receiver = await schoolhooksReceiver('memory');
  return createServer((req, res) => {
    readBody(req)
      .then((body) => receiver.handle({ method: req.method, headers: req.headers, body }))
      .then(
        ({ status, body }) => {
          const json = JSON.stringify(body);
          res.writeHead(status, {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(json),
          });
          res.end(json);
        },
        () => res.destroy(),
      );
  });
}

async function expressAdapter(): Promise<Server> {
  const { default: express } = await import('express');
  const { expressMiddleware } = await import('../src/adapters/express.js');
  const app = express();
  app.post(BENCH_PATH, expressMiddleware(await schoolhooksReceiver('memory')));
  return createServer(app);
}

async function fastifyAdapter(): Promise<Server> {
  const { default: Fastify } = await import('fastify');
  const { schoolhooksPlugin } = await import('../src/adapters/fastify.js');
  const app = Fastify();
  await app.register(schoolhooksPlugin, {
    receiver: await schoolhooksReceiver('memory'),
    path: BENCH_PATH,
  });
  await app.ready();
  return app.server;
}

async function koaAdapter(): Promise<Server> {
  const { default: Koa } = await import('koa');
  const { koaMiddleware } = await import('../src/adapters/koa.js');
  const app = new Koa();
  app.use(koaMiddleware(await schoolhooksReceiver('memory'), { path: BENCH_PATH }));
  return createServer(app.callback());
}

async function honoAdapter(): Promise<Server> {
  const { Hono } = await import('hono');
  const { honoHandler } = await import('../src/adapters/hono.js');
  const app = new Hono();
  app.post(BENCH_PATH, honoHandler(await schoolhooksReceiver('memory')));
  return honoServer(app.fetch);
}

async function fetchAdapter(): Promise<Server> {
  const { fetchHandler } = await import('../src/adapters/fetch.js');
  return honoServer(fetchHandler(await schoolhooksReceiver('memory')));
}

/** A Fetch handler on @hono/node-server, the usual way to serve one from Node. */
async function honoServer(
  fetch: (request: Request, env: unknown) => Response | Promise<Response>,
): Promise<Server> {
  const { createAdaptorServer } = await import('@hono/node-server');
  return createAdaptorServer({ fetch }) as Server;
}

/** The guarantees of the build before the records: no records, no notes for the watchdog. */
const LEAN: Guarantees = { watch: false, recordEntities: false };

const factories: Record<NodeServerId, () => Promise<Server>> = {
  minimal: minimalServer,
  'minimal-same': minimalSameWork,
  node: () => nodeAdapter('memory'),
  'node-unwatched': () => nodeAdapter('memory', false, { watch: false }),
  'node-lean': () => nodeAdapter('memory', false, LEAN),
  'node-redis-lean': () => nodeAdapter('redis', false, LEAN),
  'node-tenant': nodeTenantAdapter,
  express: expressAdapter,
  fastify: fastifyAdapter,
  koa: koaAdapter,
  hono: honoAdapter,
  fetch: fetchAdapter,
  'node-redis': () => nodeAdapter('redis'),
  'node-postgres': () => nodeAdapter('postgres'),
  'node-otel': () => nodeAdapter('memory', true),
  'node-inbox': () => nodeAdapter('redis+inbox'),
  'node-pgboss': () => nodeAdapter('postgres+inbox'),
  octokit: octokitServer,
  'octokit-web': octokitWebServer,
  'express-hand': expressHandWritten,
  'fastify-hand': fastifyHandWritten,
  'koa-hand': koaHandWritten,
  'hono-hand': honoHandWritten,
  core: coreOnly,
  'hono-floor': honoFloor,
  'fetch-floor': () => honoServer(fetchFloorHandler),
};

const server = await factories[id]();
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.send?.({ type: 'ready', port });
});

let markCpu = process.cpuUsage();
let markHandled = 0;
process.on('message', (message: { type: string }) => {
  if (message.type === 'mark') {
    markCpu = process.cpuUsage();
    markHandled = handled;
    process.send?.({ type: 'marked' });
  } else if (message.type === 'stats') {
    const cpu = process.cpuUsage(markCpu);
    process.send?.({
      type: 'stats',
      handled: handled - markHandled,
      cpuUs: cpu.user + cpu.system,
      failures,
    });
  }
});
// A clean exit, so `--cpu-prof` (BENCH_PROFILE) writes its profile.
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
