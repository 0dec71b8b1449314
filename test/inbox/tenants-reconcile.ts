/**
 * A reconciler of 50 schools scheduled on one inbox by two worker processes
 * (fixtures/tenants-reconcile-process.ts), each school a mock API of its own with its own key:
 * what both inbox tests check, from the events the processes write (one job per tick each test
 * reads from the inbox's jobs). Runs that never overlap, one school at a time across the two processes (each school's turn, and its
 * handlers, apart from every other school's; a school's own handlers run up to 4 at once, as a
 * run recovers a page's entities), and each school's missing invoices recovered once, under its
 * tenant.
 * @module
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, vi } from 'vitest';
import type { IdempotencyStore } from '../../src/stores/types.js';
import { bundleScript } from '../helpers/bundle.js';
import { NOW } from '../reconcile/helpers.js';
import {
  closeSchools,
  missingOf,
  recordWebhooks,
  startSchools,
  type MockSchool,
} from '../reconcile/schools.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/tenants-reconcile-process.ts', import.meta.url));
export const SCHOOLS = 50;
/** Each school: 4 paid invoices, 2 of them recorded by a webhook. */
const INVOICES = 4;
const RECORDED = 2;
/** A tick: far longer than a run of 50 schools (about 0.3 s after the first), so runs never queue. */
export const EVERY_MS = 2000;
const HANDLER_MS = 3;
/** Runs to see before the processes are stopped. */
const RUNS = 3;

/** A school's turn in one run: from its `api` call to the next school's (or the run's end). */
interface Turn {
  readonly tenant: string;
  readonly pid: number;
  readonly from: number;
  to: number;
}

/** One run, in the process that made it: its schools' turns, and its summary once it ended. */
interface Run {
  readonly pid: number;
  readonly turns: Turn[];
  end: number | undefined;
  summary: Record<string, unknown> | undefined;
}

/** What one scenario saw: the runs (in the order they started) and the grants. */
export interface TenantsScenario {
  readonly runs: readonly Run[];
  readonly grants: readonly Grant[];
  readonly tookMs: number;
}

interface Grant {
  readonly tenant: string;
  readonly id: number;
  readonly pid: number;
  readonly from: number;
  readonly to: number;
}

type Event =
  | { type: 'tenant'; tenant: string; pid: number; at: number }
  | ({ type: 'grant' } & Grant)
  | { type: 'report'; pid: number; at: number; summary: Record<string, unknown> }
  | { type: 'error'; pid: number; at: number; message: string };

/**
 * Start the schools, record what their webhooks handled in `store`, run two worker processes
 * with `env` until they made {@link RUNS} runs and every missing invoice was granted, stop them,
 * and check what every inbox must show. Resolves to what was seen, for the inbox's own checks.
 */
export async function runTenantsScenario(
  store: IdempotencyStore,
  env: Record<string, string>,
): Promise<TenantsScenario> {
  const schools = await startSchools(SCHOOLS, { invoices: INVOICES, recorded: RECORDED });
  const dir = await mkdtemp(join(tmpdir(), 'schoolhooks-tenants-reconcile-'));
  const script = await bundleScript(FIXTURE);
  const children: ChildProcess[] = [];
  try {
    await recordWebhooks(store, schools);
    const eventsFile = join(dir, 'events.jsonl');
    await writeFile(eventsFile, '');
    const startedAt = Date.now();
    for (let i = 0; i < 2; i++) {
      children.push(startWorker(script.file, { ...env, ...envOf(schools, eventsFile) }));
    }
    const events = await vi.waitFor(
      async () => {
        const read = await readEvents(eventsFile);
        expect(read.filter((event) => event.type === 'error')).toEqual([]);
        expect(read.filter((event) => event.type === 'report').length).toBeGreaterThanOrEqual(RUNS);
        return read;
      },
      { timeout: 60_000, interval: 100 },
    );
    const tookMs = Date.now() - startedAt;
    await Promise.all(children.map(stop));
    const scenario = { ...scenarioOf(await readEvents(eventsFile)), tookMs };
    expect(events.length).toBeGreaterThan(0);
    checkScenario(scenario, schools);
    return scenario;
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await closeSchools(schools);
    await script.remove();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The environment that tells a worker its schools and where to write its events. */
function envOf(schools: readonly MockSchool[], eventsFile: string): Record<string, string> {
  return {
    EVENTS_FILE: eventsFile,
    SCHOOLS: JSON.stringify(schools.map(({ tenant, credentials }) => ({ tenant, ...credentials }))),
    NOW: String(NOW),
    EVERY_MS: String(EVERY_MS),
    HANDLER_MS: String(HANDLER_MS),
  };
}

function startWorker(file: string, env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [file], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** SIGTERM, and wait for the exit (a run in progress is aborted by close()). */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

async function readEvents(file: string): Promise<Event[]> {
  const text = await readFile(file, 'utf8');
  // A line still being written is left for the next read.
  return text
    .split('\n')
    .slice(0, -1)
    .map((line) => JSON.parse(line) as Event);
}

/** The runs of each process, from its events in the order it wrote them. */
function scenarioOf(events: readonly Event[]): Omit<TenantsScenario, 'tookMs'> {
  const current = new Map<number, Run>();
  const runs: Run[] = [];
  const grants: Grant[] = [];
  for (const event of events) {
    if (event.type === 'grant') grants.push(event);
    if (event.type !== 'tenant' && event.type !== 'report') continue;
    let run = current.get(event.pid);
    if (run === undefined) {
      run = { pid: event.pid, turns: [], end: undefined, summary: undefined };
      current.set(event.pid, run);
      runs.push(run);
    }
    const last = run.turns.at(-1);
    if (last !== undefined) last.to = event.at;
    if (event.type === 'tenant') {
      run.turns.push({ tenant: event.tenant, pid: event.pid, from: event.at, to: Infinity });
    } else {
      run.end = event.at;
      run.summary = event.summary;
      current.delete(event.pid);
    }
  }
  runs.sort((a, b) => a.turns[0]!.from - b.turns[0]!.from);
  return { runs, grants };
}

/** What every inbox must show (see the module's comment). */
function checkScenario(
  { runs, grants }: Omit<TenantsScenario, 'tookMs'>,
  schools: readonly MockSchool[],
): void {
  const tenants = schools.map((school) => school.tenant);
  // Each missing invoice granted once, under its own school; none of those a webhook recorded.
  expect(grants.map(({ tenant, id }) => `${tenant} ${id}`).sort()).toEqual(missingOf(schools));
  const ended = runs.filter((run) => run.summary !== undefined);
  expect(ended.length).toBeGreaterThanOrEqual(RUNS);
  for (const run of ended) {
    // Every school, in turn, in the order tenants() gave them.
    expect(run.turns.map((turn) => turn.tenant)).toEqual(tenants);
    expect(run.summary).toMatchObject({ tenants: SCHOOLS, tenantErrors: 0, complete: true });
  }
  expect(ended.map((run) => run.summary!['recovered'])).toEqual([
    SCHOOLS * (INVOICES - RECORDED),
    ...ended.slice(1).map(() => 0),
  ]);
  // One school at a time across both processes: no two turns overlap, nor two schools' handlers
  // (a school's own run up to 4 at once: a run recovers a page's entities together).
  const turns = runs.flatMap((run) => run.turns).sort((a, b) => a.from - b.from);
  expect(overlaps(turns)).toEqual([]);
  expect(overlaps(handlerSpans(grants))).toEqual([]);
  expect(mostAtOnce(grants)).toBeLessThanOrEqual(4);
  // Each grant in its school's turn, in the process that ran it.
  for (const grant of grants) {
    const turn = turns.find(
      (t) => t.tenant === grant.tenant && t.pid === grant.pid && t.from <= grant.from,
    );
    expect(turn && grant.to <= turn.to).toBe(true);
  }
  // One run per tick is read from the runs' jobs, which name their tick (each inbox's test): a
  // run's first turn cannot tell it, as a start-up run may begin just after its tick ends.
}

/** From the first of a school's handlers (in one process) to the end of its last, by start. */
function handlerSpans(
  grants: readonly Grant[],
): { tenant: string; pid: number; from: number; to: number }[] {
  const spans = new Map<string, { tenant: string; pid: number; from: number; to: number }>();
  for (const { tenant, pid, from, to } of grants) {
    const key = `${tenant} ${pid}`;
    const span = spans.get(key);
    if (span === undefined) spans.set(key, { tenant, pid, from, to });
    else
      spans.set(key, { tenant, pid, from: Math.min(span.from, from), to: Math.max(span.to, to) });
  }
  return [...spans.values()].sort((a, b) => a.from - b.from);
}

/** The most handlers running at one moment. */
function mostAtOnce(grants: readonly Grant[]): number {
  // Ends before starts at one ms: a handler that ended as another began did not overlap it.
  const edges = grants
    .flatMap(({ from, to }) => [
      { at: from, step: 1 },
      { at: to, step: -1 },
    ])
    .sort((a, b) => a.at - b.at || a.step - b.step);
  let running = 0;
  let most = 0;
  for (const { step } of edges) most = Math.max(most, (running += step));
  return most;
}

/** Each span that starts before the one before it ended, named by its tenant and process. */
function overlaps(
  spans: readonly { tenant: string; pid: number; from: number; to: number }[],
): string[] {
  return spans.slice(1).flatMap((span, i) => {
    const before = spans[i]!;
    return span.from < before.to
      ? [`${before.tenant} (${before.pid}) and ${span.tenant} (${span.pid})`]
      : [];
  });
}
