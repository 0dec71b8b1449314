/**
 * `npm run bench`: every server of bench/servers.ts, each in its own process pinned to core 0,
 * under autocannon in a separate process pinned to core 1, on both body sizes, repeated and
 * reported as medians with their spread and as ratios to the hand-written node:http receiver
 * measured in the same repetition; then the in-process costs; then the targets of the issue.
 *
 * Environment: `BENCH_QUICK=1` (one short repetition), `BENCH_REPS`, `BENCH_SECONDS`,
 * `BENCH_RESTART_EVERY` (servers started anew after every that many rounds),
 * `BENCH_OUT=<file.json>` (all raw figures), `BENCH_ONLY=minimal,node` (a subset of servers), `BENCH_IN_PROCESS=0` (servers only),
 * `BENCH_PROFILE=<dir>` (each server writes a `--cpu-prof` profile there; read one with
 * `tsx bench/top-self-time.ts <file>`), `REDIS_URL` (default redis://127.0.0.1:6379).
 * @module
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BODY_KINDS, FIXTURE_OF, type BodyKind } from './bodies.js';
import { OFFLINE_BINARIES, offlineRun } from '../scripts/offline-runtimes.mjs';
import {
  CUTS,
  fetchStepCosts,
  formatFetchSteps,
  type FetchStepCosts,
  type FetchStepSample,
} from './fetch-steps.js';
import { formatInProcess, type InProcessResult } from './in-process.js';
import { hasTaskset, median, pinned } from './measure.js';
import type { LoadRequest, LoadResult } from './load.js';
import {
  DIAGNOSTIC_IDS,
  measurementOrder,
  SERVER_IDS,
  SERVERS,
  type ServerId,
  type ServerSpec,
} from './servers.js';

const QUICK = process.env.BENCH_QUICK === '1';
/** Rounds: each server is measured once per round, and the median round is reported. */
const REPS = Number(process.env.BENCH_REPS ?? (QUICK ? 1 : 5));
/**
 * `BENCH_RESTART_EVERY=<n>`: every server is started anew (and warmed again) after each n rounds.
 * Two processes of one build differ by a few percent for as long as they live (bench/README.md,
 * "Comparing two builds", has the figures), so a comparison of two builds is only as good as the
 * number of process pairs it averages: restarts give it more.
 * With `BENCH_PROFILE`, each start writes a profile of its own.
 */
const RESTART_EVERY = Math.max(1, Number(process.env.BENCH_RESTART_EVERY ?? REPS) || REPS);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
/** Requests sent before measuring: enough for V8 to optimise the hot paths of every server. */
const WARMUP_REQUESTS = QUICK ? 5_000 : 10_000;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
/** `BENCH_ONLY=minimal,node` measures a subset (for profiling sessions; targets need them all). */
const ONLY = process.env.BENCH_ONLY?.split(',') as ServerId[] | undefined;
const SERVER_CORE = 0;
const LOAD_CORE = 1;

const root = fileURLToPath(new URL('..', import.meta.url));
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/** The binary of each runtime that serves the Fetch rows (Bun and Deno from node_modules/.bin). */
const missingRuntimes = (['bun', 'deno'] as const).filter(
  (runtime) => !existsSync(OFFLINE_BINARIES[runtime]),
);
const runs = (id: ServerId) => {
  const runtime = SERVERS[id].web?.runtime;
  return runtime === undefined || !missingRuntimes.includes(runtime as 'bun' | 'deno');
};
const MEASURED: readonly ServerId[] = (
  ONLY ? [...SERVER_IDS, ...DIAGNOSTIC_IDS].filter((id) => ONLY.includes(id)) : SERVER_IDS
).filter(runs);

/**
 * Where the benchmark's processes are bundled (with tsup, as the package is): tsx would do as well
 * but for its keepNames transform, which gives every closure made per request a
 * defineProperty call the published build does not have (several µs a request).
 */
const built = join(root, 'node_modules', '.cache', 'schoolhooks-bench');

async function buildBench(): Promise<void> {
  const { build } = await import('tsup');
  await build({
    entry: {
      server: here('server.ts'),
      'server-web': here('server-web.ts'),
      load: here('load.ts'),
      'in-process': here('in-process.ts'),
      'fetch-steps': here('fetch-steps.ts'),
      'entity-ab': here('entity-ab.ts'),
      'reconcile-run': here('reconcile-run.ts'),
    },
    format: ['esm'],
    outDir: built,
    outExtension: () => ({ js: '.mjs' }),
    target: 'node20',
    platform: 'node',
    splitting: false,
    sourcemap: false,
    dts: false,
    clean: true,
    silent: true,
    // Not the package's tsup.config.ts: only these entries, every package left to node_modules.
    config: false,
    skipNodeModulesBundle: true,
  });
}

/** Starts a bundled script on Node, pinned to `core` when taskset exists, with an IPC channel. */
function start(
  core: number,
  script: string,
  args: string[],
  nodeFlags: string[] = [],
): ChildProcess {
  const file = isAbsolute(script) ? script : join(built, script.replace(/\.ts$/, '.mjs'));
  const node = [...nodeFlags, file, ...args];
  const [command, argv] = pinned(core, process.execPath, node);
  return spawn(command, argv, { cwd: root, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
}

/**
 * The bench server bundle of the baseline build: `BENCH_BASELINE` names another checkout (the
 * last release, say) that carries this bench/ and has run it once, so that its bundle holds
 * this harness around that build's code (bench/README.md, "Comparing two builds").
 */
function baselineBundle(): string {
  const dir = process.env.BENCH_BASELINE;
  const bundle =
    dir && join(resolve(dir), 'node_modules', '.cache', 'schoolhooks-bench', 'server.mjs');
  if (!bundle || !existsSync(bundle)) {
    throw new Error('node-baseline needs BENCH_BASELINE: a checkout whose bench bundle is built');
  }
  return bundle;
}

/** Deno's cache for the run: empty, so that it resolves everything from node_modules, offline. */
let denoDir: string | undefined;

/**
 * Starts bench/server-web.ts on `runtime`, pinned to `core`, offline as
 * scripts/test-runtimes.mjs runs Bun and Deno; resolves once it printed its port.
 */
async function startWeb(
  core: number,
  { runtime, handler }: NonNullable<ServerSpec['web']>,
  profileDir: string | undefined,
): Promise<{ child: ChildProcess; port: number }> {
  const script = join(built, 'server-web.mjs');
  const profile = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  denoDir ??= mkdtempSync(join(tmpdir(), 'schoolhooks-bench-deno-'));
  const {
    command: binary,
    args,
    env,
  } = runtime === 'node'
    ? { command: process.execPath, args: [...profile, script, handler], env: {} }
    : offlineRun(runtime, script, {
        denoDir,
        scriptArgs: [handler],
        runtimeFlags: runtime === 'bun' ? profile : [],
      });
  const [command, argv] = pinned(core, binary, args);
  const child = spawn(command, argv, {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = /^ready (\d+)$/m.exec(out);
      if (match) {
        child.stdout?.off('data', onData);
        child.off('exit', onExit);
        // Anything it prints later goes where the other servers' output goes.
        child.stdout?.pipe(process.stdout);
        resolve(Number(match[1]));
      }
    };
    const onExit = (code: number | null) =>
      reject(new Error(`${runtime} server-web.mjs ${handler} exited (${code}) before it listened`));
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
  });
  return { child, port };
}

/** CPU time (user + system, every thread) of process `pid` so far, in µs, from /proc. */
function processCpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  // utime and stime, fields 14 and 15 of proc(5), in clock ticks of 10 ms.
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** The next IPC message of `type` from `child` (rejects if the child exits first). */
function receive<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: { type: string; message?: string }) => {
      if (message.type === 'error') return done(() => reject(new Error(message.message)));
      if (message.type === type) done(() => resolve(message as T));
    };
    const onExit = (code: number | null) =>
      done(() => reject(new Error(`a benchmark process exited (${code}) before sending ${type}`)));
    const done = (settle: () => void) => {
      child.off('message', onMessage);
      child.off('exit', onExit);
      settle();
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

function ask<T>(child: ChildProcess, message: object, reply: string): Promise<T> {
  const answer = receive<T>(child, reply);
  child.send(message);
  return answer;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** Busy and total jiffies of one core, from /proc/stat (undefined where there is none). */
function coreTimes(core: number): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`cpu${core} `));
    if (!line) return undefined;
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] =
      line.trim().split(/\s+/).slice(1).map(Number);
    const busy = user + nice + system + irq + softirq + steal;
    return { busy, total: busy + idle + iowait };
  } catch {
    return undefined;
  }
}

/** One measured cell: one server, one body size, one round. */
interface Cell {
  id: ServerId;
  kind: BodyKind;
  rep: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Server CPU time per answered request: robust to other load on the machine. */
  cpuUsPerRequest: number;
  /** Share of core 0 busy during the measurement, whoever used it. */
  core0Busy: number;
  loaderCpuShare: number;
  problems: string[];
}

/** What a server did since its last mark. */
interface ServerStats {
  handled: number;
  cpuUs: number;
  failures: Record<string, number>;
}

/** A server process kept for every round of one body size, and where its keys have got to. */
interface RunningServer {
  id: ServerId;
  child: ChildProcess;
  port: number;
  /** The next pool index: no two requests to one server ever carry the same key. */
  next: number;
  /** Starts counting deliveries and CPU time afresh. */
  mark(): Promise<void>;
  stats(): Promise<ServerStats>;
}

/** mark/stats over IPC, for the servers of bench/server.ts. */
function ipcControl(child: ChildProcess): Pick<RunningServer, 'mark' | 'stats'> {
  return {
    mark: () => ask(child, { type: 'mark' }, 'marked'),
    stats: () => ask<ServerStats>(child, { type: 'stats' }, 'stats'),
  };
}

/** mark/stats for bench/server-web.ts: its counters over HTTP, its CPU time from /proc. */
function httpControl(child: ChildProcess, port: number): Pick<RunningServer, 'mark' | 'stats'> {
  const read = async (): Promise<ServerStats> => {
    const response = await fetch(`http://127.0.0.1:${port}/__bench/stats`);
    const { handled, failures } = (await response.json()) as Omit<ServerStats, 'cpuUs'>;
    return { handled, failures, cpuUs: processCpuUs(child.pid!) };
  };
  let since: ServerStats = { handled: 0, cpuUs: 0, failures: {} };
  return {
    mark: async () => {
      since = await read();
    },
    stats: async () => {
      const now = await read();
      return { ...now, handled: now.handled - since.handled, cpuUs: now.cpuUs - since.cpuUs };
    },
  };
}

/** Socket errors a server may have in `requests` without a problem being reported. */
function tolerated(id: ServerId, requests: number): number {
  return SERVERS[id].knownResets ? requests / 100 : 0;
}

async function startServer(
  loader: ChildProcess,
  id: ServerId,
  kind: BodyKind,
  runTag: string,
  block: number,
): Promise<RunningServer> {
  const profile = process.env.BENCH_PROFILE;
  const profileDir = profile ? `${profile}/${id}-${kind}` : undefined;
  const { web } = SERVERS[id];
  let child: ChildProcess;
  let port: number;
  let control: Pick<RunningServer, 'mark' | 'stats'>;
  if (web) {
    ({ child, port } = await startWeb(SERVER_CORE, web, profileDir));
    control = httpControl(child, port);
  } else {
    // `<row>-baseline` is another build's `<row>`.
    const baseline = id.endsWith('-baseline') ? id.slice(0, -'-baseline'.length) : undefined;
    child = start(
      SERVER_CORE,
      baseline === undefined ? 'server.ts' : baselineBundle(),
      // A namespace per server and start: each server's keys start over, and two on Redis must
      // not meet.
      [baseline ?? id, `${runTag}-${kind}-${id}-${block}`],
      // One file per thread (tsx's loader runs on its own); the largest is the main thread's.
      profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    );
    ({ port } = await receive<{ port: number }>(child, 'ready'));
    control = ipcControl(child);
  }
  const warm = await ask<LoadResult>(
    loader,
    {
      type: 'run',
      port,
      kind,
      style: SERVERS[id].style,
      connections: CONNECTIONS,
      amount: WARMUP_REQUESTS,
      first: 0,
    } satisfies LoadRequest,
    'result',
  );
  if (warm.non2xx > 0 || warm.errors > tolerated(id, warm.requests)) {
    await stop(child);
    throw new Error(
      `${id} failed its warm-up: ${warm.non2xx} non-2xx, ${warm.errors} errors ${JSON.stringify(warm.errorCodes)}`,
    );
  }
  return { id, child, port, next: warm.next, ...control };
}

async function measureCell(
  loader: ChildProcess,
  server: RunningServer,
  kind: BodyKind,
  rep: number,
): Promise<Cell> {
  const { id } = server;
  await server.mark();
  const before = coreTimes(SERVER_CORE);
  const load = await ask<LoadResult>(
    loader,
    {
      type: 'run',
      port: server.port,
      kind,
      style: SERVERS[id].style,
      connections: CONNECTIONS,
      seconds: SECONDS,
      first: server.next,
    } satisfies LoadRequest,
    'result',
  );
  server.next = load.next;
  const after = coreTimes(SERVER_CORE);
  const stats = await server.stats();
  const problems: string[] = [];
  if (load.non2xx > 0) problems.push(`${load.non2xx} non-2xx answers`);
  if (load.errors > tolerated(id, load.requests)) {
    problems.push(`${load.errors} socket errors ${JSON.stringify(load.errorCodes)}`);
  }
  if (Object.keys(stats.failures).length > 0) {
    problems.push(`failures reported: ${JSON.stringify(stats.failures)}`);
  }
  // Every 2xx must be a delivery that ran its handler (not a duplicate, not ignored).
  if (Math.abs(stats.handled - load.ok) > 2 * CONNECTIONS) {
    problems.push(`${stats.handled} handled for ${load.ok} 2xx answers`);
  }
  if (load.signedLive > 0) problems.push(`${load.signedLive} bodies signed during the run`);
  return {
    id,
    kind,
    rep,
    rps: load.rps,
    p50Ms: load.p50Ms,
    p99Ms: load.p99Ms,
    cpuUsPerRequest: stats.cpuUs / Math.max(1, load.ok),
    core0Busy: before && after ? (after.busy - before.busy) / (after.total - before.total) : NaN,
    loaderCpuShare: load.cpuShare,
    problems,
  };
}

// ---------------------------------------------------------------------------------------------
// Statistics and tables.

interface Summary {
  rps: number;
  rpsMin: number;
  rpsMax: number;
  /** Median over repetitions of (this cell / the reference cell of the same repetition). */
  ratio: number;
  ratioMin: number;
  ratioMax: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerRequest: number;
  cpuRatio: number;
}

function summarise(
  cells: readonly Cell[],
  id: ServerId,
  kind: BodyKind,
  reference: ServerId = 'minimal',
): Summary {
  const mine = cells.filter((c) => c.id === id && c.kind === kind);
  const ratios = mine.map((c) => {
    const ref = cells.find((r) => r.id === reference && r.kind === kind && r.rep === c.rep);
    return ref ? c.rps / ref.rps : NaN;
  });
  const cpuRatios = mine.map((c) => {
    const ref = cells.find((r) => r.id === reference && r.kind === kind && r.rep === c.rep);
    return ref ? ref.cpuUsPerRequest / c.cpuUsPerRequest : NaN;
  });
  const rps = mine.map((c) => c.rps);
  return {
    rps: median(rps),
    rpsMin: Math.min(...rps),
    rpsMax: Math.max(...rps),
    ratio: median(ratios),
    ratioMin: Math.min(...ratios),
    ratioMax: Math.max(...ratios),
    p50Ms: median(mine.map((c) => c.p50Ms)),
    p99Ms: median(mine.map((c) => c.p99Ms)),
    cpuUsPerRequest: median(mine.map((c) => c.cpuUsPerRequest)),
    cpuRatio: median(cpuRatios),
  };
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');

function table(cells: readonly Cell[], kind: BodyKind, bytes: number): string {
  const lines = [
    `${FIXTURE_OF[kind]} (${bytes} B), ${CONNECTIONS} connections, ${REPS} rounds × ${SECONDS} s per server, median (min–max):`,
    '',
    '| server | req/s | ratio to (a) | p50 ms | p99 ms | server CPU µs/req | CPU ratio to (a) |',
    '| - | -: | -: | -: | -: | -: | -: |',
  ];
  for (const id of MEASURED) {
    const s = summarise(cells, id, kind);
    const spread = REPS > 1 ? ` (${int(s.rpsMin)}–${int(s.rpsMax)})` : '';
    const ratioSpread = REPS > 1 ? ` (${s.ratioMin.toFixed(2)}–${s.ratioMax.toFixed(2)})` : '';
    lines.push(
      `| ${SERVERS[id].label} | ${int(s.rps)}${spread} | ${s.ratio.toFixed(2)}${ratioSpread} | ` +
        `${s.p50Ms.toFixed(2)} | ${s.p99Ms.toFixed(2)} | ${s.cpuUsPerRequest.toFixed(1)} | ${s.cpuRatio.toFixed(2)} |`,
    );
  }
  return lines.join('\n');
}

interface Target {
  name: string;
  value: number;
  /** None for a reference row: a ceiling the targets are read against. */
  goal?: number;
  /** The same comparison on server CPU per request, where it applies. */
  cpuValue?: number;
  unit?: string;
}

function targets(cells: readonly Cell[], inProcess: InProcessResult): Target[] {
  const out: Target[] = [];
  /** One row per body size in `kinds`: server `id` against `ref`, goal none for a reference row. */
  const compare = (
    id: ServerId,
    ref: ServerId,
    name: string,
    goal?: number,
    kinds: readonly BodyKind[] = BODY_KINDS,
  ) => {
    // A row whose servers were not measured (BENCH_ONLY, or a runtime missing) is left out.
    if (!MEASURED.includes(id) || !MEASURED.includes(ref)) return;
    for (const kind of kinds) {
      const s = summarise(cells, id, kind, ref);
      const row: Target = { name: `${name}, ${kind}`, value: s.ratio, cpuValue: s.cpuRatio };
      if (goal !== undefined) row.goal = goal;
      out.push(row);
    }
  };
  // The adapters' targets: 0.85 of (a) on the small body, 0.8 on the large one.
  compare('node', 'minimal', 'node adapter + memoryStore / (a)', 0.85, ['small']);
  compare('node', 'minimal', 'node adapter + memoryStore / (a)', 0.8, ['large']);
  // The tenant lookup's target: a secret looked up per tenant (cached) costs at most 5 % of a static one.
  compare(
    'node',
    'node-unwatched',
    "node adapter / the same with watch: false (the watchdog's notes)",
    0.97,
  );
  compare('node-tenant', 'node', 'node adapter, tenant lookup (cached) / static secret', 0.95);
  for (const id of ['node', 'hono', 'fetch'] as const) {
    compare(id, 'octokit', `${id} adapter / (d) octokit`, 1);
  }
  // "No speed lost": this build's node adapter against another build's, same rounds.
  compare('node', 'node-baseline', "node adapter / the baseline build's node adapter", 1);
  compare('node-baseline', 'minimal', "the baseline build's node adapter / (a)");
  compare('node-baseline', 'octokit', "the baseline build's node adapter / (d) octokit");
  compare(
    'node-redis',
    'node-redis-baseline',
    "node adapter + redisStore / the baseline build's",
    1,
  );
  // The same guarantees as the build before the records: what the rest of the change costs.
  compare('node-lean', 'node-baseline', "node adapter, no records or notes / the baseline build's");
  compare(
    'node-redis-lean',
    'node-redis-baseline',
    "node adapter + redisStore, no records or notes / the baseline build's",
  );
  // Like for like: octokit's own Fetch middleware on the same server as the Fetch and Hono adapters.
  for (const id of ['hono', 'fetch'] as const) {
    compare(id, 'octokit-web', `${id} adapter / (d) octokit's Fetch middleware, same server`, 1);
  }
  // The ceiling of any adapter on @hono/node-server: (a)'s work alone there, against octokit.
  compare('hono-floor', 'octokit', "ceiling: (f) Hono route doing (a)'s work only / (d) octokit");
  compare(
    'fetch-floor',
    'octokit',
    "ceiling: (f) Fetch handler doing (a)'s work only / (d) octokit",
  );
  compare('express', 'express-hand', 'express adapter / (e) hand-written express', 0.9);
  compare('hono', 'hono-hand', 'hono adapter / (e) hand-written hono', 0.9);
  compare('fastify', 'fastify-hand', 'fastify plugin / (e) hand-written fastify', 0.9);
  compare('koa', 'koa-hand', 'koa middleware / (e) hand-written koa', 0.9);
  // The Fetch adapter against a hand-written Fetch handler on the same server, on each runtime.
  compare(
    'fetch-request',
    'fetch-hand',
    'fetch adapter / (g) hand-written Fetch, Node Request only',
    0.9,
  );
  compare('bun-fetch', 'bun-hand', 'fetch adapter / (g) hand-written Fetch, Bun.serve', 0.9);
  compare('deno-fetch', 'deno-hand', 'fetch adapter / (g) hand-written Fetch, Deno.serve', 0.9);
  // (h): the adapters' work written in a straight line. The adapter against it is what the
  // pipeline costs; it against (a) or (g), what the work itself costs.
  compare('node', 'minimal-same', 'node adapter / (h) the same work in a straight line, node:http');
  compare('minimal-same', 'minimal', 'the work itself: (h) / (a) hand-written node:http');
  const fetchServers = [
    ['fetch-request', 'fetch-same', 'fetch-hand', 'Node Request only'],
    ['bun-fetch', 'bun-same', 'bun-hand', 'Bun.serve'],
    ['deno-fetch', 'deno-same', 'deno-hand', 'Deno.serve'],
  ] as const;
  for (const [adapter, same, hand, server] of fetchServers) {
    compare(adapter, same, `fetch adapter / (h) the same work in a straight line, ${server}`);
    compare(same, hand, `the work itself: (h) / (g) hand-written Fetch, ${server}`);
  }
  compare('node-redis', 'minimal', 'node adapter + redisStore / (a)', 0.4);
  // The price of a transaction per delivery (BEGIN, lock, read, upsert, COMMIT), no goal yet.
  compare('node-postgres', 'minimal', 'node adapter + postgresStore / (a)');
  compare('node-postgres', 'node-redis', 'postgresStore / redisStore, node adapter');
  // The Postgres-only stack's HTTP side (a transaction and a job row per delivery), no goal yet.
  compare('node-pgboss', 'minimal', 'node adapter + postgresStore + pgBossInbox / (a)');
  compare('node-pgboss', 'node-inbox', 'pgBossInbox + postgresStore / bullmqInbox + redisStore');
  for (const step of inProcess.steps) {
    out.push({
      name: `handle() in process, ${step.kind}`,
      value: step.handleOpsPerSec,
      goal: step.kind === 'small' ? 45_000 : 20_000,
      unit: 'ops/s',
    });
  }
  out.push({
    name: 'memoryStore heap for 100 000 keys (MB, lower is better)',
    value: -inProcess.heap.bytes / 1e6,
    goal: -40,
    unit: 'MB',
  });
  return out;
}

function formatTargets(list: readonly Target[]): string {
  const lines = [
    '| target | goal | measured | CPU-time ratio | holds |',
    '| - | -: | -: | -: | - |',
  ];
  for (const t of list) {
    const show = (n: number) =>
      t.unit === 'MB' ? (-n).toFixed(1) : t.unit ? int(n) : n.toFixed(2);
    const goal =
      t.goal === undefined
        ? 'reference'
        : t.unit === 'MB'
          ? `< ${show(t.goal)}`
          : `>= ${show(t.goal)}`;
    const cpu = t.cpuValue === undefined ? '' : t.cpuValue.toFixed(2);
    const holds = t.goal === undefined ? '' : t.value >= t.goal ? 'yes' : '**no**';
    lines.push(`| ${t.name} | ${goal} | ${show(t.value)} | ${cpu} | ${holds} |`);
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------

async function cleanRedis(): Promise<void> {
  const { Redis } = await import('ioredis');
  const client = new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379', {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
  });
  try {
    await client.connect();
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', 'schoolhooks-bench:*', 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await client.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
}

/** Drops the tables postgresStore made for the benchmark (`schoolhooks_bench_*`). */
async function cleanPostgres(): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({
    connectionString: process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test',
  });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      "SELECT tablename AS name FROM pg_tables WHERE tablename LIKE 'schoolhooks\\_bench\\_%'",
    );
    for (const { name } of rows) await client.query(`DROP TABLE IF EXISTS "${name}"`);
    // pgBossInbox's schemas (node-pgboss), named like the tables.
    const schemas = await client.query<{ name: string }>(
      "SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE 'schoolhooks\\_bench\\_%'",
    );
    for (const { name } of schemas.rows)
      await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  } finally {
    await client.end();
  }
}

async function inProcess(): Promise<InProcessResult> {
  const script = join(built, 'in-process.mjs');
  const out = await output(
    pinned(SERVER_CORE, process.execPath, ['--expose-gc', script, '--json']),
    {},
  );
  return JSON.parse(out.trim().split('\n').pop() ?? '') as InProcessResult;
}

/** Passes over the cuts of bench/fetch-steps.ts on each runtime, every other one backwards. */
const STEP_PASSES = process.env.BENCH_QUICK === '1' ? 1 : 3;

/**
 * bench/fetch-steps.ts on Node, Bun and Deno (each found in node_modules/.bin), pinned to the
 * servers' core, one process per cut and body size: where a Fetch delivery's CPU time goes.
 */
async function fetchSteps(): Promise<FetchStepCosts[]> {
  const script = join(built, 'fetch-steps.mjs');
  const samples: FetchStepSample[] = [];
  const stepsDenoDir = mkdtempSync(join(tmpdir(), 'schoolhooks-bench-deno-'));
  try {
    for (const runtime of ['node', 'bun', 'deno'] as const) {
      if (runtime !== 'node' && missingRuntimes.includes(runtime)) continue;
      for (const kind of BODY_KINDS) {
        for (let pass = 0; pass < STEP_PASSES; pass++) {
          const cuts = pass % 2 === 0 ? CUTS : [...CUTS].reverse();
          for (const cut of cuts) {
            const { command, args, env } =
              runtime === 'node'
                ? { command: process.execPath, args: [script, kind, cut], env: {} }
                : offlineRun(runtime, script, { denoDir: stepsDenoDir, scriptArgs: [kind, cut] });
            const out = await output(pinned(SERVER_CORE, command, args), env);
            samples.push(JSON.parse(out.trim().split('\n').pop() ?? '') as FetchStepSample);
          }
        }
      }
      process.stdout.write(`  fetch steps measured on ${runtime}\n`);
    }
  } finally {
    rmSync(stepsDenoDir, { recursive: true, force: true });
  }
  return fetchStepCosts(samples);
}

/**
 * bench/entity-ab.ts (handle() with reconciliation's records and latestOnly off and on, on a
 * memoryStore) and bench/reconcile-run.ts (a run over 10 000 invoices), pinned to the servers'
 * core: their lines, under a heading.
 */
async function entityFeatures(): Promise<string> {
  const lines = [
    'What the entity features cost (bench/entity-ab.ts: CPU µs per handle(), fastest of 7 alternating rounds; in brackets, speed against plain):',
  ];
  for (const script of ['entity-ab.mjs', 'reconcile-run.mjs']) {
    const out = await output(
      pinned(SERVER_CORE, process.execPath, ['--expose-gc', join(built, script)]),
      {},
    );
    lines.push(...out.trim().split('\n'));
    if (script === 'entity-ab.mjs') {
      lines.push(
        '',
        'Reconcile runs over 10 000 paid invoices from the mock API, and the same recovery by hand (bench/reconcile-run.ts):',
      );
    }
  }
  return lines.join('\n');
}

/** What a process printed; throws if it failed. */
async function output(
  [command, args]: [string, string[]],
  env: Record<string, string>,
): Promise<string> {
  const child = spawn(command, args, {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${code}`);
  return out;
}

/**
 * Rounds `first` to `last` (excluded) of one body size, on servers started for them: every server
 * runs for all of these rounds, warmed up once, and the rounds take turns, so a slow moment of
 * the (shared) machine hits every server alike.
 */
async function measureRounds(
  loader: ChildProcess,
  kind: BodyKind,
  runTag: string,
  first: number,
  last: number,
): Promise<Cell[]> {
  const cells: Cell[] = [];
  const servers: RunningServer[] = [];
  try {
    for (const id of MEASURED) servers.push(await startServer(loader, id, kind, runTag, first));
    const sideBySide = measurementOrder(MEASURED);
    servers.sort((a, b) => sideBySide.indexOf(a.id) - sideBySide.indexOf(b.id));
    for (let rep = first; rep < last; rep++) {
      // A different order each round, so no server always runs first or last; every other
      // round backwards, so neither server of a pair is always measured first.
      const order = servers.map((_, i) => servers[(i + rep * 4) % servers.length]!);
      if (rep % 2 === 1) order.reverse();
      for (const server of order) {
        const cell = await measureCell(loader, server, kind, rep);
        cells.push(cell);
        console.log(
          `  ${kind.padEnd(5)} round ${rep + 1}/${REPS} ${server.id.padEnd(12)} ${int(cell.rps).padStart(7)} req/s ` +
            `p50 ${cell.p50Ms.toFixed(2)} ms p99 ${cell.p99Ms.toFixed(2)} ms, ` +
            `${cell.cpuUsPerRequest.toFixed(1)} µs CPU/req, core 0 ${(cell.core0Busy * 100).toFixed(0)}% busy, ` +
            `autocannon ${(cell.loaderCpuShare * 100).toFixed(0)}% of core ${LOAD_CORE}` +
            (cell.problems.length ? `  !! ${cell.problems.join('; ')}` : ''),
        );
      }
    }
  } finally {
    for (const server of servers) await stop(server.child);
  }
  return cells;
}

async function main(): Promise<void> {
  const startedAt = Date.now();
  const runTag = Math.random().toString(36).slice(2, 10);
  console.log(
    `schoolhooks bench: Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ` +
      `${hasTaskset() ? `servers pinned to core ${SERVER_CORE}, autocannon to core ${LOAD_CORE}` : 'no taskset: nothing pinned'}, ` +
      `load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
  if (!hasTaskset()) console.log('note: no taskset here, so servers and load share every core');
  for (const runtime of missingRuntimes) {
    console.log(`note: no ${OFFLINE_BINARIES[runtime]}, so the ${runtime} rows are left out`);
  }
  await buildBench();
  const loader = start(LOAD_CORE, 'load.ts', []);
  const cells: Cell[] = [];
  let sizes: number[] = [];
  try {
    await receive(loader, 'ready');
    ({ sizes } = await ask<{ sizes: number[] }>(loader, { type: 'prepare' }, 'prepared'));
    for (const kind of BODY_KINDS) {
      for (let first = 0; first < REPS; first += RESTART_EVERY) {
        const last = Math.min(first + RESTART_EVERY, REPS);
        cells.push(...(await measureRounds(loader, kind, runTag, first, last)));
      }
    }
  } finally {
    await stop(loader);
    if (denoDir) rmSync(denoDir, { recursive: true, force: true });
    await cleanRedis().catch((error: unknown) =>
      console.warn(`could not clean Redis: ${String(error)}`),
    );
    if (MEASURED.includes('node-postgres') || MEASURED.includes('node-pgboss')) {
      await cleanPostgres().catch((error: unknown) =>
        console.warn(`could not drop the bench tables: ${String(error)}`),
      );
    }
  }

  if (process.env.BENCH_IN_PROCESS === '0') {
    // A servers-only run (while profiling): their tables, no in-process step and no targets.
    console.log(BODY_KINDS.map((kind, i) => table(cells, kind, sizes[i] ?? 0)).join('\n'));
    if (process.env.BENCH_OUT) {
      writeFileSync(process.env.BENCH_OUT, JSON.stringify({ cells, sizes }, null, 2));
    }
    return;
  }
  console.log('\nin process (pinned to core 0):');
  const local = await inProcess();
  const steps = await fetchSteps();
  const entities = await entityFeatures();

  const report = [
    '',
    ...BODY_KINDS.map((kind, i) => table(cells, kind, sizes[i] ?? 0) + '\n'),
    formatInProcess(local),
    '',
    'A Fetch delivery step by step, in process (bench/fetch-steps.ts): CPU µs per delivery of the hand-written ' +
      'Fetch handler, of the pipeline cut short after each step (in brackets: what that step added), and of fetchHandler; ' +
      'one process per cut, the median of its 5 rounds of 2 000 deliveries, then of 3 passes; no server:',
    '',
    formatFetchSteps(steps),
    '',
    entities,
    '',
    'Targets (ratios are medians of per-repetition ratios; CPU-time ratio = the same comparison on server CPU µs per request):',
    '',
    formatTargets(targets(cells, local)),
  ];
  const problems = cells.filter((c) => c.problems.length > 0);
  if (problems.length > 0) {
    report.push('', `!! ${problems.length} cells had problems: see the lines marked !! above.`);
  }
  report.push(
    '',
    `done in ${((Date.now() - startedAt) / 1000).toFixed(0)} s; load average now ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(report.join('\n'));
  if (process.env.BENCH_OUT) {
    writeFileSync(
      process.env.BENCH_OUT,
      JSON.stringify({ cells, inProcess: local, fetchSteps: steps, sizes }, null, 2),
    );
  }
}

await main();
