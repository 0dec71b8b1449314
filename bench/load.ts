/**
 * The load generator, started by bench/run.ts in its own process (pinned to the other core):
 * autocannon with a pool of pre-signed bodies, each request taking the next one, so every request
 * of a run carries its own idempotencyKey. Driven over IPC: `{ type: 'run', ... }` answers
 * `{ type: 'result', ... }`.
 * @module
 */

import autocannon from 'autocannon';
import { BODY_KINDS, bodyFactory, randomTag, type BodyKind, type SignedBody } from './bodies.js';
import { BENCH_PATH, type SignatureStyle } from './servers.js';

/** What bench/run.ts asks for. */
export interface LoadRequest {
  type: 'run';
  port: number;
  kind: BodyKind;
  style: SignatureStyle;
  connections: number;
  /** How long to run; or, for a warm-up, `amount` requests. */
  seconds?: number;
  amount?: number;
  /** Where in the pool this run starts: runs against one server never share a key. */
  first: number;
}

/** What one run measured. */
export interface LoadResult {
  type: 'result';
  requests: number;
  ok: number;
  non2xx: number;
  errors: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Requests sent: the next run against the same server starts there. */
  next: number;
  /** Bodies signed during the run because the pool ran out (they cost the load generator CPU). */
  signedLive: number;
  /** CPU the load generator used, as a share of one core. */
  cpuShare: number;
  /** The socket errors, by code, so that a failing server says how it failed. */
  errorCodes: Record<string, number>;
}

const QUICK = process.env.BENCH_QUICK === '1';
/**
 * Bodies signed ahead per size: enough for the fastest server's warm-up and measurement (10 000
 * + 5 rounds × 2 s at up to 59 000 / 35 000 req/s: the hand-written Bun row reached 51 500 /
 * 34 200 on a faster host, and ran both pools out in its last round); one pool, shared by every
 * server. A pool that runs out makes the load generator sign on its core during the round, which
 * slows it.
 */
const POOL: Record<BodyKind, number> = QUICK
  ? { small: 60_000, large: 40_000 }
  : { small: 600_000, large: 360_000 };

const tag = randomTag();
const factories = Object.fromEntries(
  BODY_KINDS.map((kind) => [kind, bodyFactory(kind, tag)]),
) as Record<BodyKind, ReturnType<typeof bodyFactory>>;
const pools: Partial<Record<BodyKind, SignedBody[]>> = {};

function poolOf(kind: BodyKind): SignedBody[] {
  let pool = pools[kind];
  if (!pool) {
    const { make } = factories[kind];
    pool = Array.from({ length: POOL[kind] }, (_, i) => make(i));
    pools[kind] = pool;
  }
  return pool;
}

async function run(request: LoadRequest): Promise<LoadResult> {
  const pool = poolOf(request.kind);
  const { make } = factories[request.kind];
  let n = request.first;
  let signedLive = 0;
  const next = (): SignedBody => {
    const i = n++;
    if (i < pool.length) return pool[i]!;
    signedLive++;
    return make(i);
  };
  const headersOf =
    request.style === 'octokit'
      ? (signed: SignedBody) => ({
          'content-type': 'application/json',
          'x-github-event': 'push',
          'x-github-delivery': signed.idempotencyKey,
          'x-hub-signature-256': `sha256=${signed.signature}`,
        })
      : (signed: SignedBody) => ({
          'content-type': 'application/json',
          signature: signed.signature,
        });

  // autocannon's own latency histogram has 1 ms resolution; these are the exact times.
  let latencies = new Float64Array(1 << 16);
  let count = 0;
  let ok = 0;
  const cpuBefore = process.cpuUsage();
  const startedAt = performance.now();
  const instance = autocannon({
    url: `http://127.0.0.1:${request.port}`,
    connections: request.connections,
    pipelining: 1,
    ...(request.amount !== undefined
      ? { amount: request.amount }
      : { duration: request.seconds ?? 1 }),
    requests: [
      {
        method: 'POST',
        path: BENCH_PATH,
        setupRequest: (req) => {
          const signed = next();
          return { ...req, headers: headersOf(signed), body: signed.body };
        },
      },
    ],
  });
  const errorCodes: Record<string, number> = {};
  instance.on('reqError', (error: Error & { code?: string }) => {
    const code = error.code ?? error.message;
    errorCodes[code] = (errorCodes[code] ?? 0) + 1;
  });
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, ms: number) => {
    if (statusCode < 200 || statusCode > 299) return;
    ok++;
    if (count === latencies.length) {
      const grown = new Float64Array(latencies.length * 2);
      grown.set(latencies);
      latencies = grown;
    }
    latencies[count++] = ms;
  });
  const result = await instance;
  const elapsed = (performance.now() - startedAt) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const sorted = latencies.subarray(0, count).sort();
  const at = (q: number) => sorted[Math.min(count - 1, Math.floor(q * count))] ?? Number.NaN;
  return {
    type: 'result',
    requests: result.requests.total,
    ok,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    seconds: elapsed,
    rps: ok / elapsed,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    next: n,
    signedLive,
    cpuShare: (cpu.user + cpu.system) / 1e6 / elapsed,
    errorCodes,
  };
}

process.on('message', (message: LoadRequest | { type: 'prepare' }) => {
  if (message.type === 'prepare') {
    for (const kind of BODY_KINDS) poolOf(kind);
    process.send?.({ type: 'prepared', sizes: BODY_KINDS.map((kind) => factories[kind].size) });
    return;
  }
  run(message).then(
    (result) => process.send?.(result),
    (error: unknown) => process.send?.({ type: 'error', message: String(error) }),
  );
});
process.on('disconnect', () => process.exit(0));
process.send?.({ type: 'ready' });
