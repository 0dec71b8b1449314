/**
 * The measures the bench processes share: CPU time (this process's, and the Postgres server's
 * when it runs on this machine), the median, and a command pinned to one core.
 * @module
 */

import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import process from 'node:process';

/**
 * CPU time (user + system) of this process since `since`, in µs. Every figure is CPU time per
 * operation, not wall time: the machines this runs on are shared, and a process waiting for the
 * core is not slower code. On an idle core the two agree.
 */
export function cpuMicros(since: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(since);
  return user + system;
}

/** The median of `values` (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

let tasksetRuns: boolean | undefined;

/** Whether `taskset` runs here (Linux with util-linux): without it nothing is pinned. Asked once. */
export function hasTaskset(): boolean {
  tasksetRuns ??= spawnSync('taskset', ['-c', '0', 'true']).status === 0;
  return tasksetRuns;
}

/** `command` and its `args`, pinned to `core` when taskset exists. */
export function pinned(core: number, command: string, args: string[]): [string, string[]] {
  return hasTaskset() ? ['taskset', ['-c', String(core), command, ...args]] : [command, args];
}

/** Linux's clock ticks per second, in which /proc/<pid>/stat counts CPU time. */
const TICKS_PER_SECOND = 100;

/** The CPU time of every `postgres` process of this machine so far, in ms (0 off Linux). */
export function postgresCpuMs(): number {
  let ms = 0;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return 0;
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (!name.startsWith('postgres')) continue;
      // utime and stime: the 14th and 15th fields, the 12th and 13th after the name.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ms += ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
    } catch {
      // A process that ended meanwhile.
    }
  }
  return ms;
}
