/**
 * Redis for the test suites: the shared server of `REDIS_URL` (default redis://127.0.0.1:6379)
 * when it answers, else a private `redis-server`; private servers a test can stop, pause and
 * restart; a small local cluster. Nothing here skips: no Redis means a failing suite.
 * @module
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/** A Redis the tests may use, and how to let go of it. */
export interface TestRedis {
  readonly url: string;
  /** Stops the server if this helper spawned it; leaves a shared one running. */
  close(): Promise<void>;
}

/**
 * `REDIS_URL` (default redis://127.0.0.1:6379) if it answers PING, else a freshly spawned
 * `redis-server` on a free port. Throws when neither is possible.
 */
export async function useTestRedis(): Promise<TestRedis> {
  const url = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
  if (await ping(url, 1000)) return { url, close: async () => {} };
  try {
    const server = await startRedisServer();
    return { url: server.url, close: () => server.close() };
  } catch (error) {
    throw new Error(
      `No Redis for the tests: ${redactUrl(url)} did not answer PING and redis-server could not ` +
        `be started (${error instanceof Error ? error.message : String(error)}). Start Redis or ` +
        'set REDIS_URL.',
      { cause: error },
    );
  }
}

/** A `redis-server` child process that a test controls. */
export interface RedisServerProcess {
  readonly port: number;
  readonly url: string;
  /** Stops it (SIGTERM; nothing is saved) and waits for the process to exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty, and waits until it answers. */
  start(): Promise<void>;
  /** Kills it (SIGKILL, even while paused): connections drop without a goodbye. */
  kill(): Promise<void>;
  /** Freezes it (SIGSTOP): connections stay open, nothing is answered. */
  pause(): void;
  /** Unfreezes it (SIGCONT). */
  resume(): void;
  /** Stops it for good and removes its directory (for `afterAll`). */
  close(): Promise<void>;
}

/** Options of {@link startRedisServer}. */
export interface RedisServerOptions {
  /** Default: a free port. */
  port?: number;
  /** More `redis-server` arguments. */
  args?: readonly string[];
  /** How long `start` waits for the server to answer. Default 5000 ms. */
  readyTimeoutMs?: number;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/**
 * Starts a private, empty `redis-server` and waits until it answers PING. Nothing is persisted
 * unless `args` turn it on (`--appendonly yes`); its directory is kept across `stop` and `start`,
 * so a persistent one comes back with its data.
 */
export async function startRedisServer(
  options: RedisServerOptions = {},
): Promise<RedisServerProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startRedisServerOnce(options);
    } catch (error) {
      // A free port can be taken between the check and the bind: try another one.
      if (options.port !== undefined || attempt === 3) throw error;
    }
  }
}

async function startRedisServerOnce({
  port,
  args = [],
  readyTimeoutMs = 5000,
}: RedisServerOptions): Promise<RedisServerProcess> {
  const chosen = port ?? (await freePort());
  const dir = await mkdtemp(join(tmpdir(), 'schoolhooks-redis-'));
  const url = `redis://127.0.0.1:${chosen}`;
  let child: ChildProcess | undefined;

  const server: RedisServerProcess = {
    port: chosen,
    url,
    async start() {
      if (child) return;
      child = await spawnRedis([
        '--port',
        String(chosen),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        ...args,
      ]);
      if (!(await waitForPing(url, readyTimeoutMs, child.pid))) {
        await server.stop();
        throw new Error(
          `redis-server on port ${chosen} did not answer PING within ${readyTimeoutMs} ms ` +
            '(or the port is taken)',
        );
      }
    },
    async stop() {
      const running = child;
      child = undefined;
      if (running) await terminate(running);
    },
    async kill() {
      const running = child;
      child = undefined;
      if (running) await terminate(running, 'SIGKILL');
    },
    pause() {
      child?.kill('SIGSTOP');
    },
    resume() {
      child?.kill('SIGCONT');
    },
    async close() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
  try {
    await server.start();
  } catch (error) {
    await server.close();
    throw error;
  }
  return server;
}

/** A local Redis Cluster of three masters (no replicas). */
export interface RedisClusterProcess {
  readonly nodes: readonly { host: string; port: number }[];
  stop(): Promise<void>;
}

/**
 * Starts three `redis-server --cluster-enabled yes` nodes on free ports, joins them with
 * `redis-cli --cluster create` and waits for `cluster_state:ok` (about 2–3 s).
 */
export async function startRedisCluster(): Promise<RedisClusterProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startRedisClusterOnce();
    } catch (error) {
      // A free port can be taken between the check and the bind: try other ones.
      if (attempt === 3) throw error;
    }
  }
}

async function startRedisClusterOnce(): Promise<RedisClusterProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'schoolhooks-cluster-'));
  const children: ChildProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(children.map((child) => terminate(child)));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const ports: number[] = [];
    // The cluster bus listens on port + 10000: both must be free.
    while (ports.length < 3) {
      const port = await freePort();
      if (port < 55_000 && !ports.includes(port) && (await isFree(port + 10_000))) ports.push(port);
    }
    for (const port of ports) {
      children.push(
        await spawnRedis([
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(dir, `nodes-${port}.conf`),
          '--cluster-node-timeout',
          '2000',
          '--save',
          '',
          '--appendonly',
          'no',
          '--dir',
          dir,
        ]),
      );
    }
    for (const [index, port] of ports.entries()) {
      if (!(await waitForPing(`redis://127.0.0.1:${port}`, 5000, children[index]?.pid))) {
        throw new Error(`cluster node on port ${port} did not answer PING`);
      }
    }
    await run('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((port) => `127.0.0.1:${port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    const deadline = Date.now() + 10_000;
    for (const port of ports) {
      const node = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
      try {
        while (!(await node.cluster('INFO')).includes('cluster_state:ok')) {
          if (Date.now() > deadline) throw new Error('the cluster did not reach cluster_state:ok');
          await sleep(100);
        }
      } finally {
        node.disconnect();
      }
    }
    return { nodes: ports.map((port) => ({ host: '127.0.0.1', port })), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** True when a Redis at `url` answers PING within `timeoutMs`. */
export async function ping(url: string, timeoutMs: number): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port'));
      });
    });
  });
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function waitForPing(url: string, timeoutMs: number, pid?: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    // Each try may take what is left: on a busy machine this process's timers run late, and a
    // short connect timeout would fire before the connection it times is even looked at.
    if (await ping(url, Math.max(200, deadline - Date.now()))) {
      return pid === undefined || (await servedBy(url, pid));
    }
    await sleep(25);
  }
  return false;
}

/**
 * True when the Redis answering at `url` is the process `pid`. Ports are picked free but not
 * reserved: another suite's server can take one first, and a PING alone would then be answered
 * by the wrong server (a cluster node answering MOVED, say).
 */
async function servedBy(url: string, pid: number): Promise<boolean> {
  const client = new Redis(url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    const info = await client.info('server');
    return new RegExp(`^process_id:${pid}\\r?$`, 'm').test(info);
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** Spawns redis-server and resolves once the process is running (not yet answering). */
async function spawnRedis(args: readonly string[]): Promise<ChildProcess> {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (error) =>
      reject(new Error(`cannot run redis-server: ${error.message}`, { cause: error })),
    );
  });
  child.once('exit', (code) => {
    live.delete(child);
    if (code && stderr) process.stderr.write(`redis-server exited with ${code}: ${stderr}\n`);
  });
  live.add(child);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // A last resort if a suite dies before its afterAll: never leave a server behind.
    process.once('exit', () => {
      for (const running of live) running.kill('SIGKILL');
    });
  }
  return child;
}

/**
 * SIGTERM (after SIGCONT, in case it is paused), then SIGKILL after 3 s; or SIGKILL at once.
 * Waits for the exit.
 */
async function terminate(
  child: ChildProcess,
  signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM',
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (signal === 'SIGTERM') child.kill('SIGCONT');
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}

function run(command: string, args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} exited with ${code}: ${output}`)),
    );
  });
}

function redactUrl(url: string): string {
  return url.replace(/\/\/[^/@\s]*@/, '//***@');
}

/**
 * The keys matching `pattern`, read with SCAN rather than KEYS: the suites share one server, and
 * KEYS holds it for as long as it walks every key (about a second at a million keys), so the
 * other suites' calls time out meanwhile. SCAN may give a key twice; each is listed once.
 */
export async function keysMatching(client: Redis, pattern: string): Promise<string[]> {
  const keys = new Set<string>();
  for await (const batch of client.scanStream({ match: pattern, count: 1000 })) {
    for (const key of batch as string[]) keys.add(key);
  }
  return [...keys];
}
