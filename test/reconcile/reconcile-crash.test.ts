/**
 * The reconcile crash test: 5 000 paid invoices on the mock API (real HTTP), a reconciler on
 * `redisStore` (real Redis) in a child process whose handler "grants" each invoice it recovers by
 * appending `<invoiceId> <pid>` to a file outside Redis. The child is killed with SIGKILL at
 * random points of its work 10 times, a new run starting after each kill, and runs go on until
 * one reports `complete: true`.
 *
 * What must hold: once a run reports `complete`, every invoice was granted; an invoice is granted
 * again only when the process that granted it died (or said it could not record it) before its
 * record was written; no invoice a run counted as handled is granted again; a run is `complete`
 * only when nothing is failed, in flight or unrecorded. And, in process: an invoice that leaves
 * the paid list between two pages of a run moves no other one out of the run.
 */

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, open, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSchoolApi } from '../../src/api/index.js';
import { createReconciler } from '../../src/reconcile/index.js';
import { redisStore } from '../../src/stores/redis.js';
import type { MockInvoice } from '../../src/testing/mock-lists.js';
import { createMockSchoolApi, type MockSchoolApi } from '../../src/testing/mock-school-api.js';
import { bundleScript, type BundledScript } from '../helpers/bundle.js';
import { sleep, useTestRedis, type TestRedis } from '../helpers/redis.js';
import { seededRandom } from '../helpers/seeded-random.js';
import { ago, counter, DAY, HOUR, invoice, NOW, now, PATHS } from './helpers.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/reconciler-process.ts', import.meta.url));
/** Where the kills fall: `CRASH_SEED=7 npx vitest run test/reconcile/reconcile-crash.test.ts`. */
const SEED = Number(process.env['CRASH_SEED'] ?? 20);
const INVOICES = 5000;
const KILLS = 10;
/**
 * Each claim's lease in the child (its store sets it: a reconciler's own is at least 2 minutes),
 * at least twice its handlerTimeoutMs, as a reconciler's is. A killed run's invoice stays held
 * that long: the runs after the last kill report it in flight until then.
 */
const LEASE_MS = 10_000;
const HANDLER_TIMEOUT_MS = 2000;
const IN_FLIGHT_WAIT_MS = 500;
/** The handler's wait before its grant: most kills find a handler there, its claim held. */
const GRANT_DELAY_MS = 1;
/** Far more runs than it takes (about 10 after the last kill, one a second until its lease ends). */
const MAX_RUNS = 60;
/** The run's window: since 2 days before NOW, to NOW less minAgeMs (5 h 1 min). */
const SINCE = NOW - 2 * DAY;
const API = { apiKey: 'sk_live_Cr4shR3c0nc1le7e9a1c3e5b7d9f1a3c5', sellerId: 3, schoolId: 4 };

/** `count` paid invoices, oldest first, evenly apart from 30 h to 6 h before NOW: in the window. */
function invoicesOverADay(count: number): MockInvoice[] {
  const step = DAY / count;
  return Array.from({ length: count }, (_, i) => invoice(i + 1, ago(6 * HOUR + DAY - i * step)));
}

/** What a child prints at the end of its run. */
interface RunReport {
  readonly checked: number;
  readonly handled: number;
  readonly recovered: number;
  readonly failed: readonly { id: string; code: string }[];
  readonly inFlight: readonly { id: string }[];
  readonly unrecorded: readonly { id: string; code: string }[];
  readonly complete: boolean;
}

/** One run: a child process, killed or ended with its report. */
interface Run {
  readonly pid: number;
  /** How many grants the file held when it started: those after are its own and later runs'. */
  readonly firstGrant: number;
  readonly killed: boolean;
  readonly report: RunReport | undefined;
  readonly startedAt: number;
  readonly endedAt: number;
}

/** One line of the grants file. */
interface Grant {
  readonly id: number;
  readonly pid: number;
}

/** The grants file as the children append to it, read as it grows. */
class GrantsLog {
  readonly grants: Grant[] = [];
  readonly #file: FileHandle;
  #position = 0;
  #partial = '';

  constructor(file: FileHandle) {
    this.#file = file;
  }

  /** Reads what was appended since the last read. */
  async read(): Promise<readonly Grant[]> {
    const { size } = await this.#file.stat();
    if (size > this.#position) {
      const buffer = Buffer.alloc(size - this.#position);
      const { bytesRead } = await this.#file.read(buffer, 0, buffer.length, this.#position);
      this.#position += bytesRead;
      const lines = (this.#partial + buffer.toString('utf8', 0, bytesRead)).split('\n');
      this.#partial = lines.pop() ?? '';
      for (const line of lines) {
        const [id, pid] = line.split(' ').map(Number);
        this.grants.push({ id: id!, pid: pid! });
      }
    }
    return this.grants;
  }
}

let redis: TestRedis;
let client: Redis;
let script: BundledScript;
let dir: string;
const prefix = `sh-reconcile-crash-${randomUUID()}:`;

beforeAll(async () => {
  redis = await useTestRedis();
  client = new Redis(redis.url);
  script = await bundleScript(FIXTURE);
  dir = await mkdtemp(join(tmpdir(), 'schoolhooks-reconcile-crash-'));
}, 60_000);

afterAll(async () => {
  if (client) {
    for await (const keys of client.scanStream({ match: `${prefix}*`, count: 1000 })) {
      if ((keys as string[]).length > 0) await client.unlink(...(keys as string[]));
    }
    client.disconnect();
  }
  await redis?.close();
  await script?.remove();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a reconciler killed mid-run, on redisStore', () => {
  it(`grants every one of ${INVOICES} invoices by the run that reports complete, through ${KILLS} kills`, async () => {
    const invoices = invoicesOverADay(INVOICES);
    const ids = invoices.map((item) => item.invoiceId!);
    const mock = await createMockSchoolApi({ ...API, lists: { invoices } });
    const grantsFile = join(dir, 'grants.txt');
    await writeFile(grantsFile, '');
    const file = await open(grantsFile, 'r');
    const log = new GrantsLog(file);
    const random = seededRandom(SEED);
    // The kills, as how many invoices have been granted when each falls: one in each tenth of
    // the work, at a random point of it.
    const killAt = Array.from({ length: KILLS }, (_, i) =>
      Math.floor(50 + (4800 * (i + 0.1 + 0.8 * random())) / KILLS),
    );
    const runs: Run[] = [];
    const startedAt = Date.now();
    try {
      while (runs.at(-1)?.report?.complete !== true) {
        if (runs.length === MAX_RUNS) throw new Error(`no run was complete in ${MAX_RUNS} runs`);
        const granted = new Set((await log.read()).map((grant) => grant.id)).size;
        const target = killAt[runs.filter((run) => run.killed).length];
        runs.push(
          await startRun(mock, grantsFile, log, {
            killAfter: target === undefined ? undefined : Math.max(1, target - granted),
            jitterMs: random() * 3,
          }),
        );
      }
      await log.read();
    } finally {
      await file.close();
      await mock.close();
    }
    const tookMs = Date.now() - startedAt;
    const grants = log.grants;

    // Each invoice's grants, in the order they were written.
    const grantsOf = new Map<number, Grant[]>(ids.map((id) => [id, []]));
    for (const grant of grants) grantsOf.get(grant.id)?.push(grant);
    const killed = runs.filter((run) => run.killed);
    const reported = runs.filter((run) => run.report !== undefined);
    const complete = runs.at(-1)!;
    const lastGrantOf = new Map<number, Grant>();
    for (const grant of grants) lastGrantOf.set(grant.pid, grant);
    // What a run said it could not record, or whose handler it gave up on: it may be granted again.
    const unsure = new Set(
      reported.flatMap((run) =>
        [...run.report!.unrecorded, ...run.report!.failed].map(({ id }) => `${run.pid} ${id}`),
      ),
    );
    const killedPids = new Set(killed.map((run) => run.pid));
    /** A grant that may be followed by another: its process died after it, or said so. */
    const mayRepeat = (grant: Grant): boolean =>
      (killedPids.has(grant.pid) && lastGrantOf.get(grant.pid) === grant) ||
      unsure.has(`${grant.pid} ${grant.id}`);
    const ungranted = ids.filter((id) => grantsOf.get(id)!.length === 0);
    const twice = ids.filter((id) => grantsOf.get(id)!.length > 1);
    const unexplained = twice.filter((id) => !grantsOf.get(id)!.slice(0, -1).every(mayRepeat));
    const histogram: Record<number, number> = {};
    for (const list of grantsOf.values()) {
      histogram[list.length] = (histogram[list.length] ?? 0) + 1;
    }
    const lastKill = killed.at(-1)?.endedAt ?? startedAt;
    console.info(
      [
        `reconcile crash test (seed ${SEED}): ${INVOICES} invoices, ${runs.length} runs: ` +
          `${killed.length} killed, ${reported.length - 1} reported incomplete, then one complete`,
        `kills after ${killed.map((run) => grants.filter((g) => g.pid === run.pid).length).join(', ')} ` +
          'grants of their run',
        `reports: ${reported
          .map(
            ({ report: r }) =>
              `${r!.handled}h/${r!.recovered}r/${r!.inFlight.length}i/${r!.failed.length}f/` +
              `${r!.unrecorded.length}u${r!.complete ? ' complete' : ''}`,
          )
          .join(', ')} (handled/recovered/inFlight/failed/unrecorded)`,
        `grants: ${grants.length} of ${new Set(grants.map((g) => g.id)).size} invoices; per ` +
          `invoice ${JSON.stringify(histogram)}; granted more than once: ${twice.length} (after ` +
          `a kill between the grant and its record, or a report saying so: ` +
          `${twice.length - unexplained.length}; otherwise: ${unexplained.length})`,
        `time: ${tookMs} ms in all, the complete run ${complete.endedAt - complete.startedAt} ms, ` +
          `${complete.endedAt - lastKill} ms after the last kill`,
      ].join('\n'),
    );

    expect(killed).toHaveLength(KILLS);
    // The run that says complete is, and its report adds up.
    expect(complete.report).toMatchObject({
      checked: INVOICES,
      failed: [],
      inFlight: [],
      unrecorded: [],
      complete: true,
    });
    expect(complete.report!.handled + complete.report!.recovered).toBe(INVOICES);
    // Every invoice granted by then.
    expect(ungranted).toEqual([]);
    // No run said complete with anything left, nor left something out of complete.
    for (const { report } of reported) {
      const left = report!.failed.length + report!.inFlight.length + report!.unrecorded.length;
      expect(report!.complete, JSON.stringify(report)).toBe(left === 0);
    }
    // Kills were felt: a run after a kill found the killed run's invoice still held.
    expect(reported.some((run) => run.report!.inFlight.length > 0)).toBe(true);
    // An invoice granted more than once: each grant but its last was the last grant of a process
    // that was killed (before its record was written), or one its run reported not recorded.
    expect(unexplained).toEqual([]);
    for (const run of reported) {
      const { report } = run;
      const own = grants.filter((grant) => grant.pid === run.pid).map((grant) => grant.id);
      const notHandled = new Set([
        ...own,
        ...[...report!.failed, ...report!.inFlight, ...report!.unrecorded].map(({ id }) =>
          Number(id),
        ),
      ]);
      // What it counted handled: every invoice it neither granted nor left open.
      const handled = ids.filter((id) => !notHandled.has(id));
      expect(report!.checked).toBe(INVOICES);
      expect(handled).toHaveLength(report!.handled);
      expect(new Set(own).size).toBe(own.length);
      // None of them was granted again: not by it, not by any later run.
      const grantedSince = new Set(grants.slice(run.firstGrant).map((grant) => grant.id));
      expect(handled.filter((id) => grantedSince.has(id))).toEqual([]);
    }
  }, 180_000);
});

describe('a reconciler while the paid list changes', () => {
  it('recovers every other invoice once when one leaves the paid list between two pages', async () => {
    const invoices = invoicesOverADay(3000);
    const mock = await createMockSchoolApi({ ...API, lists: { invoices } });
    // One of the oldest: by offset it is on the first page, and its going would move the first
    // item of every later page onto the page before, already read.
    const leaving = 500;
    let listRequests = 0;
    let removed = 0;
    const fetchThenDrop: typeof fetch = async (input, init) => {
      const answer = await fetch(input, init);
      const url = input instanceof Request ? input.url : String(input);
      if (url.includes(`${PATHS.invoice}?`) && ++listRequests === 2) {
        removed = mock.removeListItems('invoices', (item) => item['invoiceId'] === leaving);
      }
      return answer;
    };
    const granted = counter();
    try {
      const api = createSchoolApi({ baseUrl: mock.url, ...API, fetch: fetchThenDrop });
      const store = redisStore({ client, prefix: `${prefix}list-changes:` });
      const reconciler = createReconciler({ api, store, now }).on('invoice', async (item) => {
        granted.count(String(item.invoiceId));
        await new Promise((resolve) => setImmediate(resolve));
      });
      const report = await reconciler.run({ since: SINCE });
      expect(removed).toBe(1);
      expect(listRequests).toBeGreaterThan(2);
      const others = invoices.map((item) => item.invoiceId!).filter((id) => id !== leaving);
      expect(others.filter((id) => granted.calls.get(String(id)) !== 1)).toEqual([]);
      expect(granted.calls.get(String(leaving)) ?? 0).toBeLessThanOrEqual(1);
      expect(report).toMatchObject({
        checked: { invoice: granted.calls.size },
        handled: 0,
        recovered: granted.calls.size,
        complete: true,
      });
    } finally {
      await mock.close();
    }
  }, 60_000);
});

/**
 * Starts a run in a child process and waits for its end: its report, or, with `killAfter`, a
 * SIGKILL `jitterMs` after it has granted that many invoices.
 */
async function startRun(
  mock: MockSchoolApi,
  grantsFile: string,
  log: GrantsLog,
  { killAfter, jitterMs }: { killAfter: number | undefined; jitterMs: number },
): Promise<Run> {
  const firstGrant = (await log.read()).length;
  const startedAt = Date.now();
  const child = spawn(process.execPath, [script.file], {
    env: {
      ...process.env,
      REDIS_URL: redis.url,
      PREFIX: prefix,
      API_URL: mock.url,
      API_KEY: API.apiKey,
      SELLER_ID: String(API.sellerId),
      SCHOOL_ID: String(API.schoolId),
      GRANTS_FILE: grantsFile,
      NOW: String(NOW),
      SINCE: String(SINCE),
      HANDLER_TIMEOUT_MS: String(HANDLER_TIMEOUT_MS),
      LEASE_MS: String(LEASE_MS),
      IN_FLIGHT_WAIT_MS: String(IN_FLIGHT_WAIT_MS),
      GRANT_DELAY_MS: String(GRANT_DELAY_MS),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  if (killAfter !== undefined) {
    while (!exited) {
      if ((await log.read()).length - firstGrant >= killAfter) {
        await sleep(jitterMs);
        child.kill('SIGKILL');
        break;
      }
      await sleep(2);
    }
  }
  await exit;
  const endedAt = Date.now();
  const pid = child.pid!;
  if (child.signalCode === 'SIGKILL') {
    return { pid, firstGrant, killed: true, report: undefined, startedAt, endedAt };
  }
  const last = stdout.trim().split('\n').at(-1);
  if (child.exitCode !== 0 || !last?.startsWith('{')) {
    throw new Error(`run ${pid} ended with ${child.exitCode} and no report: ${stderr}`);
  }
  const report = JSON.parse(last) as RunReport;
  return { pid, firstGrant, killed: false, report, startedAt, endedAt };
}
